//! The caller's output relay, shared by every backend: a helper's stdout and
//! stderr streamed to the [`OutputSink`] as they come, each cut at
//! `limits.output`, and its report (fd 3) collected, until all three close.

use crate::sys;
use crate::{OutputSink, SandboxError};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Instant;

/// One captured stream, cut at the cap.
pub struct Capture {
    pub bytes: Vec<u8>,
    pub cap: usize,
    pub truncated: bool,
}

impl Capture {
    pub fn new(cap: u64) -> Capture {
        Capture {
            bytes: Vec::new(),
            cap: usize::try_from(cap).unwrap_or(usize::MAX),
            truncated: false,
        }
    }

    /// Keeps what fits; returns the part kept (to stream) and whether the cap was passed.
    pub fn push<'a>(&mut self, chunk: &'a [u8]) -> (&'a [u8], bool) {
        let room = self.cap.saturating_sub(self.bytes.len());
        let kept = &chunk[..room.min(chunk.len())];
        let over = kept.len() < chunk.len();
        self.truncated |= over;
        self.bytes.extend_from_slice(kept);
        (kept, over)
    }

    /// The captured text, with a closing note when it was cut.
    pub fn text(&self) -> String {
        let mut s = String::from_utf8_lossy(&self.bytes).into_owned();
        if self.truncated {
            s.push_str(&format!(
                "\n[airlock: output truncated at {} bytes]\n",
                self.cap
            ));
        }
        s
    }
}

/// What a helper sent: its two streams, capped, and its report's bytes.
pub struct Relayed {
    pub stdout: Capture,
    pub stderr: Capture,
    pub report: Vec<u8>,
}

/// How a relay ended.
pub enum Relay {
    /// Every pipe closed.
    Finished(Relayed),
    /// The backstop passed with a pipe still open: the helper stopped working
    /// (it enforces the timeout itself); the caller kills it.
    Stalled,
}

/// The helper's three pipes.
pub struct Pipes<'a> {
    pub stdout: &'a OwnedFd,
    pub stderr: &'a OwnedFd,
    pub report: &'a OwnedFd,
}

/// Relays until every pipe closes or `backstop` passes. `over` is called once,
/// the first time a stream passes `cap` (the native and OCI helpers are then
/// told to kill the run; the wasm guest traps on its own).
pub fn relay(
    pipes: Pipes<'_>,
    cap: u64,
    backstop: Instant,
    sink: &mut dyn OutputSink,
    over: &mut dyn FnMut(),
) -> Result<Relay, SandboxError> {
    let mut out = Capture::new(cap);
    let mut err = Capture::new(cap);
    let mut report = Vec::new();
    let mut open = [true, true, true];
    let mut over_told = false;
    let fds = [
        pipes.stdout.as_raw_fd(),
        pipes.stderr.as_raw_fd(),
        pipes.report.as_raw_fd(),
    ];
    let mut buf = vec![0u8; 64 * 1024];
    while open.iter().any(|o| *o) {
        let live: Vec<RawFd> = fds
            .iter()
            .zip(open)
            .filter(|(_, o)| *o)
            .map(|(f, _)| *f)
            .collect();
        let wait = backstop.saturating_duration_since(Instant::now());
        if wait.is_zero() {
            return Ok(Relay::Stalled);
        }
        let revents = sys::poll(&live, wait.as_millis().min(1000) as i32).map_err(|source| {
            SandboxError::Io {
                context: "poll".into(),
                source,
            }
        })?;
        for (fd, rev) in live.iter().zip(revents) {
            if rev == 0 {
                continue;
            }
            let idx = fds.iter().position(|f| f == fd).unwrap_or(2);
            let n = sys::read(*fd, &mut buf).unwrap_or(0);
            if n == 0 {
                open[idx] = false;
                continue;
            }
            let chunk = &buf[..n];
            let passed = match idx {
                0 => {
                    let (kept, passed) = out.push(chunk);
                    if !kept.is_empty() {
                        sink.stdout(kept);
                    }
                    passed
                }
                1 => {
                    let (kept, passed) = err.push(chunk);
                    if !kept.is_empty() {
                        sink.stderr(kept);
                    }
                    passed
                }
                _ => {
                    report.extend_from_slice(chunk);
                    false
                }
            };
            if passed && !over_told {
                over_told = true;
                over();
            }
        }
    }
    Ok(Relay::Finished(Relayed {
        stdout: out,
        stderr: err,
        report,
    }))
}

#[cfg(test)]
mod tests {
    use super::Capture;

    #[test]
    fn capture_cuts_at_the_cap_and_marks_it() {
        let mut c = Capture::new(5);
        assert_eq!(c.push(b"abc"), (&b"abc"[..], false));
        assert_eq!(c.push(b"defg"), (&b"de"[..], true));
        assert_eq!(c.push(b"x"), (&b""[..], true));
        assert!(c.truncated);
        assert!(c.text().starts_with("abcde\n[airlock: output truncated"));
    }
}
