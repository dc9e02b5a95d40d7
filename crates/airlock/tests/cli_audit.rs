//! End to end through the real `airlock` binary: the audit log under crash and
//! concurrency, tampering seen by `airlock audit verify`, approvals and grants
//! with the real native sandbox. Each test has its own AIRLOCK_STATE_DIR.

use airlock_core::audit::{read_all, record::Event};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_airlock");

struct Env {
    _tmp: tempfile::TempDir,
    state: PathBuf,
    ws: PathBuf,
    outside: PathBuf,
}

const POLICY: &str = r#"[workspace]
root = "."
[commands]
allow = ["echo", "cat", "cp data.txt"]
approval = ["echo deploy"]
"#;

fn env() -> Env {
    // Not under /tmp: the gate treats /tmp as the sandbox's own scratch space.
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = tmp.path().join("ws");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(ws.join("airlock.toml"), POLICY).unwrap();
    std::fs::write(ws.join("data.txt"), "payload\n").unwrap();
    Env {
        state: tmp.path().join("state"),
        ws: ws.canonicalize().unwrap(),
        outside: outside.canonicalize().unwrap(),
        _tmp: tmp,
    }
}

impl Env {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .current_dir(&self.ws)
            .env("AIRLOCK_STATE_DIR", &self.state)
            .env_remove("AIRLOCK_POLICY")
            .stdin(Stdio::null());
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }
    fn audit_dir(&self) -> PathBuf {
        self.state.join("audit")
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn approval_id_in(s: &str) -> String {
    let start = s
        .find("ap-")
        .unwrap_or_else(|| panic!("no approval id in: {s}"));
    s[start..start + 15].to_string()
}

// ---------- crash safety ----------

/// Start a writer, SIGKILL it in the middle of a burst, several times (once
/// with large records so that the kill can land inside a write). After
/// `airlock audit repair`, verify passes and every id the writer printed (it
/// prints an id only after the record is fsynced) is in the log.
#[test]
fn sigkill_mid_burst_loses_no_acknowledged_record() {
    let e = env();
    let mut acknowledged = Vec::new();
    let mut repairs = 0;
    // Round 0: many small records. Later rounds: 4 MiB records, killed after a
    // varying delay, so that some kills land inside a write (a torn tail).
    for round in 0..6u64 {
        let (pad, want) = if round == 0 {
            ("0", 300)
        } else {
            ("4194304", 2)
        };
        let mut child = e
            .cmd(&[
                "audit",
                "append-test",
                "--count",
                "1000000",
                "--writer",
                "crash",
                "--pad",
                pad,
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        for _ in 0..want {
            acknowledged.push(lines.next().unwrap().unwrap());
        }
        std::thread::sleep(Duration::from_millis(round * 7));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // Whatever it printed before dying was acknowledged too.
        for line in lines {
            acknowledged.push(line.unwrap());
        }
        let repaired = e.run(&["audit", "repair"]);
        assert_eq!(code(&repaired), 0, "{}", text(&repaired.stderr));
        if text(&repaired.stdout).contains("repair: cut") {
            repairs += 1;
        }
        let verified = e.run(&["audit", "verify"]);
        assert_eq!(
            code(&verified),
            0,
            "verify after repair: {}{}",
            text(&verified.stdout),
            text(&verified.stderr)
        );
    }
    eprintln!("torn tails repaired: {repairs} of 4 kills");
    let ids: std::collections::HashSet<String> = read_all(&e.audit_dir())
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    let missing: Vec<&String> = acknowledged
        .iter()
        .filter(|id| !ids.contains(*id))
        .collect();
    assert!(missing.is_empty(), "acknowledged but missing: {missing:?}");
    assert!(acknowledged.len() >= 310);
}

/// What a writer killed inside `write` leaves: a last line without its newline.
#[test]
fn a_torn_tail_is_named_by_verify_and_cut_by_repair() {
    let e = env();
    assert_eq!(code(&e.run(&["audit", "append-test", "--count", "5"])), 0);
    let file = e.audit_dir().join("audit-000001.jsonl");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(br#"{"v":1,"seq":6,"id":"a6","time":"2026-"#);
    std::fs::write(&file, &bytes).unwrap();
    let verified = e.run(&["audit", "verify"]);
    assert_eq!(code(&verified), 1);
    assert!(
        text(&verified.stderr).contains(":6: incomplete last record"),
        "{}",
        text(&verified.stderr)
    );
    let repaired = e.run(&["audit", "repair"]);
    assert!(
        text(&repaired.stdout).contains("a6: repair: cut 38 bytes"),
        "{}",
        text(&repaired.stdout)
    );
    let verified = e.run(&["audit", "verify"]);
    assert_eq!(code(&verified), 0, "{}", text(&verified.stderr));
    assert!(text(&verified.stdout).contains("6 records"));
    // A normal command opening the log repairs it too.
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(b"{\"v\":1,");
    std::fs::write(&file, &bytes).unwrap();
    assert_eq!(code(&e.run(&["audit", "append-test"])), 0);
    assert_eq!(code(&e.run(&["audit", "verify"])), 0);
}

// ---------- concurrency ----------

#[test]
fn eight_processes_times_200_records_make_one_exact_chain() {
    let e = env();
    let children: Vec<_> = (0..8)
        .map(|w| {
            e.cmd(&[
                "audit",
                "append-test",
                "--count",
                "200",
                "--writer",
                &format!("w{w}"),
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    // verify, run while they write, never sees a broken chain or an anchor
    // ahead of the log.
    let mut checks = 0;
    while checks < 3 || read_all(&e.audit_dir()).map_or(0, |r| r.len()) < 1600 {
        let v = e.run(&["audit", "verify"]);
        assert_eq!(
            code(&v),
            0,
            "verify during writes: {}{}",
            text(&v.stdout),
            text(&v.stderr)
        );
        checks += 1;
        if checks > 200 {
            break;
        }
    }
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout).lines().count(), 200);
    }
    let verified = e.run(&["audit", "verify"]);
    assert_eq!(
        code(&verified),
        0,
        "{}{}",
        text(&verified.stdout),
        text(&verified.stderr)
    );
    assert!(
        text(&verified.stdout).contains("1600 records"),
        "{}",
        text(&verified.stdout)
    );
    let records = read_all(&e.audit_dir()).unwrap();
    assert_eq!(records.len(), 1600);
    for w in 0..8 {
        let mut ns: Vec<u64> = records
            .iter()
            .filter_map(|r| match &r.event {
                Event::Test(t) if t.writer == format!("w{w}") => Some(t.n),
                _ => None,
            })
            .collect();
        ns.sort_unstable();
        assert_eq!(ns, (0..200).collect::<Vec<_>>(), "writer w{w}");
    }
}

// ---------- tampering ----------

/// An edit of the log's lines.
type Tamper = dyn FnOnce(&mut Vec<String>);

fn tampered(e: &Env, edit: impl FnOnce(&mut Vec<String>)) -> Output {
    let copy = e.state.with_file_name("state-copy");
    let _ = std::fs::remove_dir_all(&copy);
    std::fs::create_dir_all(copy.join("audit")).unwrap();
    for entry in std::fs::read_dir(e.audit_dir()).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), copy.join("audit").join(entry.file_name())).unwrap();
    }
    let file = copy.join("audit/audit-000001.jsonl");
    let mut lines: Vec<String> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    edit(&mut lines);
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    Command::new(BIN)
        .args(["audit", "verify"])
        .env("AIRLOCK_STATE_DIR", &copy)
        .output()
        .unwrap()
}

#[test]
fn verify_detects_edit_delete_swap_and_truncate_and_names_the_record() {
    let e = env();
    assert_eq!(code(&e.run(&["audit", "append-test", "--count", "10"])), 0);
    assert_eq!(code(&e.run(&["audit", "verify"])), 0);
    let cases: Vec<(&str, Box<Tamper>, &str)> = vec![
        (
            "edit",
            Box::new(|l: &mut Vec<String>| l[4] = l[4].replace("\"n\":4", "\"n\":40")),
            "(record a6)",
        ),
        (
            "delete",
            Box::new(|l: &mut Vec<String>| drop(l.remove(4))),
            "(record a6)",
        ),
        (
            "swap",
            Box::new(|l: &mut Vec<String>| l.swap(3, 4)),
            "(record a5)",
        ),
        (
            "truncate",
            Box::new(|l: &mut Vec<String>| l.truncate(7)),
            "(record a10)",
        ),
    ];
    for (name, edit, expect) in cases {
        let out = tampered(&e, edit);
        assert_eq!(code(&out), 1, "{name}: verify must fail");
        let err = text(&out.stderr);
        assert!(err.contains(expect), "{name}: expected {expect} in: {err}");
    }
}

// ---------- approvals, with the real sandbox ----------

#[test]
fn approvals_end_to_end() {
    let e = env();
    // Pending: nothing runs, exit 75, the id is printed.
    let out = e.run(&["run", "-c", "echo deploy now"]);
    assert_eq!(code(&out), 75, "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("deploy now"));
    let id = approval_id_in(&text(&out.stderr));
    let listed = e.run(&["approvals", "list"]);
    assert!(text(&listed.stdout).contains(&id));

    // Approve, then it runs once, for real.
    let ok = e.run(&["approvals", "approve", &id, "--note", "reviewed"]);
    assert_eq!(code(&ok), 0, "{}", text(&ok.stderr));
    let ran = e.run(&["run", "--approval", &id, "-c", "echo deploy now"]);
    assert_eq!(code(&ran), 0, "{}", text(&ran.stderr));
    assert_eq!(text(&ran.stdout), "deploy now\n");

    // Replay.
    let replay = e.run(&["run", "--approval", &id, "-c", "echo deploy now"]);
    assert_eq!(code(&replay), 75);
    assert!(
        text(&replay.stderr).contains("already used"),
        "{}",
        text(&replay.stderr)
    );
    assert!(text(&replay.stdout).is_empty());

    // Edited command.
    let id2 = approval_id_in(&text(&e.run(&["run", "-c", "echo deploy v2"]).stderr));
    assert_eq!(code(&e.run(&["approvals", "approve", &id2])), 0);
    let edited = e.run(&[
        "run",
        "--approval",
        &id2,
        "-c",
        "echo deploy v2 --to-production",
    ]);
    assert_eq!(code(&edited), 75);
    assert!(
        text(&edited.stderr).contains("different command"),
        "{}",
        text(&edited.stderr)
    );
    assert!(text(&edited.stdout).is_empty());

    // Changed policy.
    std::fs::write(
        e.ws.join("airlock.toml"),
        format!("{POLICY}# reviewed again\n"),
    )
    .unwrap();
    let changed = e.run(&["run", "--approval", &id2, "-c", "echo deploy v2"]);
    assert_eq!(code(&changed), 75);
    assert!(
        text(&changed.stderr).contains("different policy"),
        "{}",
        text(&changed.stderr)
    );

    // Denial.
    let id3 = approval_id_in(&text(&e.run(&["run", "-c", "echo deploy v3"]).stderr));
    assert_eq!(
        code(&e.run(&["approvals", "deny", &id3, "--note", "no"])),
        0
    );
    let denied = e.run(&["run", "--approval", &id3, "-c", "echo deploy v3"]);
    assert_eq!(code(&denied), 75);
    assert!(
        text(&denied.stderr).contains("was denied"),
        "{}",
        text(&denied.stderr)
    );

    // Expiry (a 1 s approval lifetime for this invocation).
    let out = e
        .cmd(&["run", "-c", "echo deploy v4"])
        .env("AIRLOCK_APPROVAL_TTL", "1s")
        .output()
        .unwrap();
    let id4 = approval_id_in(&text(&out.stderr));
    assert_eq!(code(&e.run(&["approvals", "approve", &id4])), 0);
    std::thread::sleep(Duration::from_millis(1200));
    let expired = e.run(&["run", "--approval", &id4, "-c", "echo deploy v4"]);
    assert_eq!(code(&expired), 75);
    assert!(
        text(&expired.stderr).contains("expired"),
        "{}",
        text(&expired.stderr)
    );
    assert!(text(&expired.stdout).is_empty());

    // Every approval, denial and expiry is in the log, and the log verifies.
    let records = read_all(&e.audit_dir()).unwrap();
    let actions: Vec<String> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Approval(a) => Some(format!("{:?}:{}", a.action, a.approval_id)),
            _ => None,
        })
        .collect();
    for want in [
        format!("Approved:{id}"),
        format!("Consumed:{id}"),
        format!("Denied:{id3}"),
        format!("Expired:{id4}"),
    ] {
        assert!(actions.contains(&want), "missing {want} in {actions:?}");
    }
    let executions = records
        .iter()
        .filter(|r| matches!(r.event, Event::Execution(_)))
        .count();
    assert_eq!(executions, 1, "only the one approved run executed");
    assert_eq!(code(&e.run(&["audit", "verify"])), 0);
    let q = e.run(&[
        "audit",
        "query",
        "--decision",
        "approval_required",
        "--since",
        "1h",
        "--command-prefix",
        "echo deploy",
        "--json",
    ]);
    assert_eq!(text(&q.stdout).lines().count(), 10, "{}", text(&q.stdout));
    let shown = e.run(&["audit", "show", &id]);
    assert_eq!(code(&shown), 0);
    for action in [
        "\"created\"",
        "\"approved\"",
        "\"consumed\"",
        "\"execution\"",
    ] {
        assert!(
            text(&shown.stdout).contains(action),
            "{action} missing from show {id}"
        );
    }
    assert_eq!(code(&e.run(&["audit", "show", "a999999"])), 1);
    let future = e.run(&[
        "audit",
        "query",
        "--since",
        "2999-01-01T00:00:00Z",
        "--json",
    ]);
    assert_eq!(text(&future.stdout), "", "nothing is newer than the future");
    let bad = e.run(&["audit", "query", "--since", "yesterday"]);
    assert_eq!(code(&bad), 2);
    assert!(
        text(&bad.stderr).contains("--since takes"),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn wait_approval_runs_when_a_person_approves() {
    let e = env();
    let child = e
        .cmd(&["run", "--wait-approval=30s", "-c", "echo deploy waited"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut id = None;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        let list = e.run(&["approvals", "list", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap_or_default();
        if let Some(found) = v
            .as_array()
            .and_then(|a| a.first())
            .and_then(|a| a["id"].as_str())
        {
            id = Some(found.to_string());
            break;
        }
    }
    let id = id.expect("the waiting run never created an approval");
    assert_eq!(code(&e.run(&["approvals", "approve", &id])), 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "deploy waited\n");
}

/// `--ask` on a real terminal: `script` gives the run a pty, and the test
/// types the answer. Without a terminal, nobody is asked and it stays pending.
#[test]
fn ask_prompts_at_a_terminal_and_records_the_answer() {
    let e = env();
    let ask = |command: &str, answer: &str| {
        let line = format!("{BIN} run --ask -c '{command}'");
        let mut child = Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .current_dir(&e.ws)
            .env("AIRLOCK_STATE_DIR", &e.state)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("script(1) from util-linux");
        std::thread::sleep(Duration::from_millis(1500));
        use std::io::Write;
        child
            .stdin
            .as_mut()
            .unwrap()
            .write_all(answer.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let yes = ask("echo deploy asked", "y\n");
    let shown = text(&yes.stdout);
    assert!(
        shown.contains("echo deploy asked") && shown.contains("approval prefix"),
        "{shown}"
    );
    assert!(shown.contains("\ndeploy asked"), "it ran: {shown}");
    let no = ask("echo deploy refused", "n\n");
    assert!(
        text(&no.stdout).contains("was denied"),
        "{}",
        text(&no.stdout)
    );
    assert!(!text(&no.stdout).contains("\ndeploy refused"));

    let piped = e.run(&["run", "--ask", "-c", "echo deploy piped"]);
    assert_eq!(code(&piped), 75);
    assert!(
        text(&piped.stderr).contains("not a terminal"),
        "{}",
        text(&piped.stderr)
    );

    let records = read_all(&e.audit_dir()).unwrap();
    let answers: Vec<String> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Approval(a) if a.who.name.ends_with("at the terminal") => {
                Some(format!("{:?}", a.action))
            }
            _ => None,
        })
        .collect();
    assert_eq!(answers, vec!["Approved", "Denied"]);
}

// ---------- grants, with the real sandbox ----------

fn copy_out(e: &Env, name: &str) -> Output {
    e.run(&[
        "run",
        "-c",
        &format!("cp data.txt {}/{name}", e.outside.display()),
    ])
}

#[test]
fn a_write_grant_works_for_its_uses_then_stops() {
    let e = env();
    assert_eq!(code(&copy_out(&e, "before")), 77);
    let out = e.run(&[
        "grant",
        "--write",
        e.outside.to_str().unwrap(),
        "--for",
        "cp data.txt",
        "--uses",
        "1",
        "--ttl",
        "10m",
    ]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let ran = copy_out(&e, "first");
    assert_eq!(code(&ran), 0, "{}", text(&ran.stderr));
    assert_eq!(
        std::fs::read_to_string(e.outside.join("first")).unwrap(),
        "payload\n"
    );
    assert_eq!(code(&copy_out(&e, "second")), 77, "the one use is spent");
    assert!(!e.outside.join("second").exists());
    assert!(!e.outside.join("before").exists());
    let records = read_all(&e.audit_dir()).unwrap();
    assert!(records
        .iter()
        .any(|r| matches!(&r.event, Event::Execution(x) if !x.loosened_by.is_empty())));
}

#[test]
fn a_grant_expires_by_time_and_a_revoked_grant_stops_at_once() {
    let e = env();
    let out = e.run(&[
        "grant",
        "--write",
        e.outside.to_str().unwrap(),
        "--for",
        "cp data.txt",
        "--ttl",
        "2s",
    ]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    std::thread::sleep(Duration::from_millis(2100));
    assert_eq!(code(&copy_out(&e, "late")), 77);
    assert!(!e.outside.join("late").exists());

    let out = e.run(&[
        "grant",
        "--write",
        e.outside.to_str().unwrap(),
        "--for",
        "cp data.txt",
        "--ttl",
        "10m",
    ]);
    let id = text(&out.stdout)
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_string();
    assert_eq!(code(&copy_out(&e, "granted")), 0);
    assert!(e.outside.join("granted").exists());
    assert_eq!(code(&e.run(&["grants", "revoke", &id])), 0);
    assert_eq!(code(&copy_out(&e, "revoked")), 77);
    assert!(!e.outside.join("revoked").exists());
}

#[test]
fn network_grants_need_an_allowlist_policy_and_ttls_are_bounded() {
    let e = env();
    let args = [
        "grant",
        "--network",
        "files.example.com",
        "--for",
        "pip install",
        "--uses",
        "1",
        "--ttl",
        "10m",
    ];
    let out = e.run(&args);
    assert_eq!(code(&out), 2, "the workspace policy has network mode none");
    assert!(
        text(&out.stderr).contains("allowlist"),
        "{}",
        text(&out.stderr)
    );
    std::fs::write(
        e.ws.join("airlock.toml"),
        format!("{POLICY}[network]\nmode = \"allowlist\"\nallow = []\n"),
    )
    .unwrap();
    let out = e.run(&args);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let list = e.run(&["grants", "list"]);
    assert!(
        text(&list.stdout).contains("network: files.example.com"),
        "{}",
        text(&list.stdout)
    );
    let ttl = e.run(&[
        "grant",
        "--write",
        e.outside.to_str().unwrap(),
        "--for",
        "cp",
        "--ttl",
        "30d",
    ]);
    assert_eq!(code(&ttl), 2, "no grant may outlive the maximum");
    assert!(text(&ttl.stderr).contains("ttl"), "{}", text(&ttl.stderr));
}

#[test]
fn tail_follow_prints_new_records_as_they_arrive() {
    let e = env();
    assert_eq!(
        code(&e.run(&["audit", "append-test", "--writer", "before"])),
        0
    );
    let mut child = e
        .cmd(&["audit", "tail", "-f", "-n", "1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    seen.push(lines.next().unwrap().unwrap()); // header
    seen.push(lines.next().unwrap().unwrap()); // a1
    assert_eq!(
        code(&e.run(&["audit", "append-test", "--count", "2", "--writer", "later"])),
        0
    );
    while !seen.iter().any(|l| l.starts_with("a3 ")) {
        seen.push(lines.next().unwrap().unwrap());
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        seen[1].starts_with("a1 ") && seen[1].contains("before"),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|l| l.starts_with("a2 ") && l.contains("later")),
        "{seen:?}"
    );
}

/// The state directory on a full 64 KiB tmpfs this test mounts: `airlock run`
/// refuses with a clear error, and the command does not run.
#[test]
fn a_full_disk_refuses_the_run_with_a_clear_error() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED: mounting a tmpfs needs root");
        return;
    }
    let e = env();
    let mnt = e.state.with_file_name("small");
    std::fs::create_dir_all(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(mounted.success());
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(mnt.clone());
    let state = mnt.join("state");
    let with_state = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .current_dir(&e.ws)
            .env("AIRLOCK_STATE_DIR", &state)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // Create every directory first, then fill what is left.
    assert_eq!(code(&with_state(&["audit", "append-test"])), 0);
    std::fs::create_dir_all(state.join("runs")).unwrap();
    let mut filler = std::fs::File::create(mnt.join("filler")).unwrap();
    use std::io::Write;
    while filler.write_all(&[b'x'; 4096]).is_ok() {}
    drop(filler);
    // The log file's last page may still have room: use it up.
    let mut filled = false;
    for _ in 0..200 {
        let out = with_state(&["audit", "append-test", "--pad", "512"]);
        if code(&out) != 0 {
            assert!(
                text(&out.stderr).contains("no space left on device"),
                "{}",
                text(&out.stderr)
            );
            filled = true;
            break;
        }
    }
    assert!(filled, "the 64k tmpfs never filled");
    let marker = e.ws.join("ran-marker");
    let out = with_state(&["run", "--apply", "-c", "echo ran > ran-marker"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no space left on device"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        !marker.exists(),
        "the command ran although it could not be logged"
    );
}

/// The record keeps the first AIRLOCK_AUDIT_OUTPUT_BYTES of stdout, and the
/// length and SHA-256 of all of it; env values never reach the log.
#[test]
fn execution_records_truncate_output_but_hash_the_whole_stream() {
    use sha2::Digest;
    let e = env();
    let big: String = (0..500)
        .map(|i| format!("line {i:04} of the output\n"))
        .collect();
    std::fs::write(e.ws.join("data.txt"), &big).unwrap();
    let out = e
        .cmd(&["run", "-c", "cat data.txt"])
        .env("AIRLOCK_AUDIT_OUTPUT_BYTES", "100")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), big, "the caller still gets all of it");
    let records = read_all(&e.audit_dir()).unwrap();
    let exec = records
        .iter()
        .find_map(|r| match &r.event {
            Event::Execution(x) => Some(x.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(exec.stdout.text, big[..100]);
    assert!(exec.stdout.truncated);
    assert_eq!(exec.stdout.bytes, big.len() as u64);
    assert_eq!(
        exec.stdout.sha256,
        hex::encode(sha2::Sha256::digest(big.as_bytes()))
    );
    assert_eq!(exec.stderr.bytes, 0);
}

#[test]
fn state_dir_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let e = env();
    assert_eq!(code(&e.run(&["audit", "append-test"])), 0);
    for dir in [e.state.clone(), e.audit_dir()] {
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700,
            "{}",
            dir.display()
        );
    }
    let _ = Path::new("/");
}

/// `audit tail -f` prints each record appended after it started, once, in
/// order (it reads back from the end only as far as it printed).
#[test]
fn tail_follow_prints_each_new_record_once() {
    let e = env();
    assert!(e.run(&["check", "--", "echo", "zero"]).status.success());
    // Into a file: a pipe nobody reads would fill and stop the follower.
    let out_path = e.state.parent().unwrap().join("follow.out");
    let mut follow = e
        .cmd(&["audit", "tail", "-n", "1", "-f", "--json"])
        .stdout(std::fs::File::create(&out_path).unwrap())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(400));
    for i in 0..100 {
        assert!(e
            .run(&["check", "--", "echo", &format!("n{i}")])
            .status
            .success());
    }
    std::thread::sleep(std::time::Duration::from_millis(800));
    follow.kill().unwrap();
    follow.wait().unwrap();
    let seqs: Vec<u64> = std::fs::read_to_string(&out_path)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let first = seqs[0];
    assert_eq!(seqs, (first..first + 101).collect::<Vec<_>>(), "{seqs:?}");
}
