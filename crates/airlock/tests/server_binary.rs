//! `airlock serve` and `airlock mcp` run in `airlock-serve`, next to `airlock`
//! (src/server_binary.rs): the hand-over keeps the process, a missing server
//! binary is a refusal that says how to get it, and `airlock` itself carries
//! none of the server's protocol stacks (what keeps `airlock run`'s start small).

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn front() -> &'static str {
    env!("CARGO_BIN_EXE_airlock")
}

fn server() -> &'static str {
    env!("CARGO_BIN_EXE_airlock-serve")
}

fn wait_for(path: &Path, child: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the server exited before listening: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A temporary directory with a workspace (the server's current directory,
/// which must not hold the state directory), a state directory and a socket.
struct Site {
    dir: tempfile::TempDir,
    socket: PathBuf,
    ws: PathBuf,
}

impl Site {
    fn new() -> Site {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("s.sock");
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        Site { dir, socket, ws }
    }

    /// `exe serve --socket` on this site, stdin closed.
    fn serve(&self, exe: &str) -> Command {
        let mut c = Command::new(exe);
        c.args(["serve", "--socket"])
            .arg(&self.socket)
            .env("AIRLOCK_STATE_DIR", self.dir.path().join("state"))
            .current_dir(&self.ws)
            .stdin(Stdio::null());
        c
    }

    /// [`Site::serve`] started with its output discarded.
    fn spawn(&self, exe: &str) -> Child {
        self.serve(exe)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }
}

/// SIGTERM, then the server must exit 0 (it drained and stopped), not die of
/// the signal; `what` says which stop failed.
fn stop_cleanly(mut child: Child, what: &str) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "{what}: {status:?} (signal {:?})",
        status.signal()
    );
}

#[test]
fn serve_becomes_airlock_serve_in_the_same_process() {
    let site = Site::new();
    let mut child = site.spawn(front());
    wait_for(&site.socket, &mut child);
    let exe = std::fs::read_link(format!("/proc/{}/exe", child.id())).unwrap();
    assert_eq!(
        exe.file_name().and_then(|n| n.to_str()),
        Some("airlock-serve"),
        "the pid `airlock serve` returned is the server: {}",
        exe.display()
    );
    stop_cleanly(
        child,
        "SIGTERM to the pid `airlock serve` returned stops the server cleanly",
    );
}

#[test]
fn without_airlock_serve_beside_it_serve_is_refused_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("airlock");
    std::fs::copy(front(), &alone).unwrap();
    for sub in ["serve", "mcp"] {
        let out = Command::new(&alone)
            .arg(sub)
            .env("AIRLOCK_STATE_DIR", dir.path().join("state"))
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{sub}: {err}");
        assert!(
            err.contains("run in airlock-serve, which is not next to")
                && err.contains("Hint:")
                && err.contains("cargo install --locked --path crates/airlock"),
            "{sub}: {err}"
        );
        assert!(
            out.stdout.is_empty(),
            "{sub}: nothing on stdout (MCP's channel)"
        );
    }
    assert!(
        !dir.path().join("state/airlock.sock").exists(),
        "nothing listens"
    );
    // Its own help still works: the subcommands are parsed by airlock.
    let out = Command::new(&alone)
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("--socket"));
}

#[test]
fn airlock_does_not_carry_the_mcp_server() {
    // A string of the MCP protocol (rmcp's), present wherever the server is
    // linked in, debug or release.
    let needle = b"notifications/initialized";
    let has = |bin: &str| {
        let bytes = std::fs::read(bin).unwrap();
        bytes.windows(needle.len()).any(|w| w == needle)
    };
    assert!(has(server()), "the probe string names the MCP server");
    assert!(
        !has(front()),
        "airlock links the MCP server again: every `airlock run` would pay to load it \
         (src/server_binary.rs)"
    );
}

