//! Egress proxy costs, on loopback only:
//!
//! * `download_100MB/*`: one 100 MB HTTP download from a loopback server, direct
//!   vs through the relay + proxy (CONNECT tunnel, SOCKS5, plain-HTTP forward).
//!   Target: through the proxy ≥ 80 % of direct throughput.
//! * `download_100MB/peer_haproxy_splice`: the same download through HAProxy in
//!   TCP mode with splicing, when `haproxy` is installed. It is the reference for
//!   what any relay costs on this machine: a third process on the data path.
//! * `download_100MB_nginx/*`: the same four downloads from nginx (a real server,
//!   `sendfile` from a file) when it is installed.
//! * `connect/*`: a direct TCP connect to the server vs the whole proxied setup
//!   (TCP to the relay, `CONNECT`, proxy resolves and connects, `200` back).
//!   The difference of the medians is the latency a CONNECT adds. Target < 1 ms.
//!
//! Run: `cargo bench -p airlock-netproxy --bench netproxy`

#[path = "../tests/common/mod.rs"]
mod common;
mod peers;

use common::{routes_with, Body, World};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

const SIZE: u64 = 100 * 1024 * 1024;

/// Read an HTTP response to the end, return the body length.
fn read_response(mut s: TcpStream) -> u64 {
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    let mut head_end = None;
    let mut head = Vec::new();
    loop {
        let n = s.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        if head_end.is_none() {
            head.extend_from_slice(&buf[..n]);
            if let Some(p) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                head_end = Some(p + 4);
                total = (head.len() - p - 4) as u64;
            }
        } else {
            total += n as u64;
        }
    }
    total
}

fn read_head(s: &mut TcpStream) -> Vec<u8> {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    head
}

fn download_direct(server: SocketAddr) -> u64 {
    let mut s = TcpStream::connect(server).unwrap();
    s.write_all(b"GET /big HTTP/1.1\r\nHost: plain.test\r\nConnection: close\r\n\r\n")
        .unwrap();
    read_response(s)
}

fn download_connect(relay: SocketAddr, server: SocketAddr) -> u64 {
    let mut s = TcpStream::connect(relay).unwrap();
    s.set_nodelay(true).unwrap();
    write!(s, "CONNECT plain.test:{} HTTP/1.1\r\n\r\n", server.port()).unwrap();
    let head = read_head(&mut s);
    assert!(head.starts_with(b"HTTP/1.1 200"));
    s.write_all(b"GET /big HTTP/1.1\r\nHost: plain.test\r\nConnection: close\r\n\r\n")
        .unwrap();
    read_response(s)
}

fn download_socks(relay: SocketAddr, server: SocketAddr) -> u64 {
    let mut s = TcpStream::connect(relay).unwrap();
    s.write_all(&[5, 1, 0]).unwrap();
    let mut r = [0u8; 2];
    s.read_exact(&mut r).unwrap();
    let name = b"plain.test";
    let mut req = vec![5, 1, 0, 3, name.len() as u8];
    req.extend_from_slice(name);
    req.extend_from_slice(&server.port().to_be_bytes());
    s.write_all(&req).unwrap();
    let mut rep = [0u8; 10];
    s.read_exact(&mut rep).unwrap();
    assert_eq!(rep[1], 0);
    s.write_all(b"GET /big HTTP/1.1\r\nHost: plain.test\r\nConnection: close\r\n\r\n")
        .unwrap();
    read_response(s)
}

fn download_forward(relay: SocketAddr, server: SocketAddr) -> u64 {
    let mut s = TcpStream::connect(relay).unwrap();
    write!(s, "GET http://plain.test:{port}/big HTTP/1.1\r\nHost: plain.test:{port}\r\nConnection: close\r\n\r\n", port = server.port()).unwrap();
    read_response(s)
}

/// A criterion group sized for 100 MB downloads (few, long samples).
fn download_group_named<'c>(
    c: &'c mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'c, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Bytes(SIZE));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(8));
    g
}

/// The four ways of downloading `/big` from `server`, as one criterion group.
fn download_group(c: &mut Criterion, name: &str, server: SocketAddr, relay: SocketAddr) {
    assert_eq!(download_direct(server), SIZE);
    assert_eq!(download_connect(relay, server), SIZE);
    assert_eq!(download_socks(relay, server), SIZE);
    assert_eq!(download_forward(relay, server), SIZE);
    let mut g = download_group_named(c, name);
    g.bench_function("direct", |b| b.iter(|| download_direct(server)));
    g.bench_function("proxy_connect", |b| {
        b.iter(|| download_connect(relay, server))
    });
    g.bench_function("proxy_socks5", |b| b.iter(|| download_socks(relay, server)));
    g.bench_function("proxy_http_forward", |b| {
        b.iter(|| download_forward(relay, server))
    });
    g.finish();
}

fn bench(c: &mut Criterion) {
    let world = World::new(
        &["plain.test"],
        &[],
        routes_with(vec![("/big", Body::Generated(SIZE))]),
    );
    let server = world.http.addr;
    let relay = world.relay;

    download_group(c, "download_100MB", server, relay);
    match peers::start_haproxy(server) {
        Some(p) => {
            assert_eq!(download_direct(p.addr), SIZE);
            let mut g = download_group_named(c, "download_100MB");
            g.bench_function("peer_haproxy_splice", |b| {
                b.iter(|| download_direct(p.addr))
            });
            g.finish();
        }
        None => eprintln!("haproxy not installed: no peer relay figure"),
    }
    match peers::start_nginx(&server.ip().to_string(), SIZE, None) {
        Some(nginx) => download_group(c, "download_100MB_nginx", nginx.addr, relay),
        None => eprintln!("nginx not installed: no figures against a real server"),
    }

    let mut g = c.benchmark_group("connect");
    g.sample_size(200);
    g.bench_function("direct_tcp", |b| {
        b.iter(|| {
            let s = TcpStream::connect(server).unwrap();
            drop(s);
        })
    });
    g.bench_function("via_proxy_connect_200", |b| {
        b.iter(|| {
            let mut s = TcpStream::connect(relay).unwrap();
            s.set_nodelay(true).unwrap();
            write!(s, "CONNECT plain.test:{} HTTP/1.1\r\n\r\n", server.port()).unwrap();
            let head = read_head(&mut s);
            assert!(head.starts_with(b"HTTP/1.1 200"));
        })
    });
    g.finish();
    eprintln!("proxy log entries: {}", world.ctx().entries().len());
}

criterion_group!(benches, bench);
criterion_main!(benches);
