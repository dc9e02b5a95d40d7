//! Policy loading: every error names the file, line and column and says what
//! was expected.

use airlock_policy::load::{self, Diagnostic, PolicyError};
use airlock_policy::{NetworkMode, Verdict, WorkspaceMode};
use std::path::Path;

fn errors(text: &str) -> Vec<Diagnostic> {
    match load::from_str(text, "p.toml", Path::new("/")) {
        Ok(_) => panic!("expected the policy to be rejected:\n{text}"),
        Err(e) => e.diagnostics().to_vec(),
    }
}

/// The single error of a policy, as (line, column, message).
fn one(text: &str) -> (usize, usize, String) {
    let d = errors(text);
    assert_eq!(d.len(), 1, "expected one error, got {d:?}");
    (
        d[0].location.line,
        d[0].location.column,
        d[0].message.clone(),
    )
}

#[test]
fn unknown_keys_suggest_the_closest() {
    let (l, c, m) = one("[limits]\ntimeout = \"30s\"\n  tmeout = \"5s\"\n");
    assert_eq!((l, c), (3, 3));
    assert_eq!(
        m,
        "unknown key `tmeout` in [limits]; did you mean `timeout`?"
    );

    let (l, c, m) = one("[netwrk]\nmode = \"none\"\n");
    assert_eq!((l, c), (1, 2));
    assert_eq!(
        m,
        "unknown section `netwrk` at the top level; did you mean `network`?"
    );

    let (_, _, m) = one("[commands]\nzzzzzzzz = 1\n");
    assert!(
        m.starts_with(
            "unknown key `zzzzzzzz` in [commands]; expected one of: allow, approval, deny"
        ),
        "{m}"
    );
}

#[test]
fn bad_durations_and_sizes() {
    let (l, c, m) = one("[limits]\ntimeout = \"30\"\n");
    assert_eq!((l, c), (2, 11));
    assert!(m.contains("has no unit") && m.contains("\"30s\""), "{m}");

    let (l, c, m) = one("[limits]\nmemory = \"lots\"\n");
    assert_eq!((l, c), (2, 10));
    assert!(
        m.contains("`lots` is not a size") && m.contains("\"512MiB\""),
        "{m}"
    );

    let (_, _, m) = one("[limits]\noutput = \"12 parsecs\"\n");
    assert!(m.contains("unknown size unit `parsecs`"), "{m}");

    let (_, _, m) = one("[limits]\ntimeout = 30\n");
    assert!(m.contains("must be a string"), "{m}");
}

#[test]
fn impossible_limits() {
    let (l, c, m) = one("[limits]\nmemory = \"0\"\n");
    assert_eq!((l, c), (2, 10));
    assert!(m.contains("impossibly small") && m.contains("1MiB"), "{m}");

    let (l, c, m) = one("[limits]\npids = 0\n");
    assert_eq!((l, c), (2, 8));
    assert!(m.contains("`limits.pids` = 0 is impossible"), "{m}");

    let (_, _, m) = one("[limits]\ncpus = 0.0\n");
    assert!(m.contains("between 0.01 and 1024"), "{m}");

    let (_, _, m) = one("[limits]\ntimeout = \"0s\"\n");
    assert!(m.contains("must be more than 0"), "{m}");
}

#[test]
fn network_patterns() {
    let cases = [
        ("*", "allows every host"),
        ("*.com", "over-broad"),
        ("*.co.uk", "public suffix"),
        ("https://api.example.com", "drop the scheme"),
        ("", "empty pattern"),
        ("api.example.com/v1", "not a host pattern"),
        ("foo*.example.com", "may only stand alone"),
        ("api.example.com:0", "port `0`"),
    ];
    for (pattern, expected) in cases {
        let text = format!(
            "[network]\nmode = \"allowlist\"\nallow = [\"ok.example.com\", \"{pattern}\"]\n"
        );
        let (l, c, m) = one(&text);
        assert_eq!(l, 3, "{pattern}");
        assert_eq!(c, 28, "{pattern}: column of the second element");
        assert!(m.contains(expected), "{pattern}: {m}");
    }
    // A good one loads.
    let p = load::from_str(
        "[network]\nmode = \"allowlist\"\nallow = [\"*.files.example.com\", \"api.example.com:443\"]\n",
        "p.toml",
        Path::new("/"),
    )
    .expect("loads")
    .policy;
    assert_eq!(p.network.mode, NetworkMode::Allowlist);
    assert_eq!(p.network.allow.len(), 2);
}

