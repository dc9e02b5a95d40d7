//! Zero-copy tunnel bodies: `splice(2)` through a pipe, driven by tokio readiness.
//!
//! After the first bytes of a tunnel are judged, the rest is bulk data the proxy
//! never needs to see. Moving it in the kernel keeps the proxy's throughput close
//! to a direct download (the benchmark target is ≥ 80 %).

use crate::client::ClientConn;
use crate::log::EntryHandle;
use rustix::pipe::{fcntl_setpipe_size, pipe_with, splice, PipeFlags, SpliceFlags};
use std::io;
use std::os::fd::AsFd;
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

#[derive(Clone, Copy)]
pub enum Direction {
    Up,
    Down,
}

/// Move bytes from `from` to `to` until EOF, then half-close `to`.
pub async fn splice_until_eof<F: ReadyFd, T: ReadyFd>(
    from: &F,
    to: &T,
    entry: &EntryHandle,
    direction: Direction,
) -> io::Result<()> {
    let (pipe_r, pipe_w) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
    let _ = fcntl_setpipe_size(&pipe_w, CHUNK);
    let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
    loop {
        from.ready_for(Interest::READABLE).await?;
        let n = match from.try_io_with(Interest::READABLE, || {
            splice(from.as_fd(), None, &pipe_w, None, CHUNK, flags).map_err(io::Error::from)
        }) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        };
        let mut left = n;
        while left > 0 {
            to.ready_for(Interest::WRITABLE).await?;
            match to.try_io_with(Interest::WRITABLE, || {
                splice(&pipe_r, None, to.as_fd(), None, left, flags).map_err(io::Error::from)
            }) {
                Ok(m) => left -= m,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
        match direction {
            Direction::Up => entry.add_up(n as u64),
            Direction::Down => entry.add_down(n as u64),
        }
    }
    let _ = rustix::net::shutdown(to.as_fd(), rustix::net::Shutdown::Write);
    Ok(())
}

/// Both directions at once; ends when both have reached EOF (or one failed).
pub async fn splice_both(
    client: &ClientConn,
    upstream: &TcpStream,
    entry: &EntryHandle,
) -> io::Result<()> {
    let up = splice_until_eof(client, upstream, entry, Direction::Up);
    let down = splice_until_eof(upstream, client, entry, Direction::Down);
    // The first failure ends both directions (the other would wait forever).
    tokio::try_join!(up, down).map(|_| ())
}
