//! Real peer programs on loopback for the benchmarks (HAProxy, nginx), each
//! started with its own config in a temporary folder and killed when dropped.
//! A peer that is not installed or does not come up is `None`: the benchmark
//! then says so and leaves that figure out.

#![allow(dead_code)]

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

/// A peer program on loopback (HAProxy or nginx), killed when dropped.
pub struct Peer {
    child: std::process::Child,
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `program` with `args` (`{cfg}` becomes the config path) and wait until
/// it listens on `addr`. `None` when it is not installed or does not come up.
pub fn start_peer(
    program: &str,
    addr: SocketAddr,
    dir: tempfile::TempDir,
    config: String,
    args: &[&str],
) -> Option<Peer> {
    let cfg = dir.path().join(format!("{program}.conf"));
    std::fs::write(&cfg, config).ok()?;
    let cfg = cfg.to_str()?.to_string();
    let child = std::process::Command::new(program)
        .args(args.iter().map(|a| a.replace("{cfg}", &cfg)))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let peer = Peer {
        child,
        addr,
        _dir: dir,
    };
    for _ in 0..100 {
        if TcpStream::connect(addr).is_ok() {
            return Some(peer);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// A free port on `ip` (a bind to port 0, given back).
pub fn free_addr(ip: &str) -> Option<SocketAddr> {
    let free = std::net::TcpListener::bind((ip, 0)).ok()?;
    free.local_addr().ok()
}

/// HAProxy relaying plain TCP from a loopback port to `server`, splicing both ways.
pub fn start_haproxy(server: SocketAddr) -> Option<Peer> {
    let addr = free_addr("127.0.0.1")?;
    let config = format!(
        "global\n  maxconn 64\n  nbthread 1\n\
         defaults\n  mode tcp\n  option splice-request\n  option splice-response\n  \
         timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n\
         listen relay\n  bind {addr}\n  server upstream {server}\n"
    );
    start_peer(
        "haproxy",
        addr,
        tempfile::tempdir().ok()?,
        config,
        &["-db", "-f", "{cfg}"],
    )
}

/// nginx serving `/big` (`size` bytes, from a file) on `ip`, the address the
/// benchmark's names resolve to in the proxy's test configuration. Plain HTTP
/// uses `sendfile`; with `tls` = (certificate chain, key) it serves HTTPS.
pub fn start_nginx(ip: &str, size: u64, tls: Option<(&Path, &Path)>) -> Option<Peer> {
    let addr = free_addr(ip)?;
    let dir = tempfile::tempdir().ok()?;
    let root = dir.path().join("www");
    std::fs::create_dir(&root).ok()?;
    std::fs::write(root.join("big"), vec![0x5au8; usize::try_from(size).ok()?]).ok()?;
    let d = dir.path().display();
    let listen = match tls {
        None => format!("listen {addr};"),
        Some((chain, key)) => format!(
            "listen {addr} ssl;\n    ssl_certificate {};\n    ssl_certificate_key {};",
            chain.display(),
            key.display()
        ),
    };
    let config = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\nuser root;\n\
         pid {d}/nginx.pid;\nerror_log stderr;\nevents {{ worker_connections 64; }}\n\
         http {{\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n\
         client_body_temp_path {d}/tmp;\n  proxy_temp_path {d}/tmp;\n  fastcgi_temp_path {d}/tmp;\n\
         uwsgi_temp_path {d}/tmp;\n  scgi_temp_path {d}/tmp;\n\
         server {{\n    {listen}\n    root {root};\n  }}\n}}\n",
        root = root.display()
    );
    start_peer("nginx", addr, dir, config, &["-c", "{cfg}", "-e", "stderr"])
}