/// A supervisor may stop the server the moment its socket appears: SIGTERM is
/// caught from before the socket exists, so the server drains, exits 0 and
/// removes its socket instead of dying of the signal's default action.
#[test]
fn sigterm_as_soon_as_the_socket_exists_is_a_clean_stop() {
    for round in 0..5 {
        let site = Site::new();
        let mut child = site.spawn(server());
        let deadline = Instant::now() + Duration::from_secs(20);
        while !site.socket.exists() {
            assert!(Instant::now() < deadline, "the socket never appeared");
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the server exited before listening: {status}");
            }
            std::thread::yield_now();
        }
        stop_cleanly(
            child,
            &format!("round {round}: SIGTERM right after the socket appeared"),
        );
        assert!(
            !site.socket.exists(),
            "round {round}: the socket was left behind"
        );
    }
}

/// A second server on a socket another one listens on is refused, and leaves
/// that socket in place: the file is removed only by the server that bound it.
#[test]
fn a_refused_second_server_leaves_the_first_ones_socket() {
    let site = Site::new();
    let mut first = site.spawn(server());
    wait_for(&site.socket, &mut first);
    let second = site.serve(server()).output().unwrap();
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(err.contains("another server is already listening"), "{err}");
    assert!(
        std::os::unix::net::UnixStream::connect(&site.socket).is_ok(),
        "the first server's socket was removed by the refused one"
    );
    stop_cleanly(first, "the first server, after the refusal");
}

/// A line that is not JSON gets JSON-RPC's parse error on stdout, not
/// silence, and the session goes on: the next request is answered.
#[test]
fn mcp_over_stdio_answers_a_line_it_cannot_parse() {
    use std::io::{BufRead, BufReader, Write};
    let site = Site::new();
    let mut child = Command::new(front())
        .arg("mcp")
        .env("AIRLOCK_STATE_DIR", site.dir.path().join("state"))
        .current_dir(&site.ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{not json\n[1, 2]\n").unwrap();
    stdin
        .write_all(
            br#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}
"#,
        )
        .unwrap();
    stdin.flush().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut got: Vec<serde_json::Value> = Vec::new();
    for _ in 0..3 {
        let line = lines.next().expect("a line").unwrap();
        got.push(serde_json::from_str(&line).unwrap());
    }
    drop(stdin);
    let codes: Vec<i64> = got
        .iter()
        .filter_map(|v| v["error"]["code"].as_i64())
        .collect();
    assert!(
        codes.contains(&-32700) && codes.contains(&-32600),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|v| v["id"] == 7 && v["result"]["serverInfo"]["name"] == "airlock"),
        "{got:?}"
    );
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}

/// A line that is not UTF-8, and one longer than the limit for a message
/// (the HTTP body limit, 1 MiB), each get JSON-RPC's parse error, and the
/// session goes on: the next request is answered.
#[test]
fn mcp_over_stdio_survives_invalid_utf8_and_overlong_lines() {
    use std::io::{BufRead, BufReader, Write};
    let site = Site::new();
    let mut child = Command::new(front())
        .arg("mcp")
        .env("AIRLOCK_STATE_DIR", site.dir.path().join("state"))
        .current_dir(&site.ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"x\":\"\xff\xfe\"}\n")
            .unwrap();
        let mut long = vec![b' '; (1 << 20) + 10];
        long.push(b'\n');
        stdin.write_all(&long).unwrap();
        stdin
            .write_all(
                br#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}
"#,
            )
            .unwrap();
        stdin.flush().unwrap();
        stdin
    });
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut got: Vec<serde_json::Value> = Vec::new();
    for _ in 0..3 {
        let line = lines.next().expect("a line").unwrap();
        got.push(serde_json::from_str(&line).unwrap());
    }
    drop(writer.join().unwrap());
    let parse_errors: Vec<&str> = got
        .iter()
        .filter(|v| v["error"]["code"] == -32700 && v["id"].is_null())
        .filter_map(|v| v["error"]["message"].as_str())
        .collect();
    assert_eq!(parse_errors.len(), 2, "{got:?}");
    assert!(parse_errors[0].contains("not valid UTF-8"), "{got:?}");
    assert!(
        parse_errors[1].contains("longer than 1048576 bytes"),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|v| v["id"] == 7 && v["result"]["serverInfo"]["name"] == "airlock"),
        "{got:?}"
    );
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}