#[test]
fn rule_examples_are_checked_and_name_the_rule() {
    let text = r#"
[[rule]]
prefix = ["git", ["push", "pull"]]
decision = "deny"
match = ["git push origin", "git status"]

[[rule]]
name = "no-force"
prefix = "rm -rf"
decision = "approval_required"
not_match = ["rm -r -f x"]
"#;
    let d = errors(text);
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!((d[0].location.line, d[0].location.column), (5, 29));
    assert_eq!(
        d[0].message,
        "rule[0]: the `match` example \"git status\" does not match the rule's prefix `git {push,pull}`"
    );
    assert_eq!(d[1].location.line, 11);
    assert!(
        d[1].message
            .starts_with("no-force: the `not_match` example \"rm -r -f x\" matches"),
        "{}",
        d[1].message
    );
}

#[test]
fn rules_need_prefix_and_decision() {
    let (l, _, m) = one("[[rule]]\nprefix = \"ls\"\n");
    assert_eq!(l, 1);
    assert_eq!(m, "rule[0] is missing `decision`");
    let (_, _, m) = one("[[rule]]\nprefix = \"ls\"\ndecision = \"approval\"\n");
    assert!(m.contains("did you mean \"approval_required\""), "{m}");
    let (_, _, m) = one("[[rule]]\nprefix = []\ndecision = \"deny\"\n");
    assert!(m.contains("`rule.prefix` is empty"), "{m}");
}

#[test]
fn one_prefix_under_two_decisions_is_a_warning() {
    let text = "[commands]\nallow = [\"ls\", \"git push\"]\napproval = [\"git push\"]\n";
    let loaded = load::from_str(text, "p.toml", Path::new("/")).expect("loads");
    assert_eq!(loaded.warnings.len(), 1);
    let w = &loaded.warnings[0];
    assert_eq!((w.location.line, w.location.column), (3, 13));
    assert!(
        w.message
            .contains("`git push` is listed under two decisions"),
        "{}",
        w.message
    );
    assert!(
        w.message.contains("approval_required, wins"),
        "{}",
        w.message
    );
    // The rule and the plain list collide too.
    let text = "[commands]\ndeny = [\"git pull\"]\n[[rule]]\nprefix = [\"git\", [\"push\", \"pull\"]]\ndecision = \"allow\"\n";
    let loaded = load::from_str(text, "p.toml", Path::new("/")).expect("loads");
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert_eq!(loaded.warnings[0].location.line, 4);
}

/// The message in full, for a plain entry spelt with extra spaces against a
/// rule whose positions each hold one word (both take the joined-words key).
#[test]
fn the_two_decisions_warning_in_full() {
    let text = "[commands]\ndeny = [\"ls\", \"git   push\"]\n[[rule]]\nprefix = [\"git\", [\"push\"]]\ndecision = \"allow\"\n";
    let loaded = load::from_str(text, "p.toml", Path::new("/")).expect("loads");
    let messages: Vec<String> = loaded.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        messages,
        ["p.toml:4:10: `git push` is listed under two decisions: allow here (rule[0]) and deny at line 2 (commands.deny[1]); the strictest, deny, wins"]
    );
}

#[test]
fn on_unknown_cannot_be_allow() {
    let (l, c, m) = one("[commands]\non_unknown = \"allow\"\n");
    assert_eq!((l, c), (2, 14));
    assert!(m.contains("cannot be \"allow\""), "{m}");
}

