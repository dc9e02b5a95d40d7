//! Caps on open connections, per listener and per peer. A connection over a
//! cap is answered `503 too_many_connections` with `Retry-After` and closed: a
//! client learns why at once instead of hanging in the accept queue.
//!
//! The unix socket and TCP each have their own `--max-connections`: TCP is
//! loopback only, where any local user can connect, and must not be able to
//! lock the socket's owner out (nor the other way round). Every loopback
//! address is one peer: a local user can bind 127.0.0.2, 127.0.0.3, ... and
//! would otherwise get a per-peer cap per address.

use super::ConnConfig;
use crate::serve::error::{ApiError, ErrorCode};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Who is on the other end, as far as the caps are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    /// A TCP client on a non-loopback address (canonical: an IPv4-mapped
    /// IPv6 address is its IPv4 one).
    Ip(IpAddr),
    /// A TCP client on any loopback address (127.0.0.0/8, ::1, or IPv4-mapped
    /// loopback): all of them are one peer, since any local user may use any.
    Loopback,
    /// A unix-socket client, by uid (`SO_PEERCRED`).
    Uid(u32),
    /// A unix-socket peer whose credentials could not be read: all such share
    /// one cap.
    Unknown,
}

impl Peer {
    /// The peer a TCP connection from `ip` counts as.
    pub fn of_ip(ip: IpAddr) -> Peer {
        let ip = ip.to_canonical();
        match ip.is_loopback() {
            true => Peer::Loopback,
            false => Peer::Ip(ip),
        }
    }

    fn listener(self) -> Side {
        match self {
            Peer::Ip(_) | Peer::Loopback => Side::Tcp,
            Peer::Uid(_) | Peer::Unknown => Side::Unix,
        }
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Ip(ip) => write!(f, "address {ip}"),
            Peer::Loopback => write!(
                f,
                "loopback (every 127.0.0.0/8 and ::1 address, counted as one peer)"
            ),
            Peer::Uid(uid) => write!(f, "uid {uid}"),
            Peer::Unknown => write!(f, "an unidentified peer"),
        }
    }
}

/// Which listener a connection came through: each has its own overall cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Unix,
    Tcp,
}

impl Side {
    fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::Unix => "its unix socket",
            Side::Tcp => "its TCP listener",
        })
    }
}

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Overall { max: usize, side: Side },
    PerPeer { max: usize, peer: Peer },
}

/// Refusals being written at once; past this, a refused connection is closed
/// without an answer (a flood must not make the refusals themselves a load).
const MAX_REFUSALS_IN_FLIGHT: usize = 64;

pub struct Limits {
    config: ConnConfig,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Open connections by [`Side::index`].
    open: [usize; 2],
    per_peer: HashMap<Peer, usize>,
    refusing: usize,
    refused_total: u64,
}

/// An open connection's place under the caps; given back on drop.
pub struct Permit {
    limits: Arc<Limits>,
    peer: Peer,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut s = self.limits.lock();
        s.open[self.peer.listener().index()] -= 1;
        if let Some(n) = s.per_peer.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                s.per_peer.remove(&self.peer);
            }
        }
    }
}

/// A refusal being written; given back on drop.
pub struct RefusalTicket(Arc<Limits>);

impl Drop for RefusalTicket {
    fn drop(&mut self) {
        self.0.lock().refusing -= 1;
    }
}

impl Limits {
    pub fn new(config: ConnConfig) -> Arc<Limits> {
        Arc::new(Limits {
            config,
            state: Mutex::new(State::default()),
        })
    }

