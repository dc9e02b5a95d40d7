//! The egress proxy against real clients (curl, Python urllib, pip) and real TLS
//! servers on loopback, through the real relay.

mod common;

use airlock_netproxy::{blocked_summary, Decision, Protocol, Reason, ERROR_HEADER};
use common::{header, raw_proxy_request, relay_to, routes_with, Body, World};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::Arc;

fn curl(world: &World, args: &[&str]) -> std::process::Output {
    Command::new("curl")
        .args(["-sS", "--max-time", "20", "--noproxy", ""])
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("CURL_CA_BUNDLE", &world.tls.ca_pem_path)
        .output()
        .expect("curl is installed by scripts/test.d/00-setup.sh")
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// Environment a sandboxed program gets, pointing at the relay.
fn proxy_env(world: &World) -> Vec<(String, String)> {
    let mut env = airlock_sandbox::relay::proxy_env(world.relay.port(), world.relay.port());
    env.push((
        "SSL_CERT_FILE".into(),
        world.tls.ca_pem_path.display().to_string(),
    ));
    env.push((
        "PIP_CERT".into(),
        world.tls.ca_pem_path.display().to_string(),
    ));
    env.push(("PATH".into(), std::env::var("PATH").unwrap_or_default()));
    env.push(("HOME".into(), world.dir.path().display().to_string()));
    if let Ok(root) = std::env::var("PYENV_ROOT") {
        env.push(("PYENV_ROOT".into(), root));
    }
    env
}

#[test]
fn curl_https_via_connect_and_socks5h_and_plain_http() {
    let world = World::new(
        &["pypi.test", "plain.test:{http}"],
        &[],
        routes_with(vec![]),
    );
    let url = world.https_url("pypi.test", "/hello");
    let out = curl(&world, &["--proxy", &world.proxy_url(), &url]);
    assert_eq!(stdout(&out), "hello through airlock\n", "{out:?}");

    let socks = format!("socks5h://{}", world.relay);
    let out = curl(&world, &["--proxy", &socks, &url]);
    assert_eq!(stdout(&out), "hello through airlock\n", "{out:?}");

    let out = curl(
        &world,
        &[
            "--proxy",
            &world.proxy_url(),
            &world.http_url("plain.test", "/hello"),
        ],
    );
    assert_eq!(stdout(&out), "hello through airlock\n", "{out:?}");

    let entries = world.ctx().entries();
    let protocols: Vec<Protocol> = entries.iter().map(|e| e.protocol).collect();
    assert_eq!(
        protocols,
        vec![
            Protocol::HttpConnect,
            Protocol::Socks5,
            Protocol::HttpForward
        ],
        "{entries:#?}"
    );
    for e in &entries {
        assert_eq!(e.decision, Decision::Allowed, "{e:?}");
        assert_eq!(e.request_id, "r-test-1");
        assert!(
            e.bytes_down > 0 && e.bytes_up > 0,
            "bytes are counted: {e:?}"
        );
    }
    assert_eq!(
        entries[0].resolved.as_deref(),
        Some(world.https.addr.to_string().as_str())
    );
    // The server saw the real name in the TLS handshakes.
    assert_eq!(
        *world.https.seen.server_names.lock().unwrap(),
        vec!["pypi.test", "pypi.test"]
    );
}

#[test]
fn python_urllib_through_env_proxy() {
    let world = World::new(&["pypi.test"], &[], routes_with(vec![]));
    let url = world.https_url("pypi.test", "/hello");
    let script = format!("import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('{url}', timeout=20).read().decode())");
    let out = Command::new("python3")
        .args(["-c", &script])
        .env_clear()
        .envs(proxy_env(&world))
        .output()
        .unwrap();
    assert_eq!(
        stdout(&out),
        "hello through airlock\n",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let e = &world.ctx().entries()[0];
    assert_eq!(
        (e.protocol, e.decision, e.host.as_str()),
        (Protocol::HttpConnect, Decision::Allowed, "pypi.test")
    );
}

/// A wheel made here with Python's zipfile; returns (file name, bytes, sha256 hex).
fn build_wheel(dir: &std::path::Path) -> (String, Vec<u8>, String) {
    let name = "airlock_demo-1.0-py3-none-any.whl";
    let path = dir.join(name);
    let script = r#"
import zipfile, sys, hashlib, base64
path = sys.argv[1]
files = {
  "airlock_demo/__init__.py": b"VALUE = 42\n",
  "airlock_demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: airlock-demo\nVersion: 1.0\n",
  "airlock_demo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: airlock-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = ""
for n, d in files.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode()
    record += f"{n},sha256={h},{len(d)}\n"
record += "airlock_demo-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(path, "w") as z:
    for n, d in files.items():
        z.writestr(n, d)
    z.writestr("airlock_demo-1.0.dist-info/RECORD", record)
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&path).unwrap();
    let sha = Command::new("sha256sum").arg(&path).output().unwrap();
    let sha = stdout(&sha).split_whitespace().next().unwrap().to_string();
    (name.to_string(), bytes, sha)
}

#[test]
fn pip_download_from_a_local_index() {
    let scratch = tempfile::tempdir().unwrap();
    let (wheel, bytes, sha) = build_wheel(scratch.path());
    let index = format!("<!DOCTYPE html><html><body><a href=\"/files/{wheel}#sha256={sha}\">{wheel}</a></body></html>");
    let routes = routes_with(vec![
        (
            "/simple/airlock-demo/",
            Body::Bytes("text/html", index.into_bytes()),
        ),
        (
            Box::leak(format!("/files/{wheel}").into_boxed_str()),
            Body::Bytes("application/octet-stream", bytes.clone()),
        ),
    ]);
    let world = World::new(&["pypi.test"], &[], routes);
    let dest = scratch.path().join("dl");
    let out = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-cache-dir",
            "--disable-pip-version-check",
        ])
        .args([
            "--index-url",
            &world.https_url("pypi.test", "/simple/"),
            "-d",
        ])
        .arg(&dest)
        .arg("airlock-demo==1.0")
        .env_clear()
        .envs(proxy_env(&world))
        .env("PIP_CONFIG_FILE", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pip failed: {}\n{}",
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(dest.join(&wheel)).unwrap(),
        bytes,
        "the downloaded wheel is the one served"
    );
    let entries = world.ctx().entries();
    assert!(
        entries
            .iter()
            .all(|e| e.decision == Decision::Allowed && e.host == "pypi.test"),
        "{entries:#?}"
    );
    let requests = world.https.seen.requests.lock().unwrap().join("\n");
    assert!(
        requests.contains("GET /simple/airlock-demo/")
            && requests.contains(&format!("GET /files/{wheel}")),
        "{requests}"
    );
}

