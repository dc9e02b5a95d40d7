//! `airlock run --server`: the CLI handing its run to a running `airlock serve`
//! (real binaries, real sandboxes from the server's warm pool). What it must
//! keep from a cold run: the bytes of the output, the exit status, the
//! refusals, the command's stdin; what it must never do: fall back to a
//! sandbox of its own, drop a stdin it cannot carry, or trust a socket another
//! user serves.

mod serve_support;

use serve_support::*;
use std::process::{Command, Output, Stdio};

/// A server on policy-a (local tenant: the unix socket only) with one warm sandbox.
fn start() -> Server {
    Server::start(&["--policy", "policy-a.toml", "--pool", "1"])
}

fn client(server: &Server) -> Command {
    let mut c = Command::new(bin());
    c.current_dir(server.ws())
        .env("AIRLOCK_STATE_DIR", server.state())
        .env_remove("AIRLOCK_SERVER")
        .env_remove("AIRLOCK_POLICY")
        .stdin(Stdio::null());
    c
}

fn run(server: &Server, args: &[&str]) -> Output {
    let flag = format!("--server={}", server.socket.display());
    client(server)
        .arg("run")
        .arg(flag)
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn executions(server: &Server) -> usize {
    audit_records(&server.state())
        .iter()
        .filter(|r| r["kind"] == "execution")
        .count()
}

#[test]
fn output_bytes_and_exit_status_are_a_cold_runs() {
    let server = start();
    let code = "import sys; sys.stdout.buffer.write(bytes(range(256))); \
                sys.stderr.write('to stderr\\n'); sys.exit(3)";
    let out = run(&server, &["--", "python3", "-c", code]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    // Every byte, invalid UTF-8 and NUL included: a pipe gets what the command wrote.
    assert_eq!(out.stdout, (0u8..=255).collect::<Vec<u8>>());
    assert!(text(&out.stderr).contains("to stderr"));

    let out = run(&server, &["--json", "--", "echo", "hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "ran");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["stdout"], "hi\n");
    assert_eq!(v["audit_ids"].as_array().unwrap().len(), 2, "{v}");
    // The server names the backend it ran on; its host's sandbox mode is its own.
    assert_eq!(v["backend"], "native", "{v}");
    assert!(v["sandbox_mode"].is_null(), "{v}");

    let out = run(&server, &["-c", "echo a && echo b"]);
    assert_eq!(text(&out.stdout), "a\nb\n", "{}", text(&out.stderr));
}

#[test]
fn denial_and_kills_keep_their_exit_statuses() {
    let server = start();
    let out = run(&server, &["--", "curl", "http://127.0.0.1:9/"]);
    assert_eq!(out.status.code(), Some(77), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("denied"),
        "{}",
        text(&out.stderr)
    );

    let out = run(&server, &["--timeout", "1s", "--", "sleep", "30"]);
    assert_eq!(out.status.code(), Some(124), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("wall-clock timeout") && err.contains("server"),
        "{err}"
    );
}

/// A `--timeout` longer than the server's policy is refused, as a cold run
/// refuses it, not shortened to the policy's behind the caller's back.
#[test]
fn a_timeout_longer_than_the_servers_policy_is_refused() {
    let server = start();
    let before = audit_records(&server.state()).len();
    let out = run(&server, &["--timeout", "1h", "--", "echo", "ran"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "", "nothing ran");
    let err = text(&out.stderr);
    assert!(
        err.contains("timeout_above_policy") && err.contains("limits.timeout"),
        "{err}"
    );
    assert_eq!(
        audit_records(&server.state()).len(),
        before,
        "nothing judged"
    );
}

#[test]
fn flags_the_server_cannot_honour_are_refused_before_anything_is_sent() {
    let server = start();
    let before = audit_records(&server.state()).len();
    for flag in [
        &["--memory", "64MiB"][..],
        &["--network", "none"],
        &["--policy", "x.toml"],
        &["--backend", "native"],
        &["--apply"],
        &["--wait-approval=1m"],
        &["--ask"],
    ] {
        let mut args = flag.to_vec();
        args.extend(["--", "true"]);
        let out = run(&server, &args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag:?}: {err}");
        let name = flag[0].split('=').next().unwrap();
        assert!(
            err.contains(name) && err.contains("Hint:"),
            "{flag:?}: {err}"
        );
    }
    assert_eq!(audit_records(&server.state()).len(), before);
}

/// `airlock run --server ARGS` with `input` piped to it.
fn with_stdin(server: &Server, args: &[&str], input: &[u8]) -> Output {
    let flag = format!("--server={}", server.socket.display());
    let mut child = client(server)
        .args(["run", &flag])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let _ = child.stdin.take().unwrap().write_all(input);
    }
    child.wait_with_output().unwrap()
}

#[test]
fn stdin_reaches_the_command_as_in_a_cold_run() {
    let server = start();
    let out = with_stdin(&server, &["--", "cat"], b"data for cat\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "data for cat\n");
    // The audit trail records what went in, as it does what came out.
    let records = audit_records(&server.state());
    let exec = records.iter().rfind(|r| r["kind"] == "execution").unwrap();
    assert_eq!(exec["stdin"]["text"], "data for cat\n", "{exec}");
    assert_eq!(exec["stdin"]["bytes"], 13);
    assert_eq!(exec["stdin"]["source"], "request");

    // --stdin FILE, as a cold run takes it (this process's stdin is ignored).
    let file = server.ws().join("stdin-file.txt");
    std::fs::write(&file, "from the file\n").unwrap();
    let path = file.to_str().unwrap();
    let out = with_stdin(&server, &["--stdin", path, "--", "cat"], b"not this\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "from the file\n");
    assert_eq!(executions(&server), 2);
}

/// Stdin is data: a shell that would read its program from it gets the
/// gate's `on_unknown`, as with a cold run's pipe, since the gate judges only
/// the command line. Asserted on the workspace: the program never ran.
#[test]
fn a_shell_never_takes_its_program_from_the_stdin_a_request_brings() {
    let server = start();
    for argv in [&["bash"][..], &["sh"], &["bash", "-s"]] {
        let mut args = vec!["--"];
        args.extend_from_slice(argv);
        let out = with_stdin(&server, &args, b"touch planted-by-stdin\n");
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(77), "{argv:?}: {err}");
        assert!(err.contains("standard input"), "{argv:?}: {err}");
    }
    assert!(!server.ws().join("planted-by-stdin").exists());
    assert_eq!(executions(&server), 0, "nothing ran");
}

#[test]
fn a_stdin_it_cannot_carry_is_refused_not_dropped() {
    let server = start();
    // The API carries stdin as text: bytes that are not UTF-8 are refused
    // before anything is sent, with the way that works.
    let out = with_stdin(&server, &["--", "cat"], b"ok\xff\xfe binary\n");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("UTF-8") && err.contains("Hint:") && err.contains("without --server"),
        "{err}"
    );
    assert!(out.stdout.is_empty());

    // More than the server's request limit (1 MiB by default): its refusal
    // comes through, not a broken pipe, with what would work.
    let big = vec![b'a'; 2 << 20];
    let out = with_stdin(&server, &["--", "cat"], &big);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("payload_too_large") && err.contains("--max-body"),
        "{err}"
    );
    assert_eq!(executions(&server), 0, "nothing ran");
}

#[test]
fn without_a_server_it_fails_and_never_builds_a_sandbox_itself() {
    let server = start();
    let elsewhere = server.dir.path().join("elsewhere-state");
    let missing = server.dir.path().join("no-such.sock");
    let out = client(&server)
        .env("AIRLOCK_STATE_DIR", &elsewhere)
        .env("AIRLOCK_SERVER", &missing)
        .args(["run", "--", "touch", "made-here"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot reach an airlock server") && err.contains("Hint:"),
        "{err}"
    );
    // No local run: no state directory, no audit record, no file.
    assert!(!elsewhere.exists());
    assert!(!server.ws().join("made-here").exists());
    assert_eq!(executions(&server), 0);
}

#[test]
fn airlock_server_in_the_environment_selects_the_server() {
    let server = start();
    let out = client(&server)
        .env("AIRLOCK_SERVER", &server.socket)
        .args(["run", "--", "echo", "via env"])
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "via env\n", "{}", text(&out.stderr));
    assert_eq!(executions(&server), 1);
}

#[test]
fn every_execution_record_is_in_a_verified_trail_after_shutdown() {
    let mut server = start();
    for i in 0..5 {
        let out = run(&server, &["--", "echo", &i.to_string()]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let (status, err) = server.stop();
    assert!(status.success(), "{err}");
    assert_eq!(executions(&server), 5);
    let out = Command::new(bin())
        .args(["audit", "verify"])
        .env("AIRLOCK_STATE_DIR", server.state())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Root only: it needs a second user to serve the socket.
#[test]
fn a_socket_another_user_serves_is_not_trusted() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: needs root to serve a socket as another user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let socket = dir.path().join("fake.sock");
    // A stand-in server as nobody: it answers every request with a run that
    // "printed" FAKE-OUTPUT and exited 0.
    let fake = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4)
print("ready", flush=True)
while True:
    c, _ = s.accept(); c.recv(65536)
    body = b'{"type":"stdout","data_base64":"RkFLRS1PVVRQVVQK"}\n'
    c.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body) + body); c.close()
"#;
    let mut server = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            fake,
        ])
        .arg(&socket)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "ready");
    let out = Command::new(bin())
        .args([
            "run",
            &format!("--server={}", socket.display()),
            "--",
            "true",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("uid 65534"), "{err}");
    assert!(!text(&out.stdout).contains("FAKE-OUTPUT"));
}

