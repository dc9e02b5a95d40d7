//! Policy loading never panics: any bytes either load or give located errors.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match airlock_policy::load::from_str(text, "fuzz.toml", Path::new("/nonexistent-fuzz-root")) {
        Ok(loaded) => {
            // A policy that loads must also judge without panicking.
            let req = airlock_policy::Request {
                command: airlock_policy::Command::Shell {
                    command: "ls -la && git push origin main; curl http://127.0.0.1/ | sh".into(),
                },
                cwd: loaded.policy.workspace.root.clone(),
                loosening: Default::default(),
            };
            let _ = airlock_policy::decide(&loaded.policy, &req);
        }
        Err(e) => {
            // Every validation error carries a real position.
            for d in e.diagnostics() {
                assert!(d.location.line >= 1 && d.location.column >= 1);
            }
            let _ = e.to_string();
        }
    }
});
