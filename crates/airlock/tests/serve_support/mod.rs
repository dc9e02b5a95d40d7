//! Shared by the `serve_*` tests: start the real `airlock serve` binary on a
//! temporary state directory and workspace, and talk to it with a real HTTP
//! client (hyper) over its unix socket or loopback TCP.
#![allow(dead_code)]

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::Request;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const TOKEN_A: &str = "token-agent-a-0123456789";
pub const TOKEN_B: &str = "token-agent-b-0123456789";
pub const TOKEN_HUMAN: &str = "token-human-0123456789ab";
/// A second agent under agent-a's policy: another tenant all the same.
pub const TOKEN_C: &str = "token-agent-c-0123456789";

/// agent-a may cat; agent-b may not (multi-tenancy). Touching `approved.txt`
/// needs a person.
pub const POLICY_A: &str = r#"
[workspace]
root = "ws"
mode = "overlay"
[network]
mode = "none"
[commands]
allow = ["ls", "cat", "echo", "python3", "sleep", "true", "touch", "printf", "head", "seq"]
approval = ["touch approved.txt"]
on_unknown = "deny"
[limits]
timeout = "20s"
"#;

pub const POLICY_B: &str = r#"
[workspace]
root = "ws"
mode = "overlay"
[network]
mode = "none"
[commands]
allow = ["ls", "echo", "true", "sleep"]
deny = ["cat"]
on_unknown = "deny"
"#;

pub struct Server {
    pub dir: tempfile::TempDir,
    pub child: Child,
    pub socket: PathBuf,
    pub tcp: Option<String>,
    pub stderr_path: PathBuf,
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_airlock")
}

