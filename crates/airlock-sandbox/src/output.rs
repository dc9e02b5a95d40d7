//! The caller's output relay, shared by every backend: a helper's stdout and
//! stderr streamed to the [`OutputSink`] as they come, each cut at
//! `limits.output`, and its report (fd 3) collected, until all three close.

use crate::sys;
use crate::{KillReason, OutputSink, SandboxError};
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Instant;

/// A stream's length, SHA-256 and first bytes, fed chunk by chunk: what the
/// audit record keeps of stdout, stderr and a command's stdin.
#[derive(Clone, Default)]
pub struct StreamTally {
    bytes: u64,
    hasher: Sha256,
    head: Vec<u8>,
}

impl StreamTally {
    /// Counts and hashes `chunk`, keeping the stream's first `keep` bytes.
    pub fn feed(&mut self, chunk: &[u8], keep: usize) {
        self.bytes += chunk.len() as u64;
        self.hasher.update(chunk);
        let room = keep.saturating_sub(self.head.len());
        self.head.extend_from_slice(&chunk[..room.min(chunk.len())]);
    }

    /// Bytes fed so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The stream's start, as kept.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// SHA-256 of everything fed so far, hex.
    pub fn sha256_hex(&self) -> String {
        hex::encode(self.hasher.clone().finalize())
    }
}

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
enum Relay {
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

/// How often a run whose output is quiet asks its sink whether it was
/// cancelled.
pub(crate) const CANCEL_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// Relays until every pipe closes or `backstop` passes. `kill` is called once
/// with [`KillReason::Output`] the first time a stream passes `cap` (the
/// native and OCI helpers are then told to kill the run; the wasm guest traps
/// on its own), and once with [`KillReason::Cancelled`] when the sink says its
/// reader stopped waiting.
fn relay(
    pipes: Pipes<'_>,
    cap: u64,
    backstop: Instant,
    sink: &mut dyn OutputSink,
    kill: &mut dyn FnMut(KillReason),
) -> Result<Relay, SandboxError> {
    let mut out = Capture::new(cap);
    let mut err = Capture::new(cap);
    let mut report = Vec::new();
    let mut open = [true, true, true];
    let mut over_told = false;
    let mut cancel_told = false;
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
        if !cancel_told && sink.cancelled() {
            cancel_told = true;
            kill(KillReason::Cancelled);
        }
        let wait = wait.min(CANCEL_POLL);
        let revents =
            sys::poll(&live, wait.as_millis() as i32).map_err(|source| SandboxError::Io {
                context: "poll".into(),
                source,
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
                kill(KillReason::Output);
            }
        }
    }
    Ok(Relay::Finished(Relayed {
        stdout: out,
        stderr: err,
        report,
    }))
}

/// A helper's stdout or stderr, taken from its child handle (`name` for the
/// error when the pipe was not made).
pub fn take_pipe<T: Into<OwnedFd>>(pipe: Option<T>, name: &str) -> Result<OwnedFd, SandboxError> {
    pipe.map(Into::into)
        .ok_or_else(|| SandboxError::Helper(format!("no {name} pipe")))
}

/// [`relay`] for a helper process: `tell` asks the helper to kill the run for
/// a reason (see [`relay`]). One that still holds a pipe open at `backstop`
/// has stopped working (every helper enforces the run's timeout itself), so
/// `kill_helper` ends it and the run fails naming the `what` helper.
pub fn relay_helper(
    pipes: Pipes<'_>,
    cap: u64,
    backstop: Instant,
    sink: &mut dyn OutputSink,
    tell: &mut dyn FnMut(KillReason),
    what: &str,
    kill_helper: &mut dyn FnMut(),
) -> Result<Relayed, SandboxError> {
    match relay(pipes, cap, backstop, sink, tell)? {
        Relay::Finished(r) => Ok(r),
        Relay::Stalled => {
            kill_helper();
            Err(SandboxError::Helper(format!(
                "the {what} helper stopped responding; killed"
            )))
        }
    }
}