#[test]
fn refusals_are_clear_logged_and_never_reach_a_server() {
    let world = World::new(
        &["pypi.test", "*.cdn.test", "intranet.test"],
        &["bad.cdn.test"],
        routes_with(vec![]),
    );
    let port = world.https.addr.port();
    let internal_port = world.internal.addr.port();
    let cases = [
        (format!("evil.test:{port}"), "not_in_allowlist"),
        (format!("bad.cdn.test:{port}"), "denied_by_policy"),
        (format!("127.0.0.2:{port}"), "ip_literal_not_allowlisted"),
        (
            format!("[::ffff:127.0.0.2]:{port}"),
            "ip_literal_not_allowlisted",
        ),
        (format!("2130706434:{port}"), "bad_request"),
        (
            format!("intranet.test:{internal_port}"),
            "resolved_to_blocked_address",
        ),
    ];
    for (authority, code) in &cases {
        let head = raw_proxy_request(
            world.relay,
            &format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n"),
        );
        let status = head.lines().next().unwrap_or("");
        assert!(
            status.contains(" 403 ") || status.contains(" 400 "),
            "{authority}: {head}"
        );
        assert_eq!(
            header(&head, ERROR_HEADER),
            Some(*code),
            "{authority}: {head}"
        );
    }
    // Allowed by wildcard, for contrast.
    let ok = raw_proxy_request(
        world.relay,
        &format!("CONNECT good.cdn.test:{port} HTTP/1.1\r\n\r\n"),
    );
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");

    // Plain HTTP and SOCKS refusals too.
    let head = raw_proxy_request(
        world.relay,
        &format!("GET http://evil.test:{port}/ HTTP/1.1\r\nHost: evil.test:{port}\r\n\r\n"),
    );
    assert_eq!(
        header(&head, ERROR_HEADER),
        Some("not_in_allowlist"),
        "{head}"
    );
    let out = curl(
        &world,
        &[
            "--proxy",
            &format!("socks5h://{}", world.relay),
            &world.https_url("evil.test", "/hello"),
        ],
    );
    assert!(!out.status.success() && stdout(&out).is_empty(), "{out:?}");

    let entries = world.ctx().entries();
    let refused: Vec<(&str, Reason)> = entries
        .iter()
        .filter(|e| e.decision == Decision::Refused)
        .map(|e| (e.host.as_str(), e.reason))
        .collect();
    assert_eq!(
        refused,
        vec![
            ("evil.test", Reason::NotInAllowlist),
            ("bad.cdn.test", Reason::DeniedByPolicy),
            ("127.0.0.2", Reason::IpLiteralNotAllowlisted),
            ("127.0.0.2", Reason::IpLiteralNotAllowlisted),
            ("2130706434", Reason::BadRequest),
            ("intranet.test", Reason::ResolvedToBlockedAddress),
            ("evil.test", Reason::NotInAllowlist),
            ("evil.test", Reason::NotInAllowlist),
        ],
        "{entries:#?}"
    );
    let rebinding = entries
        .iter()
        .find(|e| e.reason == Reason::ResolvedToBlockedAddress)
        .unwrap();
    assert_eq!(rebinding.resolved.as_deref(), Some("127.0.0.9"));
    assert!(rebinding.detail.contains("loopback"), "{rebinding:?}");
    // Only the one allowed CONNECT reached the HTTPS server; the internal one saw nothing.
    assert_eq!(world.https.seen.tcp_accepted.load(Ordering::SeqCst), 1);
    assert_eq!(world.internal.seen.tcp_accepted.load(Ordering::SeqCst), 0);

    let summary = blocked_summary(&entries);
    assert!(summary.starts_with("blocked: evil.test:"), "{summary}");
    assert!(summary.contains("(not in allowlist) x3"), "{summary}");
    assert!(
        summary.contains(&format!("blocked: bad.cdn.test:{port} (denied by policy)")),
        "{summary}"
    );
    assert!(
        summary.contains(&format!(
            "blocked: intranet.test:{internal_port} (resolves to an internal address)"
        )),
        "{summary}"
    );
}

