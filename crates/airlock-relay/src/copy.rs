//! The copying relay: loopback listeners whose connections are copied to the
//! egress proxy's unix socket.
//!
//! The sandbox's program may do anything to this relay (it runs as the same
//! user, in the same sandbox): nothing is gained by it, since everything the
//! relay can reach, the proxy socket, the program can reach directly, and the
//! proxy judges every request whichever way it arrives.

use crate::THREAD_STACK;
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Connections relayed at once; more are closed as they arrive, so that a
/// program cannot make the relay hold unbounded threads and sockets.
pub const MAX_CONNECTIONS: usize = 64;

/// Bound listeners, not yet serving.
pub struct Relay {
    listeners: Vec<TcpListener>,
    socket: PathBuf,
}

impl Relay {
    /// Binds every address. Nothing is accepted until [`Relay::serve`].
    pub fn bind(socket: &Path, addrs: &[SocketAddr]) -> io::Result<Relay> {
        let mut listeners = Vec::with_capacity(addrs.len());
        for a in addrs {
            let l = TcpListener::bind(a)
                .map_err(|e| io::Error::new(e.kind(), format!("listen on {a}: {e}")))?;
            listeners.push(l);
        }
        Ok(Relay {
            listeners,
            socket: socket.to_path_buf(),
        })
    }

    /// The bound addresses (with the port the kernel chose for port 0).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.listeners
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect()
    }

    /// Accepts and relays on every listener, one thread each; returns once
    /// the threads are started.
    pub fn serve(self) -> io::Result<()> {
        let open = Arc::new(AtomicUsize::new(0));
        let socket = Arc::new(self.socket);
        for l in self.listeners {
            let open = open.clone();
            let socket = socket.clone();
            std::thread::Builder::new()
                .name("relay-accept".into())
                .stack_size(THREAD_STACK)
                .spawn(move || accept_loop(l, &socket, &open))?;
        }
        Ok(())
    }
}

fn accept_loop(listener: TcpListener, socket: &Arc<PathBuf>, open: &Arc<AtomicUsize>) {
    for conn in listener.incoming() {
        let Ok(tcp) = conn else { continue };
        if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::SeqCst);
            continue; // dropped: the program sees its connection closed
        }
        let slot = Slot(open.clone());
        let socket = socket.clone();
        let started = std::thread::Builder::new()
            .name("relay-conn".into())
            .stack_size(THREAD_STACK)
            .spawn(move || {
                let _slot = slot;
                let _ = relay_one(tcp, &socket);
            });
        // A thread that could not start drops its closure, and with it the
        // connection and the slot.
        let _ = started;
    }
}

/// Frees a connection's place when its relay ends, however it ends.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Copies one connection both ways until both directions are closed. An
/// unreachable proxy closes the program's connection: a refusal, never a way
/// around the proxy.
fn relay_one(tcp: TcpStream, socket: &Path) -> io::Result<()> {
    let _ = tcp.set_nodelay(true);
    let unix = UnixStream::connect(socket)?;
    let (tcp_r, unix_w) = (tcp.try_clone()?, unix.try_clone()?);
    let upstream = std::thread::Builder::new()
        .name("relay-up".into())
        .stack_size(THREAD_STACK)
        .spawn(move || {
            let (mut from, mut to) = (tcp_r, unix_w);
            let _ = io::copy(&mut from, &mut to);
            let _ = to.shutdown(Shutdown::Write);
        })?;
    let (mut from, mut to) = (unix, tcp);
    let _ = io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
    let _ = upstream.join();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixListener;

    fn temp_socket(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("relay-copy-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("proxy.sock")
    }

    #[test]
    fn bytes_cross_both_ways_and_half_close_is_kept() {
        let path = temp_socket("echo");
        let proxy = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = proxy.accept().unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap(); // ends at the client's half close
            s.write_all(&got).unwrap();
            s.write_all(b"!").unwrap();
        });
        let relay = Relay::bind(&path, &["127.0.0.1:0".parse().unwrap()]).unwrap();
        let addr = relay.local_addrs()[0];
        relay.serve().unwrap();
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        c.shutdown(Shutdown::Write).unwrap();
        let mut back = Vec::new();
        c.read_to_end(&mut back).unwrap();
        assert_eq!(back, b"GET / HTTP/1.1\r\n\r\n!");
        server.join().unwrap();
    }

    #[test]
    fn an_unreachable_proxy_closes_the_connection() {
        let path = temp_socket("none");
        let relay = Relay::bind(&path, &["127.0.0.1:0".parse().unwrap()]).unwrap();
        let addr = relay.local_addrs()[0];
        relay.serve().unwrap();
        let mut c = TcpStream::connect(addr).unwrap();
        let mut back = Vec::new();
        // Closed (or reset) without a byte: nothing reached anything.
        let _ = c.read_to_end(&mut back);
        assert!(back.is_empty());
    }

    #[test]
    fn connections_beyond_the_cap_are_closed() {
        let path = temp_socket("cap");
        let proxy = UnixListener::bind(&path).unwrap();
        // The proxy accepts and holds every connection open.
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for s in proxy.incoming() {
                held.push(s.unwrap());
            }
        });
        let relay = Relay::bind(&path, &["127.0.0.1:0".parse().unwrap()]).unwrap();
        let addr = relay.local_addrs()[0];
        relay.serve().unwrap();
        let held: Vec<TcpStream> = (0..MAX_CONNECTIONS)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        // Let the relay take every slot before the extra one arrives.
        std::thread::sleep(std::time::Duration::from_millis(300));
        let mut extra = TcpStream::connect(addr).unwrap();
        extra
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0u8; 1];
        assert_eq!(extra.read(&mut buf).unwrap(), 0, "closed at once");
        drop(held);
    }

    #[test]
    fn a_busy_port_is_an_error_naming_it() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let err = Relay::bind(Path::new("/nonexistent"), &[addr])
            .err()
            .unwrap();
        assert!(err.to_string().contains(&addr.to_string()), "{err}");
    }
}
