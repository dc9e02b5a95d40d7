//! The copying relay: loopback listeners whose connections are copied to the
//! egress proxy's unix socket.
//!
//! One thread does all of it, with `poll(2)`: the relay runs inside the
//! sandbox, so every thread it held would count against the command's own
//! `limits.pids` (a thread per connection and direction made 64 connections
//! cost 129 of them). Each connection has a fixed buffer per direction, so the
//! relay's memory is bounded too.
//!
//! The sandbox's program may do anything to this relay (it runs as the same
//! user, in the same sandbox): nothing is gained by it, since everything the
//! relay can reach, the proxy socket, the program can reach directly, and the
//! proxy judges every request whichever way it arrives.

use crate::THREAD_STACK;
use rustix::event::{poll, PollFd, PollFlags};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// Connections relayed at once; more are closed as they arrive, so that a
/// program cannot make the relay hold unbounded sockets and buffers.
pub const MAX_CONNECTIONS: usize = 64;

/// Bytes buffered per connection and direction.
const BUF: usize = 16 * 1024;

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
            l.set_nonblocking(true)?;
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

    /// Accepts and relays on every listener, on one thread of its own;
    /// returns once that thread is started.
    pub fn serve(self) -> io::Result<()> {
        std::thread::Builder::new()
            .name("relay".into())
            .stack_size(THREAD_STACK)
            .spawn(move || self.run())?;
        Ok(())
    }

    fn run(self) {
        let mut conns: Vec<Conn> = Vec::new();
        loop {
            // What each socket waits for; a socket with nothing to wait for is
            // left out (poll reports a hang-up even to a socket that asked for
            // nothing, which would spin).
            let mut fds = Vec::with_capacity(self.listeners.len() + 2 * conns.len());
            let mut at = Vec::with_capacity(conns.len());
            // Listeners are always watched: a connection past the cap is
            // accepted and closed at once rather than left waiting.
            for l in &self.listeners {
                fds.push(PollFd::new(l, PollFlags::IN));
            }
            let listening = fds.len();
            for c in &conns {
                let (t, u) = c.interest();
                at.push((push(&mut fds, &c.tcp, t), push(&mut fds, &c.unix, u)));
            }
            if poll(&mut fds, None).is_err() {
                continue; // EINTR; nothing else is expected of poll here
            }
            let accept = fds[..listening].iter().any(|f| !f.revents().is_empty());
            let woke: Vec<bool> = at
                .iter()
                .map(|&(t, u)| ready(&fds, t) || ready(&fds, u))
                .collect();
            drop(fds);
            for (c, woke) in conns.iter_mut().zip(woke) {
                if woke {
                    c.step();
                }
            }
            conns.retain(|c| !c.finished());
            if accept {
                for l in &self.listeners {
                    self.accept_all(l, &mut conns);
                }
            }
        }
    }

    /// Takes every pending connection on `l`; one past the cap, or one the
    /// proxy does not answer, is closed at once (a refusal, never a way
    /// around the proxy).
    fn accept_all(&self, l: &TcpListener, conns: &mut Vec<Conn>) {
        while let Ok((tcp, _)) = l.accept() {
            if conns.len() >= MAX_CONNECTIONS {
                continue; // dropped: the program sees its connection closed
            }
            if let Ok(c) = Conn::open(tcp, &self.socket) {
                conns.push(c);
            }
        }
    }
}

fn push<'a>(fds: &mut Vec<PollFd<'a>>, fd: &'a impl std::os::fd::AsFd, f: PollFlags) -> usize {
    if f.is_empty() {
        return usize::MAX;
    }
    fds.push(PollFd::new(fd, f));
    fds.len() - 1
}

