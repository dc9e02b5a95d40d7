//! The in-sandbox relay of network allowlist mode.
//!
//! The sandbox has an empty network namespace; its only way out is the host
//! egress proxy's unix socket, bound into it. Programs speak TCP to a proxy
//! (`HTTP_PROXY=http://127.0.0.1:3128`, `ALL_PROXY=socks5h://127.0.0.1:1080`), so
//! PID 1 runs this relay: threads that accept on those loopback ports and copy
//! each connection to a fresh connection on the unix socket. The proxy tells HTTP
//! from SOCKS5 by the first byte, so both ports lead to the same socket.
//!
//! Plain std threads and blocking I/O: PID 1 stays a small synchronous program.
//! Bytes move with `splice(2)` through a pipe, so they are not copied through
//! user space.
//! Bind before forking the command (so its first connect finds a listener) and
//! call [`Relay::start`] after the fork (so no relay thread exists while PID 1
//! forks).

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Loopback port of the HTTP proxy inside the sandbox.
pub const HTTP_PORT: u16 = 3128;
/// Loopback port of the SOCKS5 proxy inside the sandbox.
pub const SOCKS_PORT: u16 = 1080;
/// Where the proxy socket is bound inside the sandbox.
pub const SOCKET_IN_SANDBOX: &str = "/run/airlock/proxy.sock";

/// Connections relayed at once; more are closed at accept. Each costs two threads.
const MAX_CONNECTIONS: usize = 128;
/// Big copies: throughput through the relay is part of the ≥ 80 % budget.
const COPY_BUFFER: usize = 256 * 1024;
/// Bytes moved per `splice(2)` call (and the pipe's size).
const SPLICE_CHUNK: usize = 1024 * 1024;
const THREAD_STACK: usize = 64 * 1024;

/// The environment that steers curl, pip, git, npm and Python's urllib to the relay.
pub fn proxy_env(http_port: u16, socks_port: u16) -> Vec<(String, String)> {
    let http = format!("http://127.0.0.1:{http_port}");
    let socks = format!("socks5h://127.0.0.1:{socks_port}");
    let no_proxy = "localhost,127.0.0.1,::1".to_string();
    let mut env = Vec::new();
    for (name, value) in [
        ("HTTP_PROXY", &http),
        ("HTTPS_PROXY", &http),
        ("ALL_PROXY", &socks),
        ("NO_PROXY", &no_proxy),
    ] {
        env.push((name.to_string(), value.clone()));
        env.push((name.to_ascii_lowercase(), value.clone()));
    }
    env
}

/// Bound listeners, not yet accepting.
pub struct Relay {
    listeners: Vec<TcpListener>,
    target: PathBuf,
}

impl Relay {
    /// Listen on each address (normally [`HTTP_PORT`] and [`SOCKS_PORT`] on
    /// 127.0.0.1) and forward to the unix socket at `target`.
    pub fn bind(addrs: &[SocketAddr], target: &Path) -> io::Result<Relay> {
        let listeners = addrs
            .iter()
            .map(TcpListener::bind)
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Relay {
            listeners,
            target: target.to_path_buf(),
        })
    }

    /// The standard pair of ports on 127.0.0.1.
    pub fn bind_standard(target: &Path) -> io::Result<Relay> {
        let at = |port| SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
        Relay::bind(&[at(HTTP_PORT), at(SOCKS_PORT)], target)
    }

    pub fn local_addrs(&self) -> io::Result<Vec<SocketAddr>> {
        self.listeners.iter().map(TcpListener::local_addr).collect()
    }

    /// Start one accept thread per listener. The threads live as long as the
    /// process (PID 1 of the sandbox exits when the command has ended).
    pub fn start(self) -> io::Result<()> {
        let active = Arc::new(AtomicUsize::new(0));
        let target = Arc::new(self.target);
        for listener in self.listeners {
            let active = active.clone();
            let target = target.clone();
            std::thread::Builder::new()
                .name("airlock-relay".into())
                .stack_size(THREAD_STACK)
                .spawn(move || accept_loop(listener, &target, &active))?;
        }
        Ok(())
    }
}

