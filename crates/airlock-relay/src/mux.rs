//! The microVM transport: TCP connections multiplexed over one byte stream.
//!
//! A microVM in network allowlist mode has no network device. Its only way
//! out is one virtio-serial port, whose host end is a unix socket served by
//! the microVM helper. Inside the guest, this crate's binary listens on
//! 127.0.0.1:3128 (HTTP proxy) and 127.0.0.1:1080 (SOCKS5) and carries every
//! accepted connection over the port as a stream of a small multiplexing
//! protocol; on the host, [`serve`] opens one connection to the egress
//! proxy's unix socket per stream and copies bytes both ways. The proxy judges
//! each request exactly as it does for the native backend's relay (it tells
//! HTTP from SOCKS5 by the first byte).
//!
//! The host treats everything that arrives on the port as hostile (a guest
//! root may write any bytes to it): frames are bounded, streams are bounded in
//! number, every stream is flow-controlled by a window the receiver grants, so
//! a guest cannot make the host buffer more than [`WINDOW`] bytes per stream,
//! and the only thing a stream can ever reach is the proxy socket.
//!
//! Wire format, both directions: a 9-byte header (stream id, u32 big-endian;
//! kind, one byte; length, u32 big-endian) and, for [`Kind::Data`], `length`
//! bytes. For [`Kind::Credit`] the length is the number of bytes the receiver
//! has consumed (the sender may send that many more); the other kinds carry
//! no payload and a length of 0.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

/// The largest payload of one data frame.
pub const MAX_DATA: usize = 32 * 1024;
/// Bytes a sender may have in flight on one stream before the receiver
/// grants more.
pub const WINDOW: u64 = 256 * 1024;
/// Streams open at once; more are refused (the guest sees the connection
/// closed).
pub const MAX_STREAMS: usize = 64;
/// The virtio-serial port's name (the guest finds its device by it).
pub const PORT_NAME: &str = "airlock.egress";
const HEADER: usize = 9;
use crate::THREAD_STACK;

/// A frame's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Guest to host: a new connection; the host connects it to the proxy.
    Open = 1,
    Data = 2,
    /// The sender will send no more data on this stream (half close).
    Eof = 3,
    /// The receiver consumed `length` bytes of this stream.
    Credit = 4,
    /// The stream is gone, both ways.
    Close = 5,
}

impl Kind {
    fn from_byte(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Open,
            2 => Kind::Data,
            3 => Kind::Eof,
            4 => Kind::Credit,
            5 => Kind::Close,
            _ => return None,
        })
    }
}

/// One frame as read from the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub stream: u32,
    pub kind: Kind,
    /// The payload of a data frame; empty otherwise.
    pub data: Vec<u8>,
    /// The credit of a credit frame; 0 otherwise.
    pub credit: u32,
}

/// Encodes one frame: `data` for [`Kind::Data`], `credit` for [`Kind::Credit`].
pub fn encode(stream: u32, kind: Kind, data: &[u8], credit: u32) -> Vec<u8> {
    let len = if kind == Kind::Data {
        data.len() as u32
    } else if kind == Kind::Credit {
        credit
    } else {
        0
    };
    let mut out = Vec::with_capacity(HEADER + data.len());
    out.extend_from_slice(&stream.to_be_bytes());
    out.push(kind as u8);
    out.extend_from_slice(&len.to_be_bytes());
    if kind == Kind::Data {
        out.extend_from_slice(data);
    }
    out
}

