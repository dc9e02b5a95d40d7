//! Readiness-driven I/O on the proxy's raw sockets: `recv(2)` and `send(2)` for
//! request and response heads, `splice(2)` for everything bulk.
//!
//! Every call takes `&self`, so one request can move its body up while its
//! response comes down on the same pair of sockets (a client that sends
//! `Expect: 100-continue` needs both at once). Bulk data never enters user space:
//! it moves socket → pipe → socket in the kernel, which keeps a proxied download
//! close to a direct one (`benches/sandbox_download.rs`).

use rustix::net::{RecvFlags, SendFlags};
use rustix::pipe::{fcntl_setpipe_size, pipe_with, splice, PipeFlags, SpliceFlags};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use tokio::io::Interest;
use tokio::net::{TcpStream, UnixStream};

/// Bytes per splice call and the pipe size asked for.
const CHUNK: usize = 1024 * 1024;

/// A tokio socket whose readiness can drive raw fd calls.
pub trait ReadyFd: AsFd {
    fn ready_for(
        &self,
        interest: Interest,
    ) -> impl std::future::Future<Output = io::Result<()>> + Send;
    fn try_io_with<R>(
        &self,
        interest: Interest,
        f: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R>;
}

macro_rules! ready_fd {
    ($t:ty) => {
        impl ReadyFd for $t {
            async fn ready_for(&self, interest: Interest) -> io::Result<()> {
                self.ready(interest).await.map(|_| ())
            }
            fn try_io_with<R>(
                &self,
                interest: Interest,
                f: impl FnOnce() -> io::Result<R>,
            ) -> io::Result<R> {
                self.try_io(interest, f)
            }
        }
    };
}
ready_fd!(TcpStream);
ready_fd!(UnixStream);

/// Run `op` once the socket is ready for `interest`, until it stops answering
/// `WouldBlock`.
async fn when_ready<S: ReadyFd, R>(
    socket: &S,
    interest: Interest,
    mut op: impl FnMut() -> io::Result<R>,
) -> io::Result<R> {
    loop {
        socket.ready_for(interest).await?;
        match socket.try_io_with(interest, &mut op) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            done => return done,
        }
    }
}

/// Read what is there (at least one byte); 0 at end of stream.
pub async fn recv_some<S: ReadyFd>(from: &S, buf: &mut [u8]) -> io::Result<usize> {
    when_ready(from, Interest::READABLE, || {
        rustix::net::recv(from, &mut *buf, RecvFlags::DONTWAIT)
            .map(|(n, _)| n)
            .map_err(io::Error::from)
    })
    .await
}

/// Write all of `bytes`. `MSG_NOSIGNAL`: a peer that left is an error, not a signal.
pub async fn send_all<S: ReadyFd>(to: &S, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        let n = when_ready(to, Interest::WRITABLE, || {
            rustix::net::send(to, bytes, SendFlags::DONTWAIT | SendFlags::NOSIGNAL)
                .map_err(io::Error::from)
        })
        .await?;
        bytes = &bytes[n..];
    }
    Ok(())
}

/// Half-close: the peer reads end of stream once what was sent has arrived.
pub fn shutdown_write<S: AsFd>(socket: &S) {
    let _ = rustix::net::shutdown(socket, rustix::net::Shutdown::Write);
}

/// A pipe to splice through, made once per direction of a connection.
pub struct Splicer {
    pipe_r: OwnedFd,
    pipe_w: OwnedFd,
}

impl Splicer {
    pub fn new() -> io::Result<Splicer> {
        let (pipe_r, pipe_w) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
        // A bigger pipe moves more per call; the default (64 KiB) also works.
        let _ = fcntl_setpipe_size(&pipe_w, CHUNK);
        Ok(Splicer { pipe_r, pipe_w })
    }

    /// Move bytes from `from` to `to` in the kernel until `limit` bytes have
    /// moved (`None`: until end of stream), calling `moved` after each batch.
    /// Returns how many moved; fewer than `limit` means `from` ended first.
    pub async fn pass<F: ReadyFd, T: ReadyFd>(
        &mut self,
        from: &F,
        to: &T,
        limit: Option<u64>,
        mut moved: impl FnMut(u64),
    ) -> io::Result<u64> {
        let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
        let mut total = 0u64;
        loop {
            let want = match limit {
                Some(l) if total >= l => break,
                Some(l) => CHUNK.min(usize::try_from(l - total).unwrap_or(CHUNK)),
                None => CHUNK,
            };
            let n = when_ready(from, Interest::READABLE, || {
                splice(from.as_fd(), None, &self.pipe_w, None, want, flags).map_err(io::Error::from)
            })
            .await?;
            if n == 0 {
                break;
            }
            let mut left = n;
            while left > 0 {
                left -= when_ready(to, Interest::WRITABLE, || {
                    splice(&self.pipe_r, None, to.as_fd(), None, left, flags)
                        .map_err(io::Error::from)
                })
                .await?;
            }
            total += n as u64;
            moved(n as u64);
        }
        Ok(total)
    }
}