/// The execution record of the run whose command line is `argv`, waited for.
fn execution_of(server: &Server, argv: &[&str]) -> serde_json::Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let found = audit_records(&server.state()).into_iter().find(|r| {
            r["kind"] == "execution" && r["request"]["command"]["argv"] == serde_json::json!(argv)
        });
        if let Some(r) = found {
            return r;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no execution record for {argv:?}: {}",
            server.stderr()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Whether a process runs this exact command line.
fn running(cmdline: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| {
                c.split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .collect::<Vec<_>>()
                    .join(&b' ')
                    == cmdline.as_bytes()
            })
            .unwrap_or(false)
    })
}

#[test]
fn an_interrupted_client_stops_the_run_in_the_server() {
    let server = start();
    let flag = format!("--server={}", server.socket.display());
    let mut child = client(&server)
        .args(["run", &flag, "--", "sleep", "41"])
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !running("sleep 41") {
        assert!(t0.elapsed().as_secs() < 10, "the command never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let _ = child.wait();
    let record = execution_of(&server, &["sleep", "41"]);
    assert_eq!(record["outcome"]["killed_by"], "cancelled", "{record}");
    assert!(!running("sleep 41"), "the sandbox still runs");
    assert!(t0.elapsed().as_secs() < 10);
}

#[test]
fn a_plain_run_request_whose_client_leaves_is_cancelled_too() {
    use std::io::Write;
    let server = start();
    let body = r#"{"argv":["sleep","42"]}"#;
    let mut s = std::os::unix::net::UnixStream::connect(&server.socket).unwrap();
    write!(
        s,
        "POST /v1/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let t0 = std::time::Instant::now();
    while !running("sleep 42") {
        assert!(t0.elapsed().as_secs() < 10, "the command never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    drop(s);
    let record = execution_of(&server, &["sleep", "42"]);
    assert_eq!(record["outcome"]["killed_by"], "cancelled", "{record}");
    assert!(!running("sleep 42"));
}

#[test]
fn an_empty_airlock_server_means_no_server() {
    let server = start();
    let out = client(&server)
        .env("AIRLOCK_SERVER", "")
        .args(["run", "--policy", "../policy-a.toml", "--", "echo", "cold"])
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "cold\n", "{}", text(&out.stderr));
    assert_eq!(
        executions(&server),
        1,
        "a cold run, recorded in the same state directory"
    );
}