#[test]
fn syntax_errors_point_at_the_place() {
    let (l, c, m) = one("[limits]\ntimeout = \"30s\"\nmemory = = 1\n");
    assert_eq!(l, 3);
    assert!(c >= 8, "{c}");
    assert!(m.starts_with("not valid TOML"), "{m}");
}

#[test]
fn paths_and_env_are_checked() {
    let (_, _, m) = one("[filesystem]\nread = [\"relative/dir\"]\n");
    assert!(m.contains("must be an absolute path"), "{m}");
    let (_, _, m) = one("[filesystem]\nwrite = [\"/\"]\n");
    assert!(m.contains("whole host"), "{m}");
    let (_, _, m) = one("[workspace]\nprotect = [\"../x\"]\n");
    assert!(m.contains("without `..`"), "{m}");
    let (_, _, m) = one("[env]\npass = [\"BAD NAME\"]\n");
    assert!(m.contains("variable name or a glob"), "{m}");
    let (_, _, m) = one("[workspace]\nmode = \"readonly\"\n");
    assert!(m.contains("\"overlay\", \"ro\", \"rw\""), "{m}");
}

#[test]
fn files_missing_unreadable_or_not_utf8() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope.toml");
    let e = load::from_file(&missing).expect_err("missing");
    assert!(matches!(e, PolicyError::Read { .. }));
    assert!(
        e.to_string()
            .contains("nope.toml: cannot read the policy file"),
        "{e}"
    );

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, b"[limits]\ntimeout = \"\xff\"\n").expect("write");
    let e = load::from_file(&bad).expect_err("not utf-8");
    assert!(e.to_string().contains("not valid UTF-8 (byte 20)"), "{e}");

    let e = load::from_file(dir.path()).expect_err("a directory");
    assert!(matches!(e, PolicyError::Read { .. }));
}

#[test]
fn a_full_policy_loads_with_its_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = r#"
[workspace]
root = "."
mode = "rw"
protect = [".git/hooks"]
[network]
mode = "none"
programs = ["my-uploader"]
subcommands = ["mytool sync"]
[commands]
allow = ["ls"]
on_unknown = "approval_required"
max_command_bytes = "1KiB"
[limits]
timeout = "1m30s"
memory = "1GiB"
pids = 64
cpus = 2
output = "64KiB"
tmp = "16MiB"
[env]
pass = ["LANG", "LC_*"]
set = { A = "1" }
[filesystem]
read = ["/usr/share"]
"#;
    let path = dir.path().join("airlock.toml");
    std::fs::write(&path, text).expect("write");
    let p = load::from_file(&path).expect("loads").policy;
    assert_eq!(p.workspace.root, dir.path());
    assert_eq!(p.workspace.mode, WorkspaceMode::Rw);
    assert_eq!(p.network.programs, vec!["my-uploader"]);
    assert_eq!(p.commands.on_unknown, Verdict::ApprovalRequired);
    assert_eq!(p.commands.max_command_bytes, 1024);
    assert_eq!(p.limits.timeout.ms, 90_000);
    assert_eq!(p.limits.cpu_time.ms, 90_000);
    assert_eq!(p.limits.memory, 1 << 30);
    assert_eq!(p.limits.cpus, 2.0);
    assert_eq!(p.env.set, vec![("A".to_string(), "1".to_string())]);
    assert_eq!(p.commands.rules[0].name, "commands.allow[0]");
    assert_eq!(p.sha256, load::sha256_hex(text));
    assert_eq!(p.source, path.display().to_string());

    // The extended network list is used by the gate.
    let req = |c: &str| airlock_policy::Request {
        command: airlock_policy::Command::Shell { command: c.into() },
        cwd: dir.path().to_path_buf(),
        loosening: Default::default(),
    };
    let d = airlock_policy::decide(&p, &req("my-uploader f"));
    assert_eq!(d.decision, Verdict::Deny);
    assert_eq!(d.step, airlock_policy::Step::Network);
    let d = airlock_policy::decide(&p, &req("mytool sync --all"));
    assert_eq!(d.step, airlock_policy::Step::Network);
}

