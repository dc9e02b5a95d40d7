//! The sandbox side of one proxied connection, and how it reaches the proxy.
//!
//! The relay in the sandbox's PID 1 accepts a program's TCP connection on a
//! loopback port and does not copy it: it passes the accepted socket itself over
//! the context's unix socket (`SCM_RIGHTS`, behind one [`HANDOFF_BYTE`]). The
//! proxy then reads the request from that TCP socket and, once the tunnel is
//! judged, splices between it and the upstream connection. Bulk data crosses two
//! loopback legs instead of three, and no thread inside the sandbox touches it.
//!
//! A program may also speak to the unix socket directly (it is bound into the
//! sandbox); that connection is served as it is.

use crate::fdio::ReadyFd;
use rustix::net::{
    recvmsg, sockopt, AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags,
    SocketType,
};
use std::io::{self, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, Interest, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

/// The byte that carries a handed-over connection. Must equal
/// `airlock_sandbox::relay::HANDOFF_BYTE`. Neither HTTP (a method name)
/// nor SOCKS5 (version 5) can start with it.
pub const HANDOFF_BYTE: u8 = 0;

/// A connection from inside the sandbox.
pub enum ClientConn {
    /// A program's TCP connection to the relay, handed over by the relay.
    Tcp(TcpStream),
    /// A connection made straight to the context's unix socket.
    Unix(UnixStream),
}

/// The connection behind a new connection to the context's unix socket, with its
/// first byte read: the handed-over TCP connection when the first byte is
/// [`HANDOFF_BYTE`] with a socket attached, else the unix connection itself.
/// `None` when the peer closed, or sent a handoff byte without a usable socket.
pub async fn receive(stream: UnixStream) -> io::Result<Option<(u8, ClientConn)>> {
    let (n, first, fd) = loop {
        stream.readable().await?;
        match stream.try_io(Interest::READABLE, || recv_byte_and_fd(&stream)) {
            Ok(got) => break got,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    };
    if n == 0 {
        return Ok(None);
    }
    if first != HANDOFF_BYTE {
        // A descriptor sent by a direct client is closed unused here.
        drop(fd);
        return Ok(Some((first, ClientConn::Unix(stream))));
    }
    let Some(Ok(tcp)) = fd.map(handed_over_tcp) else {
        return Ok(None);
    };
    let mut conn = ClientConn::Tcp(tcp);
    match conn.read_u8().await {
        Ok(first) => Ok(Some((first, conn))),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

fn recv_byte_and_fd(stream: &UnixStream) -> io::Result<(usize, u8, Option<OwnedFd>)> {
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = recvmsg(
        stream,
        &mut [IoSliceMut::new(&mut byte)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC | RecvFlags::DONTWAIT,
    )?;
    let mut fd = None;
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = message {
            for received in fds {
                // Keep the first; any other is closed as it drops.
                fd.get_or_insert(received);
            }
        }
    }
    Ok((got.bytes, byte[0], fd))
}

/// Accept a received descriptor only if it is a connected TCP socket: anything
/// else (a file, a pipe, a listening or unix socket) could make the proxy act on
/// something other than a program's connection.
fn handed_over_tcp(fd: OwnedFd) -> io::Result<TcpStream> {
    let domain = sockopt::socket_domain(&fd)?;
    let is_inet = domain == AddressFamily::INET || domain == AddressFamily::INET6;
    if !is_inet
        || sockopt::socket_type(&fd)? != SocketType::STREAM
        || sockopt::socket_acceptconn(&fd)?
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "handed-over descriptor is not a connected TCP socket",
        ));
    }
    let std_stream = std::net::TcpStream::from(fd);
    std_stream.set_nonblocking(true)?;
    TcpStream::from_std(std_stream)
}

impl AsyncRead for ClientConn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientConn::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            ClientConn::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ClientConn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ClientConn::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            ClientConn::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientConn::Tcp(s) => Pin::new(s).poll_flush(cx),
            ClientConn::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientConn::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            ClientConn::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

impl AsFd for ClientConn {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            ClientConn::Tcp(s) => s.as_fd(),
            ClientConn::Unix(s) => s.as_fd(),
        }
    }
}

impl ReadyFd for ClientConn {
    async fn ready_for(&self, interest: Interest) -> io::Result<()> {
        match self {
            ClientConn::Tcp(s) => s.ready_for(interest).await,
            ClientConn::Unix(s) => s.ready_for(interest).await,
        }
    }
    fn try_io_with<R>(
        &self,
        interest: Interest,
        f: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R> {
        match self {
            ClientConn::Tcp(s) => s.try_io_with(interest, f),
            ClientConn::Unix(s) => s.try_io_with(interest, f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    use std::io::{IoSlice, Read, Write};

    fn send_with_fd(sock: &std::os::unix::net::UnixStream, byte: u8, fd: BorrowedFd<'_>) {
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        let fds = [fd];
        assert!(control.push(SendAncillaryMessage::ScmRights(&fds)));
        sendmsg(
            sock,
            &[IoSlice::new(&[byte])],
            &mut control,
            SendFlags::empty(),
        )
        .unwrap();
    }

    fn pair() -> (std::os::unix::net::UnixStream, UnixStream) {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        (a, UnixStream::from_std(b).unwrap())
    }

    #[tokio::test]
    async fn a_handed_over_tcp_connection_is_served_as_itself() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut program = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        let (relay_end, proxy_end) = pair();
        send_with_fd(&relay_end, HANDOFF_BYTE, accepted.as_fd());
        drop(accepted);
        drop(relay_end);
        program.write_all(b"GET").unwrap();
        let Some((first, mut conn)) = receive(proxy_end).await.unwrap() else {
            panic!("expected a handed-over connection");
        };
        assert!(matches!(conn, ClientConn::Tcp(_)));
        let mut rest = [0u8; 2];
        conn.read_exact(&mut rest).await.unwrap();
        assert_eq!((first, &rest), (b'G', b"ET"));
        tokio::io::AsyncWriteExt::write_all(&mut conn, b"ok")
            .await
            .unwrap();
        let mut back = [0u8; 2];
        program.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"ok");
    }

    #[tokio::test]
    async fn a_handoff_of_anything_but_a_tcp_socket_is_refused() {
        // A regular file, a unix socket and a listening TCP socket.
        let file = tempfile::tempfile().unwrap();
        let (unix_a, _unix_b) = std::os::unix::net::UnixStream::pair().unwrap();
        let listening = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        for fd in [file.as_fd(), unix_a.as_fd(), listening.as_fd()] {
            let (relay_end, proxy_end) = pair();
            send_with_fd(&relay_end, HANDOFF_BYTE, fd);
            assert!(receive(proxy_end).await.unwrap().is_none());
        }
    }

    #[tokio::test]
    async fn a_direct_client_is_served_from_its_first_byte() {
        let (relay_end, proxy_end) = pair();
        let file = tempfile::tempfile().unwrap();
        send_with_fd(&relay_end, 5, file.as_fd());
        match receive(proxy_end).await.unwrap() {
            Some((5, ClientConn::Unix(_))) => {}
            _ => panic!("expected a direct unix client starting with 5"),
        }
    }
}