    pub fn config(&self) -> &ConnConfig {
        &self.config
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Take a place for a connection from `peer`, or say which cap it is over.
    pub fn admit(self: &Arc<Self>, peer: Peer) -> Result<Permit, Refusal> {
        let mut s = self.lock();
        let side = peer.listener();
        // The peer's own cap first: when both are reached, that is the one
        // the client can do something about.
        let mine = s.per_peer.get(&peer).copied().unwrap_or(0);
        if mine >= self.config.max_per_peer {
            s.refused_total += 1;
            return Err(Refusal::PerPeer {
                max: self.config.max_per_peer,
                peer,
            });
        }
        if s.open[side.index()] >= self.config.max_connections {
            s.refused_total += 1;
            return Err(Refusal::Overall {
                max: self.config.max_connections,
                side,
            });
        }
        s.open[side.index()] += 1;
        *s.per_peer.entry(peer).or_insert(0) += 1;
        Ok(Permit {
            limits: self.clone(),
            peer,
        })
    }

    /// A place to write one refusal, if the refusal budget has room.
    pub fn refusal_ticket(self: &Arc<Self>) -> Option<RefusalTicket> {
        let mut s = self.lock();
        if s.refusing >= MAX_REFUSALS_IN_FLIGHT {
            return None;
        }
        s.refusing += 1;
        Some(RefusalTicket(self.clone()))
    }

    /// Connections open now, all listeners together.
    pub fn open(&self) -> usize {
        self.lock().open.iter().sum()
    }

    /// Connections refused since the start.
    pub fn refused_total(&self) -> u64 {
        self.lock().refused_total
    }
}

/// The answer for a connection over a cap: a complete HTTP/1.1 response, then
/// the write side is shut and whatever the client sent meanwhile is read (at
/// most 64 KiB, at most 1 s) so that the close does not reset the answer away.
pub async fn refuse<S>(mut stream: S, refusal: Refusal)
where
    S: tokio::io::AsyncRead + AsyncWrite + Unpin,
{
    let message = match refusal {
        Refusal::Overall { max, side } => format!(
            "the server has {max} connections open on {side}, its limit per listener (--max-connections); retry shortly"
        ),
        Refusal::PerPeer { max, peer } => format!(
            "{peer} has {max} connections open, the limit per peer (--max-connections-per-peer); close idle ones or retry shortly"
        ),
    };
    let error = ApiError::new(ErrorCode::TooManyConnections, message);
    let body = error.body().to_string();
    let status = error.code.status();
    let response = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    );
    let answer = async {
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut drained = 0usize;
        while drained < 64 * 1024 {
            match stream.read(&mut sink).await? {
                0 => break,
                n => drained += n,
            }
        }
        Ok::<_, std::io::Error>(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), answer).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_per_listener_and_per_peer_and_places_come_back() {
        let limits = Limits::new(ConnConfig {
            max_connections: 3,
            max_per_peer: 2,
            ..ConnConfig::default()
        });
        let a = Peer::Ip("192.0.2.1".parse().unwrap());
        let b = Peer::Ip("192.0.2.2".parse().unwrap());
        let a1 = limits.admit(a).unwrap();
        let _a2 = limits.admit(a).unwrap();
        assert_eq!(
            limits.admit(a).err(),
            Some(Refusal::PerPeer { max: 2, peer: a })
        );
        let _b1 = limits.admit(b).unwrap();
        let full = Some(Refusal::Overall {
            max: 3,
            side: Side::Tcp,
        });
        assert_eq!(limits.admit(b).err(), full);
        // The unix socket has its own places.
        let _u1 = limits.admit(Peer::Uid(1000)).unwrap();
        let _u2 = limits.admit(Peer::Uid(1001)).unwrap();
        assert_eq!(limits.open(), 5);
        drop(a1);
        assert_eq!(limits.open(), 4);
        let _a3 = limits.admit(a).unwrap();
        assert_eq!(limits.refused_total(), 2);
    }

    #[test]
    fn every_loopback_address_is_one_peer() {
        for ip in [
            "127.0.0.1",
            "127.0.0.2",
            "127.255.0.9",
            "::1",
            "::ffff:127.0.0.5",
        ] {
            assert_eq!(Peer::of_ip(ip.parse().unwrap()), Peer::Loopback, "{ip}");
        }
        assert_eq!(
            Peer::of_ip("::ffff:192.0.2.1".parse().unwrap()),
            Peer::Ip("192.0.2.1".parse().unwrap())
        );
    }

    #[tokio::test]
    async fn a_refusal_is_a_complete_http_answer() {
        let (mut client, server) = tokio::io::duplex(8192);
        let writer = tokio::spawn(refuse(
            server,
            Refusal::Overall {
                max: 7,
                side: Side::Unix,
            },
        ));
        client
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut text = String::new();
        client.read_to_string(&mut text).await.unwrap();
        drop(client);
        writer.await.unwrap();
        assert!(text.starts_with("HTTP/1.1 503 "), "{text}");
        assert!(text.contains("retry-after: 1\r\n"), "{text}");
        assert!(text.contains("\"code\":\"too_many_connections\""), "{text}");
        assert!(
            text.contains("7 connections open on its unix socket"),
            "{text}"
        );
    }
}
