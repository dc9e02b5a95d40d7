//! The caller's own stdin, streamed into a command (`airlock run` with a pipe
//! or `--stdin FILE`), counted and hashed on its way, so that the execution
//! record can say what went in as it says what came out.
//!
//! The pump is a thread of its own and is never joined: it may sit in a read
//! of a stdin that never ends after the command has exited (the pipe's EPIPE
//! ends it otherwise). What the record gets is a snapshot taken once the
//! command's processes are all dead: every byte written into the command's
//! pipe by then, read or not.

use crate::output::StreamTally;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

/// The most of the stream's start a snapshot keeps (the audit log's own limit,
/// `audit.output_bytes`, is usually lower and applies after this).
pub const HEAD_MAX: usize = 64 * 1024;

/// What a caller's stdin delivered to the command.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamedStdin {
    /// Bytes written into the command's stdin pipe.
    pub bytes: u64,
    /// SHA-256 of those bytes, hex.
    pub sha256: String,
    /// Their start, at most [`HEAD_MAX`] bytes.
    pub head: Vec<u8>,
}

/// A running pump's tally; [`StdinTap::snapshot`] reads it.
#[derive(Clone)]
pub struct StdinTap(Arc<Mutex<StreamTally>>);

impl StdinTap {
    /// What has been delivered so far.
    pub fn snapshot(&self) -> StreamedStdin {
        let Ok(t) = self.0.lock() else {
            return StreamedStdin::default();
        };
        StreamedStdin {
            bytes: t.bytes(),
            sha256: t.sha256_hex(),
            head: t.head().to_vec(),
        }
    }
}

/// Copies `input` into `pipe` on a thread of its own until either side ends,
/// counting each chunk once it is written.
pub fn pump(
    mut input: impl Read + Send + 'static,
    mut pipe: impl Write + Send + 'static,
) -> StdinTap {
    let tally = Arc::new(Mutex::new(StreamTally::default()));
    let tap = StdinTap(tally.clone());
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match input.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return,
            };
            if pipe.write_all(&buf[..n]).is_err() {
                return;
            }
            if let Ok(mut t) = tally.lock() {
                t.feed(&buf[..n], HEAD_MAX);
            }
        }
    });
    tap
}

/// [`pump`] from this process's own stdin.
pub fn pump_own_stdin(pipe: impl Write + Send + 'static) -> StdinTap {
    pump(std::io::stdin(), pipe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    fn wait_for(tap: &StdinTap, bytes: u64) -> StreamedStdin {
        for _ in 0..500 {
            let s = tap.snapshot();
            if s.bytes == bytes {
                return s;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        tap.snapshot()
    }

    #[test]
    fn counts_hashes_and_keeps_the_start_of_what_it_delivered() {
        let (r, w) = std::io::pipe().unwrap();
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let tap = pump(std::io::Cursor::new(data.clone()), w);
        let mut got = Vec::new();
        let mut r = r;
        r.read_to_end(&mut got).unwrap();
        assert_eq!(got, data, "every byte reaches the pipe");
        let s = wait_for(&tap, data.len() as u64);
        assert_eq!(s.bytes, data.len() as u64);
        assert_eq!(s.sha256, hex::encode(Sha256::digest(&data)));
        assert_eq!(s.head, data[..HEAD_MAX]);
    }

    #[test]
    fn counts_only_what_the_pipe_took() {
        let (r, w) = std::io::pipe().unwrap();
        drop(r);
        let tap = pump(std::io::Cursor::new(b"never read".to_vec()), w);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(
            tap.snapshot().bytes,
            0,
            "the write failed: nothing delivered"
        );
    }
}
