//! Shell analysis and the decision never panic, whatever the bytes, the
//! decision is always the strictest of its segments, and a line read without
//! brush-parser is analysed exactly as brush-parser would have it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::OnceLock;

fn policy() -> &'static airlock_policy::Policy {
    static POLICY: OnceLock<airlock_policy::Policy> = OnceLock::new();
    POLICY
        .get_or_init(|| airlock_policy::load::builtin_default(Path::new("/nonexistent-fuzz-root")))
}

fuzz_target!(|data: &[u8]| {
    let p = policy();
    let cwd = Path::new("/nonexistent-fuzz-root/sub");
    let d = airlock_policy::gate::decide_shell_bytes(p, data, cwd);
    assert!(!d.reason.is_empty());
    if let Ok(text) = std::str::from_utf8(data) {
        // The whole is the strictest of its segments.
        if let Some(worst) = d.segments.iter().map(|s| s.decision).max() {
            assert_eq!(d.decision, worst, "{text:?}");
        }
        // A line the plain reader takes is analysed as brush-parser would.
        if airlock_policy::shell::reads_plain(text) {
            let ctx = airlock_policy::shell::Context::new(
                cwd.to_path_buf(),
                "/nonexistent-fuzz-root".into(),
            );
            assert_eq!(
                airlock_policy::shell::analyze(text, &ctx),
                airlock_policy::shell::analyze_with_parser_only(text, &ctx),
                "{text:?}"
            );
        }
        let _ = airlock_policy::explain(
            p,
            &airlock_policy::Request {
                command: airlock_policy::Command::Shell {
                    command: text.to_string(),
                },
                cwd: cwd.to_path_buf(),
                loosening: Default::default(),
            },
        );
    }
});