fn ready(fds: &[PollFd<'_>], i: usize) -> bool {
    fds.get(i).is_some_and(|f| !f.revents().is_empty())
}

/// One relayed connection: the program's TCP end and the proxy's unix end.
struct Conn {
    tcp: TcpStream,
    unix: UnixStream,
    /// Program to proxy.
    up: Flow,
    /// Proxy to program.
    down: Flow,
    broken: bool,
}

impl Conn {
    fn open(tcp: TcpStream, socket: &Path) -> io::Result<Conn> {
        // A blocking connect: the proxy's socket is local and accepts at once.
        let unix = UnixStream::connect(socket)?;
        let _ = tcp.set_nodelay(true);
        tcp.set_nonblocking(true)?;
        unix.set_nonblocking(true)?;
        Ok(Conn {
            tcp,
            unix,
            up: Flow::new(),
            down: Flow::new(),
            broken: false,
        })
    }

    /// What the TCP and the unix end wait for.
    fn interest(&self) -> (PollFlags, PollFlags) {
        let (mut t, mut u) = (PollFlags::empty(), PollFlags::empty());
        if self.up.wants_read() {
            t |= PollFlags::IN;
        }
        if self.up.pending() {
            u |= PollFlags::OUT;
        }
        if self.down.wants_read() {
            u |= PollFlags::IN;
        }
        if self.down.pending() {
            t |= PollFlags::OUT;
        }
        (t, u)
    }

    /// Moves what can move without blocking, both ways.
    fn step(&mut self) {
        let up = self.up.step(&mut self.tcp, &mut self.unix, |s| {
            s.shutdown(Shutdown::Write)
        });
        let down = self.down.step(&mut self.unix, &mut self.tcp, |s| {
            s.shutdown(Shutdown::Write)
        });
        if up.is_err() || down.is_err() {
            self.broken = true;
        }
    }

    /// Both directions closed (each end's write side shut after its data),
    /// or one end failed: the connection is dropped, closing both ends.
    fn finished(&self) -> bool {
        self.broken || (self.up.closed && self.down.closed)
    }
}

/// One direction of a connection: a fixed buffer between a reader and a
/// writer, and the half-close passed on once the reader's data is written.
struct Flow {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    eof: bool,
    closed: bool,
}

impl Flow {
    fn new() -> Flow {
        Flow {
            buf: vec![0; BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            eof: false,
            closed: false,
        }
    }

    fn wants_read(&self) -> bool {
        !self.eof && self.end < self.buf.len()
    }

    fn pending(&self) -> bool {
        self.start < self.end
    }

    fn step<R: Read, W: Write>(
        &mut self,
        from: &mut R,
        to: &mut W,
        shut: impl FnOnce(&W) -> io::Result<()>,
    ) -> io::Result<()> {
        if self.wants_read() {
            match from.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if would_block(&e) => {}
                Err(e) => return Err(e),
            }
        }
        while self.pending() {
            match to.write(&self.buf[self.start..self.end]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.start += n,
                Err(e) if would_block(&e) => break,
                Err(e) => return Err(e),
            }
        }
        if !self.pending() {
            (self.start, self.end) = (0, 0);
        }
        if self.eof && !self.pending() && !self.closed {
            self.closed = true;
            shut(to)?;
        }
        Ok(())
    }
}

fn would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixListener;

    /// A socket path in a directory of its own, removed with the value.
    struct TempSocket {
        dir: PathBuf,
        path: PathBuf,
    }

    impl Drop for TempSocket {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn temp_socket(tag: &str) -> TempSocket {
        let dir = std::env::temp_dir().join(format!("relay-copy-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("proxy.sock");
        TempSocket { dir, path }
    }

    #[test]
    fn bytes_cross_both_ways_and_half_close_is_kept() {
        let sock = temp_socket("echo");
        let path = sock.path.clone();
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
    fn megabytes_cross_both_ways_through_the_fixed_buffers() {
        let sock = temp_socket("bulk");
        let path = sock.path.clone();
        let proxy = UnixListener::bind(&path).unwrap();
        std::thread::spawn(move || {
            let (s, _) = proxy.accept().unwrap();
            let (mut r, mut w) = (s.try_clone().unwrap(), s);
            let _ = io::copy(&mut r, &mut w); // echo, until the client's half close
            let _ = w.shutdown(Shutdown::Write);
        });
        let relay = Relay::bind(&path, &["127.0.0.1:0".parse().unwrap()]).unwrap();
        let addr = relay.local_addrs()[0];
        relay.serve().unwrap();
        let c = TcpStream::connect(addr).unwrap();
        let data: Vec<u8> = (0..4 << 20).map(|i: u32| (i % 251) as u8).collect();
        let mut w = c.try_clone().unwrap();
        let sent = data.clone();
        let writer = std::thread::spawn(move || {
            w.write_all(&sent).unwrap();
            w.shutdown(Shutdown::Write).unwrap();
        });
        let mut back = Vec::new();
        (&c).read_to_end(&mut back).unwrap();
        writer.join().unwrap();
        assert!(back == data, "{} bytes back of {}", back.len(), data.len());
    }

    /// A relay on a free loopback port in front of a proxy that accepts and
    /// holds every connection open; returns the relay's address.
    fn relay_to_holding_proxy(path: &Path) -> SocketAddr {
        let proxy = UnixListener::bind(path).unwrap();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for s in proxy.incoming() {
                held.push(s.unwrap());
            }
        });
        let relay = Relay::bind(path, &["127.0.0.1:0".parse().unwrap()]).unwrap();
        let addr = relay.local_addrs()[0];
        relay.serve().unwrap();
        addr
    }

    /// Threads of this process whose name starts with "relay".
    fn relay_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|n| n.starts_with("relay"))
            .count()
    }

    #[test]
    fn many_connections_cost_no_threads() {
        let sock = temp_socket("threads");
        let path = sock.path.clone();
        let addr = relay_to_holding_proxy(&path);
        let held: Vec<TcpStream> = (0..40).map(|_| TcpStream::connect(addr).unwrap()).collect();
        std::thread::sleep(std::time::Duration::from_millis(300));
        // One thread per relay (the other tests of this file start one each),
        // where a thread per connection and direction would be 80 here.
        let n = relay_threads();
        assert!(n <= 8, "{n} relay threads for 40 connections");
        drop(held);
    }

    #[test]
    fn an_unreachable_proxy_closes_the_connection() {
        let sock = temp_socket("none");
        let path = sock.path.clone();
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
        let sock = temp_socket("cap");
        let path = sock.path.clone();
        let addr = relay_to_holding_proxy(&path);
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
