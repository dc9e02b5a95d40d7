//! Plain-HTTP forwarding against an independent HTTP/1.1 server (Python's
//! http.server, `tests/support/http_origin.py`) with curl as the client, through
//! the real relay: connections kept across requests, request bodies (with
//! `Expect: 100-continue`, with Content-Length and chunked), chunked and
//! close-delimited responses, HEAD, HTTP/1.0, hop-by-hop fields, and requests
//! the proxy must refuse because they could be read two ways.

mod common;

use airlock_netproxy::{Decision, Protocol, Reason};
use common::{raw_proxy_request, routes_with, World};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The Python origin on 127.0.0.3 (the address `plain.test` maps to), killed on drop.
struct Origin {
    child: Child,
    port: u16,
}

impl Origin {
    fn start() -> Origin {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/http_origin.py");
        let mut child = Command::new("python3")
            .args([script, "127.0.0.3"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 is installed by scripts/test.d/00-setup.sh");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut line)
            .expect("the origin prints its port");
        let port = line.trim().parse().expect("a port number");
        Origin { child, port }
    }

    fn url(&self, path: &str) -> String {
        format!("http://plain.test:{}{path}", self.port)
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn curl(world: &World, args: &[&str]) -> std::process::Output {
    Command::new("curl")
        .args(["-sS", "--max-time", "20", "--proxy", &world.proxy_url()])
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .expect("curl is installed by scripts/test.d/00-setup.sh")
}

fn ok_stdout(o: &std::process::Output) -> Vec<u8> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o.stdout.clone()
}

fn forwarded(world: &World) -> usize {
    world
        .ctx()
        .entries()
        .iter()
        .filter(|e| e.protocol == Protocol::HttpForward && e.decision == Decision::Allowed)
        .count()
}

fn world() -> World {
    World::new(&["plain.test"], &[], routes_with(vec![]))
}

#[test]
fn one_connection_carries_several_requests_and_every_body_shape() {
    let world = world();
    let origin = Origin::start();

    // Two requests in one curl: the second reuses the program's connection
    // (no new connect), and each is its own decision in the log.
    let out = ok_stdout(&curl(
        &world,
        &[
            "-w",
            "[%{num_connects}]\\n",
            &origin.url("/hello"),
            &origin.url("/hello"),
        ],
    ));
    assert_eq!(String::from_utf8_lossy(&out), "hello\n[1]\nhello\n[0]\n");
    assert_eq!(forwarded(&world), 2);

    // A 2 MiB upload: curl sends `Expect: 100-continue`, waits for the interim
    // response the proxy passes on, then sends the body; the echo is exact.
    let dir = tempfile::tempdir().unwrap();
    let upload = dir.path().join("upload.bin");
    let body: Vec<u8> = (0..2 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(&upload, &body).unwrap();
    let data = format!("@{}", upload.display());
    let out = curl(
        &world,
        &["-v", "--data-binary", &data, &origin.url("/echo")],
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("HTTP/1.1 100 Continue"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        ok_stdout(&out) == body,
        "Content-Length upload echoed whole"
    );
    // The same body sent chunked.
    let out = curl(
        &world,
        &[
            "-H",
            "Transfer-Encoding: chunked",
            "--data-binary",
            &data,
            &origin.url("/echo"),
        ],
    );
    assert!(ok_stdout(&out) == body, "chunked upload echoed whole");

    // A chunked response, then a HEAD and a GET on the same connection.
    let out = ok_stdout(&curl(&world, &[&origin.url("/chunked?n=250000")]));
    assert_eq!(out, vec![b'c'; 250_000]);
    let out = ok_stdout(&curl(
        &world,
        &[
            "-I",
            "-w",
            "[%{num_connects}]",
            &origin.url("/hello"),
            "--next",
            "--proxy",
            &world.proxy_url(),
            "-w",
            "[%{num_connects}]",
            &origin.url("/hello"),
        ],
    ));
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("Content-Length: 6"), "{text}");
    assert!(text.ends_with("[1]hello\n[0]"), "{text}");

    // A body the server delimits by closing, and an HTTP/1.0 client.
    let out = ok_stdout(&curl(&world, &[&origin.url("/close")]));
    assert_eq!(out, b"until the end\n".repeat(1000));
    let out = ok_stdout(&curl(&world, &["--http1.0", &origin.url("/hello")]));
    assert_eq!(out, b"hello\n");
}

#[test]
fn hop_by_hop_fields_stay_with_the_proxy() {
    let world = world();
    let origin = Origin::start();
    let out = ok_stdout(&curl(
        &world,
        &[
            "-H",
            "Connection: X-Secret",
            "-H",
            "X-Secret: do-not-forward",
            "-H",
            "Proxy-Authorization: Basic c2VjcmV0",
            "-H",
            "X-Kept: yes",
            &origin.url("/headers"),
        ],
    ));
    let seen: Vec<(String, String)> = serde_json::from_slice(&out).unwrap();
    let get = |name: &str| {
        seen.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(get("x-kept"), Some("yes"));
    assert_eq!(get("x-secret"), None, "{seen:?}");
    assert_eq!(get("proxy-authorization"), None, "{seen:?}");
    assert_eq!(get("connection"), Some("close"), "{seen:?}");
    assert_eq!(
        get("host"),
        Some(format!("plain.test:{}", origin.port).as_str())
    );
}

#[test]
fn requests_that_could_be_read_two_ways_are_refused_before_the_server() {
    let world = world();
    let origin = Origin::start();
    let port = origin.port;
    for (request, why) in [
        (
            format!(
                "POST http://plain.test:{port}/echo HTTP/1.1\r\nHost: plain.test:{port}\r\n\
                 Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
            ),
            "both Content-Length and Transfer-Encoding",
        ),
        (
            format!(
                "POST http://plain.test:{port}/echo HTTP/1.1\r\nHost: plain.test:{port}\r\n\
                 Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"
            ),
            "Content-Length values differ",
        ),
        (
            format!(
                "POST http://plain.test:{port}/echo HTTP/1.1\r\nHost: plain.test:{port}\r\n\
                 Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"
            ),
            "a transfer coding other than chunked",
        ),
        (
            format!(
                "GET http://plain.test:{port}/hello HTTP/1.1\r\nHost: plain.test:{port}\r\n\
                 Host: other.test\r\n\r\n"
            ),
            "differs from URL host",
        ),
        (
            format!("GET http://plain.test@evil.test:{port}/ HTTP/1.1\r\nHost: evil.test\r\n\r\n"),
            "user information",
        ),
    ] {
        let head = raw_proxy_request(world.relay, &request);
        assert!(
            head.starts_with("HTTP/1.1 400") || head.starts_with("HTTP/1.1 403"),
            "{request}: {head}"
        );
        let logged = world.ctx().entries();
        let last = logged.last().expect("every refusal is logged");
        assert!(last.detail.contains(why), "{request}: {last:?}");
        assert!(matches!(
            last.reason,
            Reason::BadRequest | Reason::HostHeaderMismatch
        ));
    }
    // A refused upload still gets its answer while the body is on its way (no
    // `Expect`: curl sends the 4 MiB at once), and the refusal is logged.
    let dir = tempfile::tempdir().unwrap();
    let upload = dir.path().join("upload.bin");
    std::fs::write(&upload, vec![7u8; 4 << 20]).unwrap();
    let out = curl(
        &world,
        &[
            "-H",
            "Expect:",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--data-binary",
            &format!("@{}", upload.display()),
            &format!("http://evil.test:{port}/echo"),
        ],
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "403", "{out:?}");
    assert_eq!(
        world.ctx().entries().last().map(|e| e.reason),
        Some(Reason::NotInAllowlist)
    );

    // None of them reached the server.
    let count = ok_stdout(&curl(&world, &[&origin.url("/count")]));
    assert_eq!(count, b"0");
}

#[test]
fn a_program_on_the_unix_socket_itself_is_forwarded_too() {
    use std::io::{Read, Write};
    let world = world();
    let origin = Origin::start();
    // A connection to the context's socket itself (no relay, no handed-over TCP
    // socket) takes the same path: heads, framing and the connection log.
    let mut s = std::os::unix::net::UnixStream::connect(world.ctx().socket_path()).unwrap();
    write!(
        s,
        "GET {url} HTTP/1.1\r\nHost: plain.test:{port}\r\nConnection: close\r\n\r\n",
        url = origin.url("/chunked?n=300000"),
        port = origin.port
    )
    .unwrap();
    let mut response = Vec::new();
    s.read_to_end(&mut response).unwrap();
    let text = String::from_utf8_lossy(&response);
    assert!(
        text.starts_with("HTTP/1.1 200"),
        "{}",
        &text[..80.min(text.len())]
    );
    assert!(text.contains("Connection: close\r\n"));
    let body_start = text.find("\r\n\r\n").unwrap() + 4;
    // The chunked framing passes as it came: 300 chunks of 1000 bytes, then the trailer.
    let body = &response[body_start..];
    assert_eq!(body.iter().filter(|&&b| b == b'c').count(), 300_000);
    assert!(body.ends_with(b"0\r\nX-Trailer: yes\r\n\r\n"));
    assert_eq!(forwarded(&world), 1);
}