#[test]
fn connect_whose_sni_differs_is_cut_before_any_byte_goes_upstream() {
    let world = World::new(&["pypi.test"], &[], routes_with(vec![]));
    // curl cannot send a mismatching SNI; a rustls client over a raw CONNECT can.
    let port = world.https.addr.port();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(world.tls.ca_der.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let client_cfg = Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    );
    let relay = world.relay;
    let handshake = |sni: &'static str| {
        let cfg = client_cfg.clone();
        world.rt.block_on(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut tcp = tokio::net::TcpStream::connect(relay).await.unwrap();
            tcp.write_all(format!("CONNECT pypi.test:{port} HTTP/1.1\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut head = Vec::new();
            while !head.ends_with(b"\r\n\r\n") {
                let mut b = [0u8; 1];
                tcp.read_exact(&mut b).await.unwrap();
                head.push(b[0]);
            }
            assert!(
                head.starts_with(b"HTTP/1.1 200"),
                "{}",
                String::from_utf8_lossy(&head)
            );
            let name = rustls::pki_types::ServerName::try_from(sni).unwrap();
            tokio_rustls::TlsConnector::from(cfg)
                .connect(name, tcp)
                .await
                .map(|_| ())
        })
    };
    let refused = handshake("other.test");
    assert!(refused.is_err(), "a fronted handshake must fail");
    assert!(
        handshake("pypi.test").is_ok(),
        "the matching name still works"
    );

    let entries = world.ctx().entries();
    assert_eq!(entries.len(), 2, "{entries:#?}");
    assert_eq!(
        (entries[0].decision, entries[0].reason),
        (Decision::Refused, Reason::SniMismatch)
    );
    assert!(entries[0].detail.contains("other.test"), "{:?}", entries[0]);
    assert_eq!(
        entries[0].bytes_up, 0,
        "nothing of the fronted session went upstream"
    );
    assert_eq!(entries[1].decision, Decision::Allowed);
    // The server completed exactly one handshake, for the right name. (Its side
    // of the handshake may finish just after the client's: wait for it.)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while world.https.seen.tls_handshakes.load(Ordering::SeqCst) < 1
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(
        *world.https.seen.server_names.lock().unwrap(),
        vec!["pypi.test"]
    );
}