#[test]
fn resolve_order_flag_env_local_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    let local = dir.path().join("airlock.toml");
    // Only the built-in default.
    let l = load::resolve(None, dir.path()).expect("default");
    assert_eq!(l.policy.source, load::BUILTIN_ORIGIN);
    assert_eq!(l.policy.workspace.root, dir.path());
    // ./airlock.toml wins over the default.
    std::fs::write(&local, "[commands]\nallow = [\"ls\"]\n").expect("write");
    let l = load::resolve(None, dir.path()).expect("local");
    assert_eq!(l.policy.source, local.display().to_string());
    // An explicit file wins over ./airlock.toml.
    let explicit = dir.path().join("other.toml");
    std::fs::write(&explicit, "[commands]\nallow = [\"cat\"]\n").expect("write");
    let l = load::resolve(Some(&explicit), dir.path()).expect("explicit");
    assert_eq!(l.policy.source, explicit.display().to_string());
    // A missing explicit file is an error, not a fallback.
    assert!(load::resolve(Some(&dir.path().join("missing.toml")), dir.path()).is_err());
    // ($AIRLOCK_POLICY is covered by the CLI tests, which set it per process.)
}

#[test]
fn the_default_policy_text_is_what_builtin_default_uses() {
    let root = Path::new("/");
    let p = load::builtin_default(root);
    assert_eq!(p.sha256, load::sha256_hex(load::DEFAULT_POLICY_TOML));
    assert_eq!(p.network.mode, NetworkMode::None);
    assert_eq!(p.limits.timeout.ms, 30_000);
    assert_eq!(p.limits.memory, 512 << 20);
    assert_eq!(p.limits.pids, 128);
    assert_eq!(p.limits.output, 1 << 20);
    assert_eq!(p.limits.tmp, 64 << 20);
    assert_eq!(p.workspace.mode, WorkspaceMode::Overlay);
    assert!(p.env.pass.contains(&"LC_*".to_string()));
    assert!(p.env.set.iter().any(|(k, _)| k == "PATH"));
}

/// `[knowledge]`: the program knowledge base's tables, in a policy, get the
/// same located errors and suggestions as the rest of the file.
#[test]
fn knowledge_tables_are_checked() {
    let (l, c, m) = one("[[knowledge.program]]\nnames = [\"t\"]\nabreviations = true\n");
    assert_eq!((l, c), (3, 1));
    assert_eq!(
        m,
        "unknown key `abreviations` in [program]; did you mean `abbreviations`?"
    );

    let (l, _, m) = one(
        "[[knowledge.program]]\nnames = [\"t\"]\nlong = [\"hook=\"]\n[[knowledge.program.effect]]\noption = \"--hok\"\nkind = \"exec\"\naction = \"deny\"\nreason = \"r\"\n",
    );
    assert_eq!(l, 5);
    assert!(
        m.contains("`--hok` is not an option of `t`") && m.contains("did you mean `--hook`?"),
        "{m}"
    );

    let (l, _, m) = one(
        "[[knowledge.program]]\nnames = [\"t\"]\n[[knowledge.program.effect]]\nalways = true\nkind = \"exec\"\naction = \"aproval_required\"\nreason = \"r\"\n",
    );
    assert_eq!(l, 6);
    assert!(m.contains("did you mean \"approval_required\"?"), "{m}");

    let (_, _, m) = one(
        "[[knowledge.program]]\nnames = [\"t\"]\n[[knowledge.program.effect]]\nalways = true\nkind = \"exec\"\naction = \"deny\"\n",
    );
    assert!(m.contains("needs a `reason`"), "{m}");

    let (l, _, m) =
        one("[[knowledge.env]]\nnames = [\"9X\"]\nkind = \"exec\"\naction = \"judge\"\n");
    assert_eq!(l, 2);
    assert!(m.contains("`9X` is not a variable name"), "{m}");

    let (_, _, m) = one("[[knowledge.program]]\nnames = [\"t\"]\nlong = [\"--x\"]\n");
    assert!(m.contains("a long option is written"), "{m}");
}

