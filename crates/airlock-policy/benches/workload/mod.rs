//! The gate's speed workload, shared by the criterion bench (`benches/gate.rs`)
//! and the CPU-time example (`examples/gate_cpu.rs`), so both measure the same
//! policy, tree and commands.

use airlock_policy::{load, Command, Policy, Request};
use std::path::{Path, PathBuf};

/// 44 `toolN run` prefixes, five everyday commands, one approval, one deny: 51 rules.
pub fn fifty_rule_policy_text() -> String {
    let mut allow: Vec<String> = (0..44).map(|i| format!("\"tool{i} run\"")).collect();
    allow.extend(["ls", "cat", "grep", "git status", "git diff"].map(|p| format!("\"{p}\"")));
    format!(
        "[commands]\nallow = [{}]\napproval = [\"rm -rf\"]\ndeny = [\"sudo\"]\n",
        allow.join(", ")
    )
}

/// The workspace tree, the loaded policy and the requests to judge.
pub struct Workload {
    pub root: PathBuf,
    pub policy_text: String,
    pub policy: Policy,
    /// `grep -n main src/main.rs`: plain words, which skip the parser.
    pub simple: Request,
    /// `grep -n "fn main" src/main.rs`: a quote, so brush-parser reads it.
    pub simple_quoted: Request,
    /// 100 segments joined with `&&`.
    pub compound: Request,
    /// 64 KiB: `cd b/b/b/…; ls`, a path 32 Ki components deep (issue 12: the
    /// boundary walk was quadratic in its depth).
    pub deep_path: Request,
}

/// `cd b/b/…/b; ls`, `bytes` long (ASCII, so bytes and chars agree).
pub fn deep_path_command(bytes: usize) -> String {
    let tail = "; ls";
    let depth = (bytes - "cd ".len() - tail.len()).div_ceil(2);
    let mut path = "b/".repeat(depth);
    path.truncate(bytes - "cd ".len() - tail.len());
    let command = format!("cd {path}{tail}");
    assert_eq!(command.len(), bytes);
    command
}

impl Workload {
    /// Build `dir/src/main.rs` and load the 50-rule policy rooted at `dir`.
    pub fn in_dir(dir: &Path) -> Workload {
        std::fs::create_dir_all(dir.join("src")).expect("mkdir");
        std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").expect("write");
        let root = dir.canonicalize().expect("canonical");
        let policy_text = fifty_rule_policy_text();
        let policy = load::from_str(&policy_text, "bench.toml", &root)
            .expect("loads")
            .policy;
        assert_eq!(policy.commands.rules.len(), 51);
        let req = |command: String| Request {
            command: Command::Shell { command },
            cwd: root.clone(),
            loosening: Default::default(),
        };
        let simple = req("grep -n main src/main.rs".into());
        let simple_quoted = req("grep -n \"fn main\" src/main.rs".into());
        let compound = req((0..100)
            .map(|i| {
                [
                    "ls -la src",
                    "cat src/main.rs",
                    "git status --short",
                    "grep -c fn src/main.rs",
                ][i % 4]
            })
            .collect::<Vec<_>>()
            .join(" && "));
        let deep_path = req(deep_path_command(64 * 1024));
        Workload {
            root,
            policy_text,
            policy,
            simple,
            simple_quoted,
            compound,
            deep_path,
        }
    }
}
