//! Finding 4 of issue 13: an allowlisted name that resolves to an address
//! assigned to the host (not a private range) must not reach the host's own
//! services. The test makes its own network namespace (`unshare --net`, the test
//! binary re-executed inside it), adds 100.128.0.9 (outside every refused range)
//! to the namespace's loopback interface, serves on 0.0.0.0 and asks the proxy for it.
//! Nothing leaves that namespace; the host's interfaces are never touched.

use airlock_netproxy::{ContextConfig, EgressProxy, Reason};
use std::io::{Read, Write};
use std::net::IpAddr;
use std::os::unix::net::UnixStream;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const INNER: &str = "AIRLOCK_HOST_ADDRESS_TEST_INNER";
const HOST_ADDR: &str = "100.128.0.9";

#[test]
fn an_address_of_the_host_is_refused_even_when_public() {
    if std::env::var_os(INNER).is_some() {
        return inner();
    }
    let out = Command::new("unshare")
        .args(["--net", "--"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "an_address_of_the_host_is_refused_even_when_public",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(INNER, "1")
        .output()
        .expect("unshare (util-linux) makes the network namespace");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("host-address checks done"), "{text}");
}

fn ip(args: &[&str]) {
    let st = Command::new("ip").args(args).status().expect("iproute2");
    assert!(st.success(), "ip {args:?}");
}

/// CONNECT through the context's socket; the proxy's status line and error code.
fn connect(socket: &std::path::Path, port: u16) -> (String, String) {
    let mut s = UnixStream::connect(socket).unwrap();
    write!(
        s,
        "CONNECT svc.test:{port} HTTP/1.1\r\nhost: svc.test:{port}\r\n\r\n"
    )
    .unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(15)))
        .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && s.read(&mut b).unwrap_or(0) == 1 {
        head.push(b[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let status = head.lines().next().unwrap_or_default().to_string();
    let code = head
        .lines()
        .find_map(|l| l.strip_prefix("x-airlock-proxy-error: "))
        .unwrap_or_default()
        .to_string();
    (status, code)
}

fn inner() {
    // In the fresh namespace: loopback up (the address is added to it below:
    // this kernel has no dummy interfaces), and a service on every address.
    ip(&["link", "set", "lo", "up"]);
    let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    {
        let accepted = accepted.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stream.is_ok() {
                    accepted.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
    }
    let dir = tempfile::tempdir().unwrap();
    let proxy = EgressProxy::new().unwrap();
    let host: IpAddr = HOST_ADDR.parse().unwrap();
    let config = |exempt: bool| {
        let mut c = ContextConfig::new(&["svc.test"], &[] as &[&str]).unwrap();
        c.hosts_only = true;
        c.map_host("svc.test", &[host]);
        if exempt {
            // The protection off: this one address exempted, as only tests may.
            c.allow_private_for_tests = vec![host];
        }
        c
    };
    let ctx = proxy
        .open("hostaddr-1", config(false), dir.path(), None)
        .unwrap();

    // Before the address exists on the host, it is just unreachable (no route
    // in this namespace).
    let (status, code) = connect(ctx.socket_path(), port);
    assert!(status.contains(" 502 "), "{status}");
    assert_eq!(code, "connect_failed");

    // Added now: the same context (its list is read per decision) refuses it.
    ip(&["addr", "add", &format!("{HOST_ADDR}/32"), "dev", "lo"]);
    let (status, code) = connect(ctx.socket_path(), port);
    assert!(status.contains(" 403 "), "{status}");
    assert_eq!(code, "resolved_to_host_address");
    let entries = ctx.close();
    let refused = entries
        .iter()
        .find(|e| e.reason == Reason::ResolvedToHostAddress)
        .expect("logged");
    assert_eq!(
        refused.resolved.as_deref(),
        Some(HOST_ADDR),
        "the log names the address"
    );
    assert!(
        refused.detail.contains("an address of this host"),
        "{}",
        refused.detail
    );
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "the service saw no connection"
    );

    // The control: with this address exempted, the same request reaches it.
    let open = proxy
        .open("hostaddr-2", config(true), dir.path(), None)
        .unwrap();
    let (status, _) = connect(open.socket_path(), port);
    assert!(status.contains(" 200 "), "{status}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "reached the host's service"
    );
    drop(open.close());
    println!("host-address checks done");
}
