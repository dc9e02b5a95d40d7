//! Finding 7 of issue 13: "deleting two records, renumbering, re-chaining and
//! rewriting head.json gave `audit verify: ok`". With an operator key outside
//! the state directory signing checkpoints, `audit verify --key PUB` rejects
//! every rewrite the key holder did not sign; exported checkpoints (a file and
//! syslog) catch what the log alone cannot (a cut after the last checkpoint).

use airlock_core::audit::chain::line_hash;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_airlock");

struct Env {
    _tmp: tempfile::TempDir,
    state: PathBuf,
    keys: PathBuf,
    syslog: UnixDatagram,
    syslog_path: PathBuf,
}

fn env() -> Env {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let keys = tmp.path().join("operator");
    std::fs::create_dir_all(&keys).unwrap();
    let syslog_path = tmp.path().join("log.sock");
    let syslog = UnixDatagram::bind(&syslog_path).unwrap();
    syslog.set_nonblocking(true).unwrap();
    Env {
        state: tmp.path().join("state"),
        keys,
        syslog,
        syslog_path,
        _tmp: tmp,
    }
}

impl Env {
    fn run_in(&self, state: &Path, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .env("AIRLOCK_STATE_DIR", state)
            .env("AIRLOCK_AUDIT_SIGNING_KEY", self.keys.join("audit.pem"))
            .env("AIRLOCK_AUDIT_CHECKPOINT_INTERVAL", "1h")
            .env(
                "AIRLOCK_AUDIT_CHECKPOINT_FILE",
                self.keys.join("exported.jsonl"),
            )
            .env("AIRLOCK_AUDIT_CHECKPOINT_SYSLOG", &self.syslog_path)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
    fn run(&self, args: &[&str]) -> Output {
        self.run_in(&self.state, args)
    }
    fn public(&self) -> String {
        self.keys.join("audit.pem.pub").display().to_string()
    }
    /// `audit verify --key` (and optional exported checkpoints) on a state dir.
    fn verify_key(&self, state: &Path, exported: bool) -> Output {
        let public = self.public();
        let exported_path = self.keys.join("exported.jsonl").display().to_string();
        let mut args = vec!["audit", "verify", "--key", &public];
        if exported {
            args.extend(["--checkpoints", &exported_path]);
        }
        self.run_in(state, &args)
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn copy_state(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("audit")).unwrap();
    for e in std::fs::read_dir(from.join("audit")).unwrap().flatten() {
        std::fs::copy(e.path(), to.join("audit").join(e.file_name())).unwrap();
    }
}

/// What an attacker with write access to the state directory does: keep the
/// records `keep` says, renumber them, re-chain every `prev` from the first
/// change on (earlier lines stay byte for byte), rewrite head.json.
fn rewrite(state: &Path, keep: impl Fn(&serde_json::Value) -> bool) {
    let file = state.join("audit/audit-000001.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    let mut prev = "0".repeat(64);
    let mut out = String::new();
    let mut last = (0u64, String::new());
    let mut dirty = false;
    for raw in text.lines() {
        let mut v: serde_json::Value = serde_json::from_str(raw).unwrap();
        if !keep(&v) {
            dirty = true;
            continue;
        }
        let seq = last.0 + 1;
        dirty |= v["prev"] != prev.as_str() || v["seq"] != seq;
        let line = if dirty {
            v["seq"] = seq.into();
            v["id"] = format!("a{seq}").into();
            v["prev"] = prev.clone().into();
            serde_json::to_string(&v).unwrap()
        } else {
            raw.to_string()
        };
        prev = line_hash(line.as_bytes());
        last = (seq, prev.clone());
        out.push_str(&line);
        out.push('\n');
    }
    std::fs::write(&file, out).unwrap();
    let mut head = serde_json::json!({"seq": last.0, "id": format!("a{}", last.0), "hash": last.1, "file": "audit-000001.jsonl"})
        .to_string();
    while head.len() < 511 {
        head.push(' ');
    }
    head.push('\n');
    std::fs::write(state.join("audit/head.json"), head).unwrap();
}

#[test]
fn rewrites_the_key_holder_did_not_sign_are_rejected() {
    let e = env();
    let o = e.run(&[
        "audit",
        "keygen",
        "--out",
        e.keys.join("audit.pem").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    // a1 test, a2 checkpoint (the first append with a key finds none: due),
    // a3..a6 test, a7 checkpoint, a8..a10 test, a11 checkpoint, a12..a13 test.
    for (count, then_checkpoint) in [(5, true), (3, true), (2, false)] {
        let o = e.run(&["audit", "append-test", "--count", &count.to_string()]);
        assert!(o.status.success(), "{}", text(&o));
        if then_checkpoint {
            let o = e.run(&["audit", "checkpoint"]);
            assert!(o.status.success(), "{}", text(&o));
        }
    }
    let o = e.verify_key(&e.state, true);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("13 records")
            && t.contains("3 checkpoint(s)")
            && t.contains("anchored through a10"),
        "{t}"
    );
    assert!(
        t.contains("the last 3 record(s) come after the last signed checkpoint"),
        "{t}"
    );

    // Each checkpoint was exported: a file line and a syslog datagram.
    let exported = std::fs::read_to_string(e.keys.join("exported.jsonl")).unwrap();
    assert_eq!(exported.lines().count(), 3, "{exported}");
    let mut datagrams = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = e.syslog.recv(&mut buf) {
        datagrams.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    assert_eq!(datagrams.len(), 3, "{datagrams:?}");
    assert!(
        datagrams[0].starts_with("<85>airlock-audit[") && datagrams[0].contains("\"signature\""),
        "{}",
        datagrams[0]
    );

    // Attack A, the finding: delete a4 and a5, renumber, re-chain, new head.
    let a = e.keys.join("../attack-a");
    copy_state(&e.state, &a);
    rewrite(&a, |v| !matches!(v["seq"].as_u64(), Some(4 | 5)));
    let plain = e.run_in(&a, &["audit", "verify"]);
    assert!(
        plain.status.success(),
        "the chain alone cannot tell: {}",
        text(&plain)
    );
    let keyed = e.verify_key(&a, false);
    assert_eq!(keyed.status.code(), Some(1), "{}", text(&keyed));
    assert!(
        text(&keyed).contains("checkpoint a5 signed a6"),
        "{}",
        text(&keyed)
    );

    // Attack B: rewrite without any checkpoint at all.
    let b = e.keys.join("../attack-b");
    copy_state(&e.state, &b);
    rewrite(&b, |v| v["kind"] != "checkpoint");
    assert!(e.run_in(&b, &["audit", "verify"]).status.success());
    let keyed = e.verify_key(&b, false);
    assert_eq!(keyed.status.code(), Some(1));
    assert!(
        text(&keyed).contains("no checkpoint signed by this key"),
        "{}",
        text(&keyed)
    );

    // Attack C: cut the end, signed records included (a9..a13: the last
    // checkpoint signed a10). The log alone still verifies (its remaining
    // checkpoints are genuine); the exported checkpoints do not match it.
    let c = e.keys.join("../attack-c");
    copy_state(&e.state, &c);
    rewrite(&c, |v| v["seq"].as_u64().unwrap() <= 8);
    assert!(e.verify_key(&c, false).status.success(), "documented limit");
    let keyed = e.verify_key(&c, true);
    assert_eq!(keyed.status.code(), Some(1));
    assert!(
        text(&keyed).contains("records were removed after it"),
        "{}",
        text(&keyed)
    );

    // Attack D: a checkpoint's signed head edited to fit a rewrite.
    let d = e.keys.join("../attack-d");
    copy_state(&e.state, &d);
    rewrite(&d, |v| !matches!(v["seq"].as_u64(), Some(4 | 5)));
    let file = d.join("audit/audit-000001.jsonl");
    let body: String = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|raw| {
            let mut v: serde_json::Value = serde_json::from_str(raw).unwrap();
            if v["kind"] == "checkpoint" && v["seq"].as_u64().unwrap() > 4 {
                v["signed_seq"] = (v["seq"].as_u64().unwrap() - 1).into();
                v["signed_hash"] = v["prev"].clone();
                v.to_string() + "\n"
            } else {
                raw.to_string() + "\n"
            }
        })
        .collect();
    std::fs::write(&file, body).unwrap();
    rewrite(&d, |_| true);
    let keyed = e.verify_key(&d, false);
    assert_eq!(keyed.status.code(), Some(1));
    assert!(
        text(&keyed).contains("signature does not verify"),
        "{}",
        text(&keyed)
    );
}

#[test]
fn the_signing_key_must_live_outside_the_state_dir() {
    let e = env();
    std::fs::create_dir_all(&e.state).unwrap();
    let inside = e.state.join("audit.pem");
    let o = e.run(&["audit", "keygen", "--out", inside.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let o = Command::new(BIN)
        .args(["audit", "checkpoint"])
        .env("AIRLOCK_STATE_DIR", &e.state)
        .env("AIRLOCK_AUDIT_SIGNING_KEY", &inside)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("inside the state directory"),
        "{}",
        text(&o)
    );
}
