//! What refusing the host's own addresses costs per proxy decision: one
//! rtnetlink dump of the interface addresses, beside the loopback TCP connect
//! that every allowed decision makes anyway (the peer, measured in the same run).

use criterion::{criterion_group, criterion_main, Criterion};
use std::net::TcpListener;

fn host_addrs(c: &mut Criterion) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || for _ in listener.incoming() {});
    let mut group = c.benchmark_group("decision");
    group.bench_function("host_addrs_read", |b| {
        b.iter(|| airlock_netproxy::host_addrs::read().unwrap())
    });
    group.bench_function("loopback_tcp_connect", |b| {
        b.iter(|| std::net::TcpStream::connect(addr).unwrap())
    });
    group.finish();
}

criterion_group!(benches, host_addrs);
criterion_main!(benches);