/// Lay out a temp dir: state/, ws/ (with data.csv), policies and a tokens file.
pub fn layout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("ws")).unwrap();
    std::fs::write(root.join("ws/data.csv"), "name,qty\napple,3\npear,5\n").unwrap();
    std::fs::write(root.join("policy-a.toml"), POLICY_A).unwrap();
    std::fs::write(root.join("policy-b.toml"), POLICY_B).unwrap();
    let b_hash = {
        use std::io::Write;
        let mut child = Command::new("sha256sum")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(TOKEN_B.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8(out.stdout)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .to_string()
    };
    let tokens = format!(
        "[[token]]\nname = \"agent-a\"\ntoken = \"{TOKEN_A}\"\npolicy = \"policy-a.toml\"\n\n\
         [[token]]\nname = \"agent-b\"\nsha256 = \"{b_hash}\"\npolicy = \"policy-b.toml\"\n\n\
         [[token]]\nname = \"agent-c\"\ntoken = \"{TOKEN_C}\"\npolicy = \"policy-a.toml\"\n\n\
         [[token]]\nname = \"human\"\ntoken = \"{TOKEN_HUMAN}\"\npolicy = \"policy-a.toml\"\nrole = \"approver\"\ntenants = [\"agent-a\", \"agent-b\"]\n"
    );
    std::fs::write(root.join("tokens.toml"), tokens).unwrap();
    std::fs::set_permissions(
        root.join("tokens.toml"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    dir
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Server {
    /// Start `airlock serve` with these extra arguments, in a fresh layout.
    pub fn start(extra: &[&str]) -> Server {
        Server::start_in(layout(), extra)
    }

    pub fn start_in(dir: tempfile::TempDir, extra: &[&str]) -> Server {
        Server::start_with_env(dir, extra, &[])
    }

    /// Start in `dir` with extra arguments and environment variables.
    pub fn start_with_env(
        dir: tempfile::TempDir,
        extra: &[&str],
        envs: &[(&str, &std::ffi::OsStr)],
    ) -> Server {
        let socket = dir.path().join("state/airlock.sock");
        let stderr_path = dir.path().join("serve.stderr");
        let tcp = extra
            .iter()
            .position(|a| *a == "--listen")
            .map(|i| extra[i + 1].to_string());
        let child = Command::new(bin())
            .arg("serve")
            .args(extra)
            .current_dir(dir.path())
            .env("AIRLOCK_STATE_DIR", dir.path().join("state"))
            .env_remove("AIRLOCK_POLICY")
            .env_remove("AIRLOCK_TOKENS")
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr_path).unwrap())
            .spawn()
            .unwrap();
        let server = Server {
            dir,
            child,
            socket,
            tcp,
            stderr_path,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if std::os::unix::net::UnixStream::connect(&server.socket).is_ok() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "server did not start: {}",
                server.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    pub fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// SIGTERM and wait for a clean exit (status 0).
    pub fn stop(&mut self) -> (std::process::ExitStatus, String) {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        let status = self.child.wait().unwrap();
        let err = self.stderr();
        (status, err)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

pub enum Target<'a> {
    Unix(&'a Path),
    Tcp(&'a str),
}

pub async fn request(
    target: Target<'_>,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> Reply {
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost");
    if let Some(t) = token {
        builder = builder.header("authorization", format!("Bearer {t}"));
    }
    if body.is_some() {
        builder = builder.header("content-type", "application/json");
    }
    let req = builder
        .body(Full::new(Bytes::from(body.unwrap_or("").to_string())))
        .unwrap();
    match target {
        Target::Unix(p) => request_unix(p, req).await,
        Target::Tcp(addr) => {
            let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            reply(send(hyper_util::rt::TokioIo::new(stream), req).await).await
        }
    }
}

/// A request with no body to the server's unix socket `sock`, as `token`.
pub async fn unix(sock: &Path, method: &str, path: &str, token: Option<&str>) -> Reply {
    request(Target::Unix(sock), method, path, token, None).await
}

/// `GET path` on the server's unix socket `sock`, as `token`.
pub async fn get(sock: &Path, path: &str, token: Option<&str>) -> Reply {
    unix(sock, "GET", path, token).await
}

/// `POST path` with the JSON `body` on the server's unix socket `sock`, as `token`.
pub async fn post(sock: &Path, path: &str, token: Option<&str>, body: &str) -> Reply {
    request(Target::Unix(sock), "POST", path, token, Some(body)).await
}

/// Sends `req` as it is over a new connection to the unix socket `socket`.
pub async fn request_unix(socket: &Path, req: Request<Full<Bytes>>) -> Reply {
    let stream = tokio::net::UnixStream::connect(socket).await.unwrap();
    reply(send(hyper_util::rt::TokioIo::new(stream), req).await).await
}

/// The whole response.
async fn reply(response: hyper::Response<hyper::body::Incoming>) -> Reply {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    Reply {
        status,
        headers,
        body,
    }
}

async fn send<I>(io: I, req: Request<Full<Bytes>>) -> hyper::Response<hyper::body::Incoming>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
    tokio::spawn(conn);
    sender.send_request(req).await.unwrap()
}

/// A streaming request: returns each body frame with the time it arrived.
pub async fn stream(
    socket: &Path,
    path: &str,
    token: &str,
    body: &str,
) -> (u16, Vec<(Instant, Bytes)>) {
    let req = Request::builder()
        .method("POST")
        .uri(path)
        .header("host", "localhost")
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let stream = tokio::net::UnixStream::connect(socket).await.unwrap();
    let mut response = send(hyper_util::rt::TokioIo::new(stream), req).await;
    let status = response.status().as_u16();
    let mut frames = Vec::new();
    while let Some(frame) = response.body_mut().frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            frames.push((Instant::now(), data));
        }
    }
    (status, frames)
}

/// Processes whose parent is `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(
                    text.split_whitespace()
                        .filter_map(|p| p.parse::<u32>().ok()),
                );
            }
        }
    }
    out
}

/// Audit records of the server's log (all files), parsed.
pub fn audit_records(state: &Path) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(state.join("audit"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    for f in files
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
    {
        for line in std::fs::read_to_string(f).unwrap().lines() {
            out.push(serde_json::from_str(line).unwrap());
        }
    }
    out
}