/// A helper's report, parsed. `ended` says how the helper ended ("exited
/// (exit status: 1)"), for the error when it sent no report at all.
pub fn parse_report<T: DeserializeOwned>(
    bytes: &[u8],
    what: &str,
    ended: &str,
) -> Result<T, SandboxError> {
    if bytes.is_empty() {
        return Err(SandboxError::Helper(format!(
            "the {what} helper {ended} without a report"
        )));
    }
    serde_json::from_slice(bytes)
        .map_err(|e| SandboxError::Helper(format!("unreadable {what} helper report: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Discard;

    #[test]
    fn capture_cuts_at_the_cap_and_marks_it() {
        let mut c = Capture::new(5);
        assert_eq!(c.push(b"abc"), (&b"abc"[..], false));
        assert_eq!(c.push(b"defg"), (&b"de"[..], true));
        assert_eq!(c.push(b"x"), (&b""[..], true));
        assert!(c.truncated);
        assert!(c.text().starts_with("abcde\n[airlock: output truncated"));
    }

    #[test]
    fn a_missing_or_garbled_report_names_the_helper_and_how_it_ended() {
        let e = parse_report::<serde_json::Value>(b"", "wasm", "exited (signal: 9)").unwrap_err();
        assert!(
            e.to_string()
                .contains("the wasm helper exited (signal: 9) without a report"),
            "{e}"
        );
        let e = parse_report::<serde_json::Value>(b"{", "sandbox", "exited").unwrap_err();
        assert!(
            e.to_string().contains("unreadable sandbox helper report"),
            "{e}"
        );
        let v: serde_json::Value =
            parse_report(br#"{"exit_code":0}"#, "sandbox", "exited").unwrap();
        assert_eq!(v["exit_code"], 0);
    }

    /// A sink whose reader stopped waiting.
    struct Gone;
    impl OutputSink for Gone {
        fn stdout(&mut self, _: &[u8]) {}
        fn stderr(&mut self, _: &[u8]) {}
        fn cancelled(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_cancelled_sink_has_the_run_killed_once_while_its_output_is_quiet() {
        let (out_r, out_w) = sys::pipe().unwrap();
        let (err_r, err_w) = sys::pipe().unwrap();
        let (rep_r, rep_w) = sys::pipe().unwrap();
        let pipes = Pipes {
            stdout: &out_r,
            stderr: &err_r,
            report: &rep_r,
        };
        // The "helper": its pipes close once it is told to kill the run.
        let mut ends = Some((out_w, err_w, rep_w));
        let mut told = Vec::new();
        let started = Instant::now();
        let r = relay_helper(
            pipes,
            1024,
            Instant::now() + std::time::Duration::from_secs(30),
            &mut Gone,
            &mut |reason| {
                told.push(reason);
                ends = None;
            },
            "test",
            &mut || panic!("not stalled"),
        );
        assert!(r.is_ok());
        assert_eq!(told, vec![KillReason::Cancelled]);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn a_helper_that_holds_its_pipes_past_the_backstop_is_killed() {
        // Write ends kept open: the relay would wait for ever without the backstop.
        let (out_r, _out_w) = sys::pipe().unwrap();
        let (err_r, _err_w) = sys::pipe().unwrap();
        let (rep_r, _rep_w) = sys::pipe().unwrap();
        let pipes = Pipes {
            stdout: &out_r,
            stderr: &err_r,
            report: &rep_r,
        };
        let mut killed = false;
        let backstop = Instant::now() + std::time::Duration::from_millis(20);
        let e = relay_helper(
            pipes,
            1024,
            backstop,
            &mut Discard,
            &mut |_| {},
            "OCI",
            &mut || killed = true,
        )
        .err()
        .expect("a stalled helper is an error");
        assert!(killed);
        assert!(
            e.to_string().contains("the OCI helper stopped responding"),
            "{e}"
        );
    }
}
