//! The two timeouts of a connection between requests. hyper's own
//! `header_read_timeout` starts when a kept-alive connection becomes idle, so it
//! cannot tell a slow head from a quiet keep-alive; this clock can:
//!
//! * header: from accept, or from the first byte of a new request, until the
//!   request reaches the router (its head is complete);
//! * idle: from the end of a response (its body delivered or dropped) until the
//!   first byte of the next request.
//!
//! While a request is in progress (from its head to the end of its response
//! body) neither runs: a long run or a quiet output stream is not idle. The
//! request body has its own timeout ([`super::body`]).

use super::ConnConfig;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

const NONE: u64 = u64::MAX;

/// Which timeout a connection ran past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expired {
    Header,
    Idle,
}

pub struct ConnClock {
    epoch: Instant,
    /// Requests whose response body is not finished yet.
    in_flight: AtomicUsize,
    /// Milliseconds since `epoch` when the current head started (`NONE`: none).
    head_since: AtomicU64,
    /// Milliseconds since `epoch` when the connection last became idle.
    idle_since: AtomicU64,
}

impl Default for ConnClock {
    fn default() -> Self {
        ConnClock::new()
    }
}

impl ConnClock {
    /// A fresh connection is waiting for its first head: the header timeout runs.
    pub fn new() -> ConnClock {
        ConnClock {
            epoch: Instant::now(),
            in_flight: AtomicUsize::new(0),
            head_since: AtomicU64::new(0),
            idle_since: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Bytes arrived: if nothing is in progress, a new head has started.
    fn on_read(&self) {
        if self.in_flight.load(Ordering::SeqCst) == 0 {
            let _ = self.head_since.compare_exchange(
                NONE,
                self.now(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
        }
    }

    /// A request's head is complete: it is in progress until the guard drops.
    pub fn begin_request(self: &Arc<Self>) -> BusyGuard {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.head_since.store(NONE, Ordering::SeqCst);
        BusyGuard(self.clone())
    }

    /// Whether the connection has run past a timeout now.
    pub fn expired(&self, config: &ConnConfig) -> Option<Expired> {
        if self.in_flight.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let now = self.now();
        let head = self.head_since.load(Ordering::SeqCst);
        if head != NONE {
            return (now.saturating_sub(head) >= config.header_timeout.as_millis() as u64)
                .then_some(Expired::Header);
        }
        let idle = self.idle_since.load(Ordering::SeqCst);
        (now.saturating_sub(idle) >= config.idle_timeout.as_millis() as u64)
            .then_some(Expired::Idle)
    }
}

/// Marks one request in progress; when dropped (the response body finished or
/// was abandoned), the connection is idle again.
pub struct BusyGuard(Arc<ConnClock>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        let clock = &self.0;
        clock.idle_since.store(clock.now(), Ordering::SeqCst);
        clock.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How often to look at the clock: a quarter of the shorter timeout, between
/// 50 ms and 1 s.
pub fn tick_for(config: &ConnConfig) -> Duration {
    (config.header_timeout.min(config.idle_timeout) / 4)
        .clamp(Duration::from_millis(50), Duration::from_secs(1))
}

/// The connection's stream, telling the clock when bytes arrive.
pub struct Watched<S> {
    inner: S,
    clock: Arc<ConnClock>,
}

impl<S> Watched<S> {
    pub fn new(inner: S, clock: Arc<ConnClock>) -> Watched<S> {
        Watched { inner, clock }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.clock.on_read();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// A response body that keeps its request in progress until it ends.
pub struct Busy {
    inner: axum::body::Body,
    _guard: BusyGuard,
}

impl Busy {
    pub fn wrap(inner: axum::body::Body, guard: BusyGuard) -> Busy {
        Busy {
            inner,
            _guard: guard,
        }
    }
}

impl axum::body::HttpBody for Busy {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(header_ms: u64, idle_ms: u64) -> ConnConfig {
        ConnConfig {
            header_timeout: Duration::from_millis(header_ms),
            idle_timeout: Duration::from_millis(idle_ms),
            ..ConnConfig::default()
        }
    }

    #[test]
    fn header_then_busy_then_idle() {
        let clock = Arc::new(ConnClock::new());
        // Accepted, nothing complete: the header timeout runs from accept.
        assert_eq!(clock.expired(&config(0, 10_000)), Some(Expired::Header));
        assert_eq!(clock.expired(&config(10_000, 0)), None);
        // A request in progress: neither runs.
        let busy = clock.begin_request();
        assert_eq!(clock.expired(&config(0, 0)), None);
        drop(busy);
        // Between requests: the idle timeout runs, the header one does not.
        assert_eq!(clock.expired(&config(0, 10_000)), None);
        assert_eq!(clock.expired(&config(10_000, 0)), Some(Expired::Idle));
        // The next request's first byte starts its header timeout.
        clock.on_read();
        assert_eq!(clock.expired(&config(0, 10_000)), Some(Expired::Header));
        assert_eq!(clock.expired(&config(10_000, 0)), None);
    }
}
