//! `airlock check` and `airlock policy`, run as the real binary.

use std::path::Path;
use std::process::{Command, Output};

fn airlock(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_airlock"))
        .args(args)
        .current_dir(dir)
        .env_remove("AIRLOCK_POLICY")
        .env("AIRLOCK_STATE_DIR", dir.join(".airlock-state"))
        .output()
        .expect("run airlock")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn workspace() -> tempfile::TempDir {
    // Not under /tmp, which the gate treats as the sandbox's private /tmp.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    std::fs::create_dir(dir.path().join("src")).expect("mkdir");
    std::fs::write(dir.path().join("README.md"), "hello\n").expect("write");
    dir
}

#[test]
fn exit_status_follows_the_decision() {
    let ws = workspace();
    let d = ws.path();
    assert_eq!(
        airlock(d, &["check", "--", "ls", "-la"]).status.code(),
        Some(0)
    );
    assert_eq!(
        airlock(d, &["check", "-c", "cat README.md | wc -l"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        airlock(d, &["check", "-c", "curl http://x"]).status.code(),
        Some(1)
    );
    assert_eq!(
        airlock(d, &["check", "-c", "rm -rf src"]).status.code(),
        Some(3)
    );
    assert_eq!(
        airlock(d, &["check", "--", "sudo", "ls"]).status.code(),
        Some(1)
    );
    // Usage errors: no command, both forms, unknown flag.
    assert_eq!(airlock(d, &["check"]).status.code(), Some(2));
    assert_eq!(
        airlock(d, &["check", "-c", "ls", "--", "ls"]).status.code(),
        Some(2)
    );
    assert_eq!(
        airlock(d, &["check", "--bogus", "--", "ls"]).status.code(),
        Some(2)
    );
}

#[test]
fn human_output_is_short_and_names_the_rule() {
    let ws = workspace();
    let o = airlock(
        ws.path(),
        &["check", "-c", "ls && curl https://example.com"],
    );
    let out = stdout(&o);
    assert!(
        out.starts_with("deny: `curl` reaches the network and this policy has network mode none [network.mode]\n"),
        "{out}"
    );
    assert!(out.lines().count() <= 3, "{out}");
}

#[test]
fn json_output_has_every_field() {
    let ws = workspace();
    let o = airlock(
        ws.path(),
        &["check", "--json", "-c", "ls src; git push origin main"],
    );
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["decision"], "deny");
    assert_eq!(v["step"], "network");
    assert_eq!(v["rule"], "network.mode");
    assert!(v["reason"].as_str().unwrap().contains("git push"));
    let segs = v["segments"].as_array().expect("segments");
    assert_eq!(segs.len(), 2);
    assert_eq!(segs[0]["argv"], serde_json::json!(["ls", "src"]));
    assert_eq!(segs[0]["decision"], "allow");
    assert!(segs[0]["rule"]
        .as_str()
        .unwrap()
        .starts_with("commands.allow["));
    assert_eq!(segs[1]["decision"], "deny");
    let sha = v["policy_sha256"].as_str().unwrap();
    assert_eq!(sha.len(), 64);
    // It is the hash of the default policy text that show-default prints.
    let shown = airlock(ws.path(), &["policy", "show-default"]);
    use sha2::Digest;
    assert_eq!(sha, hex::encode(sha2::Sha256::digest(&shown.stdout)));
}

#[test]
fn policy_sources_in_order() {
    let ws = workspace();
    let d = ws.path();
    // Default: curl denied, ls allowed.
    assert_eq!(airlock(d, &["check", "--", "ls"]).status.code(), Some(0));
    // ./airlock.toml that allows only cat.
    std::fs::write(d.join("airlock.toml"), "[commands]\nallow = [\"cat\"]\n").expect("write");
    assert_eq!(airlock(d, &["check", "--", "ls"]).status.code(), Some(1));
    assert_eq!(
        airlock(d, &["check", "--", "cat", "README.md"])
            .status
            .code(),
        Some(0)
    );
    // $AIRLOCK_POLICY wins over ./airlock.toml.
    std::fs::write(d.join("env.toml"), "[commands]\nallow = [\"ls\"]\n").expect("write");
    let o = Command::new(env!("CARGO_BIN_EXE_airlock"))
        .args(["check", "--", "ls"])
        .current_dir(d)
        .env("AIRLOCK_POLICY", d.join("env.toml"))
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // --policy wins over both.
    std::fs::write(d.join("flag.toml"), "[commands]\nallow = [\"wc\"]\n").expect("write");
    let o = Command::new(env!("CARGO_BIN_EXE_airlock"))
        .args(["check", "--policy", "flag.toml", "--", "ls"])
        .current_dir(d)
        .env("AIRLOCK_POLICY", d.join("env.toml"))
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(1));
    // A broken or missing policy is a policy error: exit 2, with a located message.
    std::fs::write(d.join("bad.toml"), "[limits]\ntimeout = \"soon\"\n").expect("write");
    let o = airlock(d, &["check", "--policy", "bad.toml", "--", "ls"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bad.toml:2:11: `limits.timeout`"),
        "{}",
        stderr(&o)
    );
    let o = airlock(d, &["check", "--policy", "missing.toml", "--", "ls"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cannot read the policy file"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn cwd_flag_moves_the_command_not_the_workspace() {
    let ws = workspace();
    let d = ws.path();
    assert_eq!(
        airlock(d, &["check", "--cwd", "src", "-c", "cat ../README.md"])
            .status
            .code(),
        Some(0)
    );
    let o = airlock(d, &["check", "--cwd", "/etc", "--", "cat", "passwd"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("outside the workspace"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn bad_input_gets_a_decision() {
    use std::os::unix::ffi::OsStrExt;
    let ws = workspace();
    let o = Command::new(env!("CARGO_BIN_EXE_airlock"))
        .arg("check")
        .arg("-c")
        .arg(std::ffi::OsStr::from_bytes(b"ls \xff"))
        .current_dir(ws.path())
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("not valid UTF-8"), "{}", stdout(&o));
    let o = airlock(ws.path(), &["check", "-c", ""]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("empty"));
    let long = format!("echo {}", "x".repeat(65 * 1024));
    let o = airlock(ws.path(), &["check", "-c", &long]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("too long"));
}

#[test]
fn policy_show_default_init_and_check() {
    let ws = workspace();
    let d = ws.path();
    let shown = airlock(d, &["policy", "show-default"]);
    assert_eq!(shown.status.code(), Some(0));
    let text = stdout(&shown);
    assert!(text.contains("[commands]") && text.contains("on_unknown = \"deny\""));

    let o = airlock(d, &["policy", "init"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let written = std::fs::read_to_string(d.join("airlock.toml")).expect("written");
    assert!(written.starts_with("# airlock policy"));
    // Refuses to overwrite, and leaves the file as it was.
    std::fs::write(d.join("airlock.toml"), "# mine\n").expect("write");
    let o = airlock(d, &["policy", "init"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("already exists"));
    assert_eq!(
        std::fs::read_to_string(d.join("airlock.toml")).unwrap(),
        "# mine\n"
    );
    let o = airlock(d, &["policy", "init", "other.toml"]);
    assert_eq!(o.status.code(), Some(0));

    // The starter file validates cleanly.
    let o = airlock(d, &["policy", "check", "other.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("0 warnings"), "{}", stdout(&o));

    // Warnings and errors.
    std::fs::write(
        d.join("w.toml"),
        "[commands]\nallow = [\"git push\"]\napproval = [\"git push\"]\n",
    )
    .expect("write");
    let o = airlock(d, &["policy", "check", "w.toml"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stdout(&o).contains("warning: w.toml:3:13: `git push` is listed under two decisions"),
        "{}",
        stdout(&o)
    );
    std::fs::write(
        d.join("e.toml"),
        "[[rule]]\nprefix = \"git push\"\ndecision = \"deny\"\nmatch = [\"git pull\"]\n",
    )
    .expect("write");
    let o = airlock(d, &["policy", "check", "e.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o)
            .contains("e.toml:4:10: rule[0]: the `match` example \"git pull\" does not match"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn policy_explain_traces_every_segment() {
    let ws = workspace();
    let d = ws.path();
    airlock(d, &["policy", "init"]);
    let o = airlock(
        d,
        &[
            "policy",
            "explain",
            "airlock.toml",
            "-c",
            "cat README.md && cat /etc/passwd",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("segment 1: cat README.md"), "{out}");
    assert!(out.contains("segment 2: cat /etc/passwd"), "{out}");
    for step in [
        "0 input",
        "1 workspace",
        "2 network",
        "3 approval",
        "4 allowlist",
    ] {
        assert!(out.contains(step), "{step} missing:\n{out}");
    }
    assert!(out.contains("outside the workspace"), "{out}");
    // The decision comes before the backend's capability report.
    let decision = out.lines().find(|l| l.starts_with("decision: "));
    assert!(
        decision.is_some_and(|l| l.starts_with("decision: deny")),
        "{out}"
    );
    assert!(out.contains("backend: native"), "{out}");
}

/// Finding 8: a CLI check is on the audit record, like a check through the API.
#[test]
fn every_check_writes_a_decision_record() {
    let ws = workspace();
    let d = ws.path();
    assert_eq!(
        airlock(d, &["check", "-c", "curl http://x"]).status.code(),
        Some(1)
    );
    assert_eq!(
        airlock(d, &["check", "--", "ls", "-la"]).status.code(),
        Some(0)
    );
    let records = airlock_core::audit::read_all(&d.join(".airlock-state/audit")).unwrap();
    let checks: Vec<_> = records
        .iter()
        .filter_map(|r| match &r.event {
            airlock_core::audit::record::Event::Decision(e) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(checks.len(), 2, "{records:?}");
    assert!(checks.iter().all(
        |e| e.operation == airlock_core::audit::record::Operation::Check
            && e.disposition == airlock_core::audit::Proceeding::Checked
            && e.tenant == airlock_core::Caller::cli().tenant()
    ));
    assert_eq!(checks[0].decision, airlock_policy::Verdict::Deny);
    // No writable log, no answer: exit 2 and a hint.
    let o = Command::new(env!("CARGO_BIN_EXE_airlock"))
        .args(["check", "--", "ls"])
        .current_dir(d)
        .env_remove("AIRLOCK_POLICY")
        .env("AIRLOCK_STATE_DIR", d.join("README.md/state"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("could not be recorded"),
        "{}",
        stderr(&o)
    );
}