/// The built-in knowledge base loads, and a broken one is reported with its place.
#[test]
fn the_builtin_knowledge_base_loads_and_errors_are_located() {
    let kb = load::knowledge_from_str(
        airlock_policy::knowledge::PROGRAMS_TOML,
        airlock_policy::knowledge::BUILTIN_KNOWLEDGE_ORIGIN,
    )
    .unwrap_or_else(|e| panic!("programs.toml must load: {e}"));
    assert!(kb.programs.len() > 40, "{}", kb.programs.len());
    assert_eq!(kb.version, 1);
    let err = load::knowledge_from_str("version = 1\n[[program]]\nnmes = [\"x\"]\n", "kb.toml")
        .expect_err("a typo is an error");
    let text = err.to_string();
    assert!(
        text.contains("kb.toml:3:1") && text.contains("did you mean `names`?"),
        "{text}"
    );
    let err = load::knowledge_from_str("version = 7\n", "kb.toml").expect_err("newer format");
    assert!(err.to_string().contains("kb.toml:1:11"), "{err}");
}

/// `[env] git_config` (issue 12): git keys and one-line values.
#[test]
fn git_config_keys_and_values() {
    let ok = r#"[env]
git_config = { "user.name" = "agent", "url.https://mirror.example/.insteadOf" = "https://github.com/" }
"#;
    let p = load::from_str(ok, "p.toml", Path::new("/"))
        .expect("loads")
        .policy;
    assert_eq!(
        p.env.git_config,
        vec![
            (
                "url.https://mirror.example/.insteadOf".to_string(),
                "https://github.com/".to_string()
            ),
            ("user.name".to_string(), "agent".to_string()),
        ]
    );
    let (line, col, msg) = one("[env]\ngit_config = { \"user\" = \"x\" }\n");
    assert_eq!((line, col), (2, 16), "{msg}");
    assert!(msg.contains("is not a git configuration key"), "{msg}");
    let (line, _, msg) = one("[env]\ngit_config = { \"core.9x\" = \"x\" }\n");
    assert_eq!(line, 2, "{msg}");
    let (_, _, msg) = one("[env]\ngit_config = { \"core.pager\" = \"a\\nb\" }\n");
    assert!(msg.contains("must be one line"), "{msg}");
}

/// Finding 11 of the audit review: NUL and other control characters in a
/// path-valued key are refused at load time, at the entry, with a hint;
/// before, `policy check` passed and the run failed with a misleading error.
#[test]
fn control_characters_in_paths_are_refused_where_they_are() {
    for (text, line, column, what) in [
        (
            "[filesystem]\nread = [\"/tmp/x\\u0000y\"]\n",
            2,
            9,
            "filesystem.read",
        ),
        (
            "[filesystem]\nwrite = [\"/ok\", \"/a\\tb\"]\n",
            2,
            17,
            "filesystem.write",
        ),
        (
            "[filesystem]\nhide = [\"a\\u0000b\"]\n",
            2,
            9,
            "filesystem.hide",
        ),
        (
            "[workspace]\nroot = \"/tmp/\\u001b[2Jx\"\n",
            2,
            8,
            "workspace.root",
        ),
        (
            "[workspace]\nprotect = [\"a\\nb\"]\n",
            2,
            12,
            "workspace.protect",
        ),
        (
            "[changes]\nallow = [\"src/\\u0000*\"]\n",
            2,
            10,
            "changes.allow",
        ),
    ] {
        let (l, c, m) = one(text);
        assert_eq!((l, c), (line, column), "{text}: {m}");
        assert!(m.contains(&format!("`{what}` entry")), "{m}");
        assert!(m.contains("control character"), "{m}");
        assert!(m.contains("write the path without it"), "{m}");
        // Shown escaped: the raw character never reaches the terminal.
        assert!(!m.chars().any(|c| c.is_ascii_control()), "{m:?}");
    }
}