/// Reads one frame. `Ok(None)` at a clean end of the port; an error for a
/// frame that breaks the protocol (unknown kind, oversized data, a length on
/// a kind that has none): the port is then unusable and is dropped.
pub fn read_frame(r: &mut impl Read) -> io::Result<Option<Frame>> {
    let mut h = [0u8; HEADER];
    let mut got = 0;
    while got < HEADER {
        match r.read(&mut h[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let stream = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    let kind = Kind::from_byte(h[4])
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unknown frame kind"))?;
    let len = u32::from_be_bytes([h[5], h[6], h[7], h[8]]);
    let bad = |what: &str| Err(io::Error::new(io::ErrorKind::InvalidData, what.to_string()));
    match kind {
        Kind::Data if len as usize > MAX_DATA => bad("data frame over the maximum"),
        Kind::Data => {
            let mut data = vec![0u8; len as usize];
            r.read_exact(&mut data)?;
            Ok(Some(Frame {
                stream,
                kind,
                data,
                credit: 0,
            }))
        }
        Kind::Credit => Ok(Some(Frame {
            stream,
            kind,
            data: Vec::new(),
            credit: len,
        })),
        _ if len != 0 => bad("length on a frame without payload"),
        _ => Ok(Some(Frame {
            stream,
            kind,
            data: Vec::new(),
            credit: 0,
        })),
    }
}

/// A connection at either end of a stream: the program's TCP connection in
/// the guest, the proxy's unix socket on the host.
#[derive(Debug)]
pub enum Local {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Local {
    fn try_clone(&self) -> io::Result<Local> {
        Ok(match self {
            Local::Tcp(s) => Local::Tcp(s.try_clone()?),
            Local::Unix(s) => Local::Unix(s.try_clone()?),
        })
    }

    fn shutdown(&self, how: Shutdown) {
        let _ = match self {
            Local::Tcp(s) => s.shutdown(how),
            Local::Unix(s) => s.shutdown(how),
        };
    }
}

impl Read for Local {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Local::Tcp(s) => s.read(buf),
            Local::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Local {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Local::Tcp(s) => s.write(buf),
            Local::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What one side of the port does with a stream the peer opens.
pub enum Role {
    /// The guest: streams are opened here ([`Mux::open`]); the peer's opens
    /// are refused.
    Guest,
    /// The host: each stream the guest opens is connected with this function
    /// (to the egress proxy's socket).
    Host(Box<dyn Fn() -> io::Result<Local> + Send + Sync>),
}

struct Stream {
    local: Local,
    /// Bytes this side may still send.
    credit: Mutex<u64>,
    credit_cv: Condvar,
    /// Bytes the peer sent that are not yet written to `local`.
    inflight: AtomicU64,
    /// The queue to the writer thread; `None` in it means the peer's EOF.
    /// Taken out when the stream closes, which ends the writer.
    tx: Mutex<Option<mpsc::Sender<Option<Vec<u8>>>>>,
    closed: AtomicBool,
    /// Halves finished (this side's EOF sent, the peer's EOF written): at 2
    /// the stream is done.
    halves: AtomicU8,
}

/// One end of the port: the streams and the port's writing half.
pub struct Mux {
    out: Mutex<Box<dyn Write + Send>>,
    streams: Mutex<HashMap<u32, Arc<Stream>>>,
    next_id: Mutex<u32>,
    dead: AtomicBool,
}

impl Mux {
    pub fn new(port_writer: Box<dyn Write + Send>) -> Arc<Mux> {
        Arc::new(Mux {
            out: Mutex::new(port_writer),
            streams: Mutex::new(HashMap::new()),
            next_id: Mutex::new(1),
            dead: AtomicBool::new(false),
        })
    }

    fn send(&self, stream: u32, kind: Kind, data: &[u8], credit: u32) -> bool {
        if self.dead.load(Ordering::Relaxed) {
            return false;
        }
        let frame = encode(stream, kind, data, credit);
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if out.write_all(&frame).and_then(|_| out.flush()).is_err() {
            self.dead.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// The number of open streams.
    pub fn open_streams(&self) -> usize {
        self.streams.lock().map(|s| s.len()).unwrap_or(0)
    }

    /// Guest side: carry `local` to the host as a new stream. The connection
    /// is dropped (the program sees it closed) when too many are open.
    pub fn open(self: &Arc<Self>, local: Local) -> io::Result<()> {
        let id = {
            let mut n = self.next_id.lock().unwrap_or_else(|e| e.into_inner());
            let id = *n;
            *n = n.wrapping_add(1).max(1);
            id
        };
        let (stream, rx) = self.register(id, local)?;
        if !self.send(id, Kind::Open, &[], 0) {
            self.close(id, &stream, false);
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "port closed"));
        }
        self.start(id, stream, rx)
    }

    /// The writer's queue travels from here to [`Mux::start`].
    #[allow(clippy::type_complexity)]
    fn register(
        &self,
        id: u32,
        local: Local,
    ) -> io::Result<(Arc<Stream>, mpsc::Receiver<Option<Vec<u8>>>)> {
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        if streams.len() >= MAX_STREAMS || streams.contains_key(&id) {
            local.shutdown(Shutdown::Both);
            return Err(io::Error::other("too many streams, or a stream id in use"));
        }
        let (tx, rx) = mpsc::channel();
        let stream = Arc::new(Stream {
            local,
            credit: Mutex::new(WINDOW),
            credit_cv: Condvar::new(),
            inflight: AtomicU64::new(0),
            tx: Mutex::new(Some(tx)),
            closed: AtomicBool::new(false),
            halves: AtomicU8::new(0),
        });
        streams.insert(id, stream.clone());
        Ok((stream, rx))
    }

    fn start(
        self: &Arc<Self>,
        id: u32,
        stream: Arc<Stream>,
        rx: mpsc::Receiver<Option<Vec<u8>>>,
    ) -> io::Result<()> {
        let reader = stream.local.try_clone()?;
        let writer = stream.local.try_clone()?;
        let (mux, s) = (self.clone(), stream.clone());
        spawn(move || mux.pump_up(id, &s, reader))?;
        let mux = self.clone();
        spawn(move || mux.pump_down(id, &stream, writer, rx))?;
        Ok(())
    }

    /// Local connection to the port, within the credit the peer granted.
    fn pump_up(&self, id: u32, s: &Stream, mut local: Local) {
        let mut buf = vec![0u8; MAX_DATA];
        loop {
            let room = {
                let mut c = s.credit.lock().unwrap_or_else(|e| e.into_inner());
                while *c == 0 && !s.closed.load(Ordering::Relaxed) {
                    c = s.credit_cv.wait(c).unwrap_or_else(|e| e.into_inner());
                }
                (*c).min(MAX_DATA as u64) as usize
            };
            if s.closed.load(Ordering::Relaxed) {
                return;
            }
            match local.read(&mut buf[..room]) {
                Ok(0) => {
                    if !s.closed.load(Ordering::Relaxed) {
                        self.send(id, Kind::Eof, &[], 0);
                        self.half_done(id, s);
                    }
                    return;
                }
                Ok(n) => {
                    *s.credit.lock().unwrap_or_else(|e| e.into_inner()) -= n as u64;
                    if !self.send(id, Kind::Data, &buf[..n], 0) {
                        return self.close(id, s, false);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    local.shutdown(Shutdown::Both);
                    return self.close(id, s, true);
                }
            }
        }
    }

    /// The peer's data to the local connection; credit back for what was written.
    fn pump_down(
        &self,
        id: u32,
        s: &Stream,
        mut local: Local,
        rx: mpsc::Receiver<Option<Vec<u8>>>,
    ) {
        for item in rx {
            match item {
                Some(data) => {
                    if local.write_all(&data).is_err() {
                        local.shutdown(Shutdown::Both);
                        return self.close(id, s, true);
                    }
                    s.inflight.fetch_sub(data.len() as u64, Ordering::Relaxed);
                    self.send(id, Kind::Credit, &[], data.len() as u32);
                }
                None => {
                    local.shutdown(Shutdown::Write);
                    return self.half_done(id, s);
                }
            }
        }
        // Closed before the peer's EOF: what was queued is written, then the
        // connection ends both ways.
        local.shutdown(Shutdown::Both);
    }

    fn half_done(&self, id: u32, s: &Stream) {
        if s.halves.fetch_add(1, Ordering::AcqRel) + 1 == 2 {
            self.close(id, s, true);
        }
    }

    /// Ends a stream once: forgets it, stops its reader, ends its writer's
    /// queue (the writer still writes what the peer sent before), and tells
    /// the peer unless the peer said so first.
    fn close(&self, id: u32, s: &Stream, tell_peer: bool) {
        if s.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        {
            let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
            if streams.get(&id).is_some_and(|x| std::ptr::eq(&**x, s)) {
                streams.remove(&id);
            }
        }
        s.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        s.local.shutdown(Shutdown::Read);
        s.credit_cv.notify_all();
        if tell_peer {
            self.send(id, Kind::Close, &[], 0);
        }
    }

    fn get(&self, id: u32) -> Option<Arc<Stream>> {
        self.streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .cloned()
    }

    /// Reads the port until it ends or breaks the protocol, then closes every
    /// stream.
    pub fn run(self: &Arc<Self>, mut port_reader: impl Read, role: &Role) -> io::Result<()> {
        let result = loop {
            let frame = match read_frame(&mut port_reader) {
                Ok(Some(f)) => f,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            };
            self.handle(frame, role);
        };
        self.dead.store(true, Ordering::Relaxed);
        let all: Vec<(u32, Arc<Stream>)> = self
            .streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        for (id, s) in all {
            self.close(id, &s, false);
        }
        result
    }

    fn handle(self: &Arc<Self>, f: Frame, role: &Role) {
        let id = f.stream;
        match f.kind {
            Kind::Open => {
                let Role::Host(connect) = role else {
                    self.send(id, Kind::Close, &[], 0);
                    return;
                };
                if self.get(id).is_some() || self.open_streams() >= MAX_STREAMS {
                    // A reused id or one stream too many: refused, the
                    // existing stream untouched.
                    self.send(id, Kind::Close, &[], 0);
                    return;
                }
                let started = connect()
                    .and_then(|local| self.register(id, local))
                    .and_then(|(s, rx)| self.start(id, s, rx));
                if started.is_err() {
                    if let Some(s) = self.get(id) {
                        self.close(id, &s, true);
                    } else {
                        self.send(id, Kind::Close, &[], 0);
                    }
                }
            }
            Kind::Data => {
                let Some(s) = self.get(id) else { return };
                let n = f.data.len() as u64;
                // A peer that sends past the window it was granted loses the stream.
                if s.inflight.fetch_add(n, Ordering::AcqRel) + n > WINDOW {
                    return self.close(id, &s, true);
                }
                let tx = s.tx.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(tx) = tx.as_ref() {
                    let _ = tx.send(Some(f.data));
                }
            }
            Kind::Eof => {
                let Some(s) = self.get(id) else { return };
                // The writer ends at the first EOF; anything queued after it
                // is dropped with the queue.
                let tx = s.tx.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(tx) = tx.as_ref() {
                    let _ = tx.send(None);
                }
            }
            Kind::Credit => {
                let Some(s) = self.get(id) else { return };
                let mut c = s.credit.lock().unwrap_or_else(|e| e.into_inner());
                *c = c.saturating_add(u64::from(f.credit)).min(WINDOW);
                s.credit_cv.notify_all();
            }
            Kind::Close => {
                if let Some(s) = self.get(id) {
                    self.close(id, &s, false);
                }
            }
        }
    }
}

fn spawn(f: impl FnOnce() + Send + 'static) -> io::Result<()> {
    std::thread::Builder::new()
        .name("airlock-relay".into())
        .stack_size(THREAD_STACK)
        .spawn(f)
        .map(|_| ())
}

/// The host's end: serves one port connection (QEMU's chardev socket) until
/// the VM closes it, connecting every stream the guest opens with `connect`.
pub fn serve(
    port: UnixStream,
    connect: Box<dyn Fn() -> io::Result<Local> + Send + Sync>,
) -> io::Result<()> {
    let writer = port.try_clone()?;
    let mux = Mux::new(Box::new(writer));
    mux.run(port, &Role::Host(connect))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::os::unix::net::UnixListener;
    use std::time::Duration;

    #[test]
    fn frames_round_trip_and_bad_frames_are_refused() {
        let mut bytes = encode(7, Kind::Data, b"hello", 0);
        bytes.extend(encode(7, Kind::Credit, &[], 4096));
        bytes.extend(encode(9, Kind::Close, &[], 0));
        let mut r = &bytes[..];
        let f = read_frame(&mut r).unwrap().unwrap();
        assert_eq!(
            (f.stream, f.kind, &f.data[..]),
            (7, Kind::Data, &b"hello"[..])
        );
        let f = read_frame(&mut r).unwrap().unwrap();
        assert_eq!((f.kind, f.credit), (Kind::Credit, 4096));
        assert_eq!(read_frame(&mut r).unwrap().unwrap().kind, Kind::Close);
        assert!(read_frame(&mut r).unwrap().is_none());

        let mut huge = 1u32.to_be_bytes().to_vec();
        huge.push(Kind::Data as u8);
        huge.extend((MAX_DATA as u32 + 1).to_be_bytes());
        assert!(read_frame(&mut &huge[..]).is_err(), "oversized data");
        let mut odd = 1u32.to_be_bytes().to_vec();
        odd.push(99);
        odd.extend(0u32.to_be_bytes());
        assert!(read_frame(&mut &odd[..]).is_err(), "unknown kind");
        let mut open_len = 1u32.to_be_bytes().to_vec();
        open_len.push(Kind::Open as u8);
        open_len.extend(5u32.to_be_bytes());
        assert!(read_frame(&mut &open_len[..]).is_err(), "length on open");
        assert!(read_frame(&mut &bytes[..4]).is_err(), "cut header");
    }

    /// A guest mux and a host mux over a socketpair (standing in for the
    /// port), the host connecting streams to an echo server on a unix socket.
    fn pair(dir: &std::path::Path) -> (Arc<Mux>, std::path::PathBuf) {
        let sock = dir.join("proxy.sock");
        let proxy = UnixListener::bind(&sock).unwrap();
        std::thread::spawn(move || {
            for c in proxy.incoming() {
                let mut c = c.unwrap();
                std::thread::spawn(move || {
                    let mut r = c.try_clone().unwrap();
                    let _ = io::copy(&mut r, &mut c);
                    let _ = c.shutdown(Shutdown::Write);
                });
            }
        });
        let (g, h) = UnixStream::pair().unwrap();
        let target = sock.clone();
        std::thread::spawn(move || {
            serve(
                h,
                Box::new(move || Ok(Local::Unix(UnixStream::connect(&target)?))),
            )
        });
        let guest = Mux::new(Box::new(g.try_clone().unwrap()));
        let m = guest.clone();
        std::thread::spawn(move || m.run(g, &Role::Guest));
        (guest, sock)
    }

    fn connected(guest: &Arc<Mux>) -> TcpStream {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let program = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (accepted, _) = l.accept().unwrap();
        guest.open(Local::Tcp(accepted)).unwrap();
        program
    }

    #[test]
    fn streams_carry_bytes_both_ways_past_the_window() {
        let dir = std::env::temp_dir().join(format!("relay-mux-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (guest, _) = pair(&dir);
        let mut programs: Vec<TcpStream> = (0..3).map(|_| connected(&guest)).collect();
        // More than the window, both ways at once on each stream: the writer
        // and the reader run side by side, so neither side may stall.
        let big: Vec<u8> = (0..(3 * WINDOW as usize + 123))
            .map(|i| (i % 251) as u8)
            .collect();
        let mut readers = Vec::new();
        for p in &mut programs {
            let mut r = p.try_clone().unwrap();
            r.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            readers.push(std::thread::spawn(move || {
                let mut got = Vec::new();
                r.read_to_end(&mut got).unwrap();
                got
            }));
        }
        for p in &mut programs {
            p.write_all(&big).unwrap();
            p.shutdown(Shutdown::Write).unwrap();
        }
        for r in readers {
            assert!(r.join().unwrap() == big, "echoed bytes differ");
        }
        // Both halves closed: every stream is forgotten on the guest side.
        for _ in 0..200 {
            if guest.open_streams() == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(guest.open_streams(), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_peer_past_its_window_or_over_the_stream_cap_is_refused() {
        let dir = std::env::temp_dir().join(format!("relay-mux-cap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let sock = dir.join("proxy.sock");
        let proxy = UnixListener::bind(&sock).unwrap();
        // A proxy that accepts and never reads: the host must not buffer
        // more than the window for a guest that ignores credit.
        std::thread::spawn(move || {
            let mut keep = Vec::new();
            for c in proxy.incoming() {
                keep.push(c.unwrap());
            }
        });
        let (mut g, h) = UnixStream::pair().unwrap();
        let target = sock.clone();
        std::thread::spawn(move || {
            serve(
                h,
                Box::new(move || Ok(Local::Unix(UnixStream::connect(&target)?))),
            )
        });
        g.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        for id in 1..=(MAX_STREAMS as u32 + 1) {
            g.write_all(&encode(id, Kind::Open, &[], 0)).unwrap();
        }
        // The one over the cap is closed at once.
        let f = read_frame(&mut g).unwrap().unwrap();
        assert_eq!((f.stream, f.kind), (MAX_STREAMS as u32 + 1, Kind::Close));
        // Stream 1 floods past its window: closed by the host.
        let chunk = vec![b'x'; MAX_DATA];
        // Past what the proxy's socket buffers absorb, and past the window.
        for _ in 0..(4 * WINDOW as usize / MAX_DATA) {
            g.write_all(&encode(1, Kind::Data, &chunk, 0)).unwrap();
        }
        loop {
            let f = read_frame(&mut g).unwrap().unwrap();
            if f.kind == Kind::Close {
                assert_eq!(f.stream, 1);
                break;
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