#[test]
fn plain_http_host_header_must_match_the_url() {
    let world = World::new(&["plain.test:{http}"], &[], routes_with(vec![]));
    let out = curl(
        &world,
        &[
            "-i",
            "--proxy",
            &world.proxy_url(),
            "-H",
            "Host: evil.test",
            &world.http_url("plain.test", "/hello"),
        ],
    );
    let text = stdout(&out);
    assert!(text.starts_with("HTTP/1.1 403"), "{text}");
    assert_eq!(
        header(&text, ERROR_HEADER),
        Some("host_header_mismatch"),
        "{text}"
    );
    assert_eq!(world.http.seen.tcp_accepted.load(Ordering::SeqCst), 0);
}

#[test]
fn contexts_are_separate_sockets_with_separate_rules_and_logs() {
    let world = World::new(&["pypi.test"], &[], routes_with(vec![]));
    let other = world.open_context("r-test-2", &["plain.test:{http}"], &[]);
    let other_relay = relay_to(other.socket_path());

    // Socket and directory are private to the owner.
    for (path, mode) in [
        (world.ctx().dir(), 0o700),
        (world.ctx().socket_path(), 0o600),
        (other.dir(), 0o700),
    ] {
        let got = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(got, mode, "{}", path.display());
    }
    assert_ne!(world.ctx().socket_path(), other.socket_path());
    // A request id cannot be opened twice.
    assert!(world
        .proxy
        .open(
            "r-test-2",
            world.config(&["evil.test"], &[]),
            &world.dir.path().join("proxy"),
            None
        )
        .is_err());

    // Context 1 allows pypi.test only; context 2 allows plain.test only.
    let https_url = world.https_url("pypi.test", "/hello");
    let http_url = world.http_url("plain.test", "/hello");
    let via = |relay: std::net::SocketAddr, url: &str| {
        stdout(&curl(&world, &["--proxy", &format!("http://{relay}"), url]))
    };
    assert_eq!(via(world.relay, &https_url), "hello through airlock\n");
    assert_eq!(via(other_relay, &http_url), "hello through airlock\n");
    assert_eq!(
        via(world.relay, &http_url),
        "airlock proxy: blocked: plain.test:".to_string()
            + &world.http.addr.port().to_string()
            + " (not in allowlist)\n"
    );
    assert!(
        via(other_relay, &https_url).is_empty(),
        "CONNECT refused: curl prints nothing"
    );

    let mine = world.ctx().entries();
    let theirs = other.entries();
    assert!(
        mine.iter().all(|e| e.request_id == "r-test-1")
            && theirs.iter().all(|e| e.request_id == "r-test-2")
    );
    assert_eq!(
        mine.iter()
            .map(|e| (e.host.as_str(), e.decision))
            .collect::<Vec<_>>(),
        vec![
            ("pypi.test", Decision::Allowed),
            ("plain.test", Decision::Refused)
        ]
    );
    assert_eq!(
        theirs
            .iter()
            .map(|e| (e.host.as_str(), e.decision))
            .collect::<Vec<_>>(),
        vec![
            ("plain.test", Decision::Allowed),
            ("pypi.test", Decision::Refused)
        ]
    );

    // Closing a context removes its socket; the other keeps working.
    let path = other.socket_path().to_path_buf();
    let final_log = other.close();
    assert_eq!(final_log.len(), 2);
    assert!(!path.exists());
    assert!(!stdout(&curl(
        &world,
        &["--proxy", &format!("http://{other_relay}"), &http_url]
    ))
    .contains("hello"));
    assert_eq!(via(world.relay, &https_url), "hello through airlock\n");
}

#[test]
fn grant_added_hosts_apply_to_their_context_only() {
    let world = World::new(&["pypi.test"], &[], routes_with(vec![]));
    let mut cfg = world.config(&["pypi.test"], &[]);
    cfg.add_granted(&["other.test"]).unwrap();
    let granted = world
        .proxy
        .open("r-granted", cfg, &world.dir.path().join("proxy"), None)
        .unwrap();
    let granted_relay = relay_to(granted.socket_path());
    let url = world.https_url("other.test", "/hello");
    let out = curl(
        &world,
        &["--proxy", &format!("http://{granted_relay}"), &url],
    );
    assert_eq!(stdout(&out), "hello through airlock\n", "{out:?}");
    let out = curl(&world, &["--proxy", &world.proxy_url(), &url]);
    assert!(stdout(&out).is_empty());
    assert_eq!(world.ctx().entries()[0].reason, Reason::NotInAllowlist);
    assert!(
        world.config(&[], &[]).add_granted(&["*.com"]).is_err(),
        "grants are validated like policy patterns"
    );
}
