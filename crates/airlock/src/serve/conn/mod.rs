//! Connection hygiene: what a client that opens connections and then dawdles
//! (or opens too many) gets. Finding 3 of issue 13: 50 connections sending
//! headers a byte at a time were held forever.
//!
//! * [`limits`]: a cap on open connections per listener and per peer (source
//!   address on TCP, every loopback address one peer; uid on the unix socket);
//!   past it, a clear `503 too_many_connections` with `Retry-After`, then the
//!   connection is closed, never a hang.
//! * [`clock`]: per connection, a header read timeout (from the first byte of a
//!   request, or from accept, to its complete head) and an idle keep-alive
//!   timeout (between requests); a connection past either is closed.
//! * [`body`]: a body read timeout (the whole request body within it, else
//!   `408 request_timeout`), as a middleware that also enforces the body size.
//!
//! [`serve`] is the accept loop that puts them together in front of the router.

pub mod body;
pub mod clock;
pub mod limits;

use clock::{ConnClock, Expired};
use limits::{Limits, Peer};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

/// Every connection setting of `airlock serve`, with their defaults.
#[derive(Debug, Clone)]
pub struct ConnConfig {
    /// From accept, or from the first byte of a request, to its complete head.
    pub header_timeout: Duration,
    /// The whole request body, from the end of the head.
    pub body_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// Open connections at once on each listener (the unix socket, TCP).
    pub max_connections: usize,
    /// Open connections at once from one peer.
    pub max_per_peer: usize,
}

impl Default for ConnConfig {
    fn default() -> Self {
        ConnConfig {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections: 512,
            max_per_peer: 128,
        }
    }
}

/// A listener of either kind, yielding streams with the peer they come from.
pub enum Listener {
    Unix(tokio::net::UnixListener),
    Tcp(tokio::net::TcpListener),
}

trait Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Stream for T {}

impl Listener {
    async fn accept(&self) -> std::io::Result<(Box<dyn Stream>, Peer)> {
        match self {
            Listener::Unix(l) => {
                let (s, _) = l.accept().await?;
                let peer = s.peer_cred().map_or(Peer::Unknown, |c| Peer::Uid(c.uid()));
                Ok((Box::new(s), peer))
            }
            Listener::Tcp(l) => {
                let (s, addr) = l.accept().await?;
                let _ = s.set_nodelay(true);
                Ok((Box::new(s), Peer::of_ip(addr.ip())))
            }
        }
    }
}

/// Accept connections until `stop`, serving each with `app` under `limits`;
/// then let open connections finish their current request (graceful) and
/// return when every connection has closed.
pub async fn serve(
    listener: Listener,
    app: axum::Router,
    limits: Arc<Limits>,
    stop: CancellationToken,
) {
    let tasks = tokio_util::task::TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            // EMFILE, ECONNABORTED and the like: the listener is still good.
            Err(e) => {
                eprintln!("airlock serve: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        match limits.admit(peer) {
            Ok(permit) => {
                let app = app.clone();
                let config = limits.config().clone();
                let stop = stop.clone();
                tasks.spawn(async move {
                    serve_connection(stream, app, config, stop).await;
                    drop(permit);
                });
            }
            Err(refusal) => {
                if let Some(ticket) = limits.refusal_ticket() {
                    tasks.spawn(async move {
                        limits::refuse(stream, refusal).await;
                        drop(ticket);
                    });
                }
                // Past the refusal budget too: closing at once is the answer.
            }
        }
    }
    tasks.close();
    tasks.wait().await;
}

/// One connection: hyper's HTTP/1 server over the stream, watched by its clock.
async fn serve_connection(
    stream: Box<dyn Stream>,
    app: axum::Router,
    config: ConnConfig,
    stop: CancellationToken,
) {
    let clock = Arc::new(ConnClock::new());
    let io = hyper_util::rt::TokioIo::new(clock::Watched::new(stream, clock.clone()));
    let service = {
        let clock = clock.clone();
        hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let busy = clock.begin_request();
            let app = app.clone();
            async move {
                let response = tower::ServiceExt::oneshot(app, req.map(axum::body::Body::new))
                    .await
                    .unwrap_or_else(|never: Infallible| match never {});
                // The request counts as in progress until its response body is
                // done (a quiet stream is not an idle connection).
                Ok::<_, Infallible>(
                    response.map(|b| axum::body::Body::new(clock::Busy::wrap(b, busy))),
                )
            }
        })
    };
    let conn = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(io, service);
    tokio::pin!(conn);
    let mut tick = tokio::time::interval(clock::tick_for(&config));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut conn => return,
            _ = stop.cancelled(), if !stop.is_cancelled() => {
                conn.as_mut().graceful_shutdown();
            }
            _ = tick.tick() => {
                match clock.expired(&config) {
                    None => {}
                    // Dropping the connection closes the socket.
                    Some(Expired::Header | Expired::Idle) => return,
                }
            }
        }
    }
}