fn accept_loop(listener: TcpListener, target: &Arc<PathBuf>, active: &Arc<AtomicUsize>) {
    for client in listener.incoming() {
        let Ok(client) = client else { continue };
        if active.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            active.fetch_sub(1, Ordering::SeqCst);
            drop(client);
            continue;
        }
        let target = target.clone();
        let active_for_conn = active.clone();
        let spawned = std::thread::Builder::new()
            .name("airlock-relay-conn".into())
            .stack_size(THREAD_STACK)
            .spawn(move || {
                let _ = relay_one(client, &target);
                active_for_conn.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            active.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Copy both ways until both sides have finished, passing half-closes on.
fn relay_one(client: TcpStream, target: &Path) -> io::Result<()> {
    let _ = client.set_nodelay(true);
    let upstream = UnixStream::connect(target)?;
    // This thread carries the client's bytes (the CONNECT or SOCKS greeting goes
    // out without waiting for another thread to start); a second one brings the
    // answers back.
    let client_writer = client.try_clone()?;
    let upstream_reader = upstream.try_clone()?;
    let down = std::thread::Builder::new()
        .name("airlock-relay-down".into())
        .stack_size(THREAD_STACK)
        .spawn(move || {
            let _ = forward(&upstream_reader, &client_writer);
            let _ = client_writer.shutdown(Shutdown::Write);
        })?;
    let _ = forward(&client, &upstream);
    let _ = upstream.shutdown(Shutdown::Write);
    let _ = down.join();
    Ok(())
}

/// Move bytes from `from` to `to` until EOF: in the kernel with `splice(2)`
/// through a pipe when it can, else through a buffer.
fn forward<R, W>(from: &R, to: &W) -> io::Result<u64>
where
    R: AsRawFd,
    for<'a> &'a R: Read,
    W: AsRawFd,
    for<'a> &'a W: Write,
{
    match splice_all(from.as_raw_fd(), to.as_raw_fd()) {
        Ok(n) => Ok(n),
        // Nothing moved yet and splice is not possible here: copy instead.
        Err((0, e)) if e.raw_os_error() == Some(libc::EINVAL) => pump(from, to),
        Err((_, e)) => Err(e),
    }
}

/// Splice until EOF. On error, also says how many bytes had already moved.
fn splice_all(from: RawFd, to: RawFd) -> Result<u64, (u64, io::Error)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err((0, io::Error::last_os_error()));
    }
    // SAFETY: pipe2 just returned these descriptors; each is owned once here.
    let (pipe_r, pipe_w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: F_SETPIPE_SZ takes an integer; a failure keeps the default size.
    unsafe {
        libc::fcntl(
            pipe_w.as_raw_fd(),
            libc::F_SETPIPE_SZ,
            SPLICE_CHUNK as libc::c_int,
        )
    };
    let mut total = 0u64;
    loop {
        // SAFETY: both descriptors are open for the duration; null offsets are
        // required for sockets and pipes.
        let n = unsafe {
            libc::splice(
                from,
                std::ptr::null_mut(),
                pipe_w.as_raw_fd(),
                std::ptr::null_mut(),
                SPLICE_CHUNK,
                libc::SPLICE_F_MOVE,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err((total, e));
        }
        if n == 0 {
            return Ok(total);
        }
        let mut left = n as usize;
        while left > 0 {
            // SAFETY: as above.
            let m = unsafe {
                libc::splice(
                    pipe_r.as_raw_fd(),
                    std::ptr::null_mut(),
                    to,
                    std::ptr::null_mut(),
                    left,
                    libc::SPLICE_F_MOVE,
                )
            };
            if m < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // Bytes sit in the pipe and cannot be delivered: the stream is broken.
                return Err((total.max(1), e));
            }
            left -= m as usize;
        }
        total += n as u64;
    }
}

fn pump<R, W>(from: &R, to: &W) -> io::Result<u64>
where
    for<'a> &'a R: Read,
    for<'a> &'a W: Write,
{
    let mut buf = vec![0u8; COPY_BUFFER];
    let mut total = 0u64;
    let mut from = from;
    let mut to = to;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
        total += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    #[test]
    fn relays_both_ways_with_half_close() {
        let dir = std::env::temp_dir().join(format!("airlock-relay-test-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let sock = dir.join("p.sock");
        let _ = std::fs::remove_file(&sock);
        let server = UnixListener::bind(&sock).unwrap();
        let echo = std::thread::spawn(move || {
            let (mut s, _) = server.accept().unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap(); // ends only when the relay passes the half-close on
            s.write_all(&got.iter().rev().copied().collect::<Vec<_>>())
                .unwrap();
            got
        });
        let relay = Relay::bind(&["127.0.0.1:0".parse().unwrap()], &sock).unwrap();
        let addr = relay.local_addrs().unwrap()[0];
        relay.start().unwrap();
        let mut c = TcpStream::connect(addr).unwrap();
        let payload: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        c.write_all(&payload).unwrap();
        c.shutdown(Shutdown::Write).unwrap();
        let mut back = Vec::new();
        c.read_to_end(&mut back).unwrap();
        assert_eq!(echo.join().unwrap(), payload);
        assert_eq!(back, payload.iter().rev().copied().collect::<Vec<_>>());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn env_has_both_cases() {
        let env = proxy_env(HTTP_PORT, SOCKS_PORT);
        for name in ["HTTP_PROXY", "https_proxy", "ALL_PROXY", "no_proxy"] {
            assert!(env.iter().any(|(k, _)| k == name), "{name}");
        }
        assert!(env.contains(&("all_proxy".into(), "socks5h://127.0.0.1:1080".into())));
    }
}
