//! The guest's stdout and stderr: written straight to the process's own fd 1
//! and 2 (the caller captures, streams and caps them again), counted against
//! `limits.output`; a write past the cap traps the guest, which ends the run as
//! `output`.

use bytes::Bytes;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// Shared by both streams: the cap applies to each, the flag to the run.
#[derive(Debug)]
pub struct OutputState {
    pub cap: u64,
    pub over: AtomicBool,
}

#[derive(Clone)]
pub struct CappedFd {
    fd: RawFd,
    written: Arc<AtomicU64>,
    state: Arc<OutputState>,
}

impl CappedFd {
    pub fn new(fd: RawFd, state: Arc<OutputState>) -> CappedFd {
        CappedFd {
            fd,
            written: Arc::new(AtomicU64::new(0)),
            state,
        }
    }

    /// Writes what fits under the cap; false once the cap is passed.
    fn put(&self, buf: &[u8]) -> bool {
        let before = self.written.fetch_add(buf.len() as u64, Ordering::SeqCst);
        let room = self.state.cap.saturating_sub(before) as usize;
        let keep = &buf[..room.min(buf.len())];
        // The reader is the caller; if it is gone the run is being torn down.
        let _ = crate::sys::write_all(self.fd, keep);
        if keep.len() < buf.len() {
            self.state.over.store(true, Ordering::SeqCst);
            return false;
        }
        true
    }
}

impl IsTerminal for CappedFd {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedFd {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CappedFd {
    async fn ready(&mut self) {}
}

impl OutputStream for CappedFd {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        if self.put(&bytes) {
            Ok(())
        } else {
            Err(StreamError::trap("airlock: output limit reached"))
        }
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        if self.state.over.load(Ordering::SeqCst) {
            return Err(StreamError::trap("airlock: output limit reached"));
        }
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for CappedFd {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.put(buf) {
            Poll::Ready(Ok(buf.len()))
        } else {
            Poll::Ready(Err(std::io::Error::other("airlock: output limit reached")))
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
