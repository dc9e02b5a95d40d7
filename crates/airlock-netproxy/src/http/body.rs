//! Passing a message body from one socket to another in the framing it came
//! with: bytes already read go out of the buffer, the rest moves in the kernel.

use super::head::{bad_data, BodyLength, ReadBuf};
use crate::fdio::{send_all, ReadyFd, Splicer};
use std::io;

/// A chunk-size line or trailer field longer than this is refused.
const MAX_LINE: usize = 8 * 1024;
/// Below this, a body part is copied through the buffer rather than spliced:
/// a splice costs two system calls whatever it moves.
const SPLICE_FROM: u64 = 64 * 1024;

/// Where one direction's body goes, and how its bytes are counted.
pub struct Pass<'a, F, T> {
    pub from: &'a F,
    pub buf: &'a mut ReadBuf,
    pub to: &'a T,
    pub splicer: &'a mut Splicer,
    pub count: &'a (dyn Fn(u64) + Sync),
}

impl<F: ReadyFd, T: ReadyFd> Pass<'_, F, T> {
    async fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        send_all(self.to, bytes).await?;
        (self.count)(bytes.len() as u64);
        Ok(())
    }

    /// The whole body, as `length` says it is delimited.
    pub async fn body(&mut self, length: BodyLength) -> io::Result<()> {
        match length {
            BodyLength::Empty => Ok(()),
            BodyLength::Exact(n) => self.exact(n).await,
            BodyLength::Chunked => self.chunked().await,
            BodyLength::UntilClose => {
                let buffered = self.buf.take();
                self.send(&buffered).await?;
                let count = self.count;
                self.splicer.pass(self.from, self.to, None, count).await?;
                Ok(())
            }
        }
    }

    /// Exactly `n` bytes; the sender ending sooner is an error.
    async fn exact(&mut self, n: u64) -> io::Result<()> {
        let mut left = n;
        while left > 0 {
            let unread = self.buf.unread();
            if !unread.is_empty() {
                let k = unread
                    .len()
                    .min(usize::try_from(left).unwrap_or(usize::MAX));
                let part = unread[..k].to_vec();
                self.buf.consume(k);
                self.send(&part).await?;
                left -= k as u64;
            } else if left >= SPLICE_FROM {
                let count = self.count;
                let moved = self
                    .splicer
                    .pass(self.from, self.to, Some(left), count)
                    .await?;
                if moved < left {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                left = 0;
            } else if self.buf.fill(self.from).await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        Ok(())
    }

    /// `chunked` (RFC 9112 §7.1), passed on as it came: size lines, data,
    /// the last chunk and the trailer section.
    async fn chunked(&mut self) -> io::Result<()> {
        loop {
            let line = self.buf.line(self.from, MAX_LINE).await?;
            let size = chunk_size(&line)?;
            self.send(&line).await?;
            if size == 0 {
                // Trailer fields, then the empty line.
                loop {
                    let line = self.buf.line(self.from, MAX_LINE).await?;
                    self.send(&line).await?;
                    if line == b"\r\n" || line == b"\n" {
                        return Ok(());
                    }
                }
            }
            self.exact(size).await?;
            let end = self.buf.line(self.from, MAX_LINE).await?;
            if end != b"\r\n" && end != b"\n" {
                return Err(bad_data("chunk data longer than its size"));
            }
            self.send(&end).await?;
        }
    }
}

/// The size of a chunk from its size line (`1a2b;ext=1\r\n`).
fn chunk_size(line: &[u8]) -> io::Result<u64> {
    let digits: Vec<u8> = line
        .iter()
        .copied()
        .take_while(|b| b.is_ascii_hexdigit())
        .collect();
    let rest = &line[digits.len()..];
    let well_formed = !digits.is_empty()
        && digits.len() <= 15
        && matches!(rest.first(), Some(b';' | b'\r' | b'\n' | b' ' | b'\t'));
    if !well_formed {
        return Err(bad_data("bad chunk size line"));
    }
    let text = std::str::from_utf8(&digits).map_err(|_| bad_data("bad chunk size"))?;
    u64::from_str_radix(text, 16).map_err(|_| bad_data("bad chunk size"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::UnixStream;

    #[test]
    fn chunk_size_lines() {
        assert_eq!(chunk_size(b"1a\r\n").unwrap(), 26);
        assert_eq!(chunk_size(b"0\r\n").unwrap(), 0);
        assert_eq!(chunk_size(b"FF;name=value\r\n").unwrap(), 255);
        for bad in [
            &b"\r\n"[..],
            b"x1\r\n",
            b"1x\r\n",
            b"-1\r\n",
            b"1000000000000000\r\n",
        ] {
            assert!(chunk_size(bad).is_err(), "{bad:?}");
        }
    }

    /// Pass `sent` (plus what was already buffered) with `length`; what arrived.
    async fn pass_through(
        buffered: &[u8],
        sent: Vec<u8>,
        length: BodyLength,
    ) -> io::Result<Vec<u8>> {
        let (from, mut writer) = UnixStream::pair().unwrap();
        let (to, mut reader) = UnixStream::pair().unwrap();
        let feeder = tokio::spawn(async move {
            writer.write_all(&sent).await.unwrap();
            // `writer` drops here: end of stream.
        });
        let drain = tokio::spawn(async move {
            let mut got = Vec::new();
            reader.read_to_end(&mut got).await.unwrap();
            got
        });
        let mut buf = ReadBuf::with(buffered.to_vec());
        let mut splicer = Splicer::new().unwrap();
        let counted = AtomicU64::new(0);
        let count = |n: u64| {
            counted.fetch_add(n, Ordering::Relaxed);
        };
        let result = Pass {
            from: &from,
            buf: &mut buf,
            to: &to,
            splicer: &mut splicer,
            count: &count,
        }
        .body(length)
        .await;
        drop(to);
        feeder.await.unwrap();
        let got = drain.await.unwrap();
        assert_eq!(
            counted.load(Ordering::Relaxed),
            got.len() as u64,
            "every byte passed is counted"
        );
        result.map(|_| got)
    }

    #[tokio::test]
    async fn exact_bodies_pass_whole_and_nothing_after() {
        let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let mut sent = body[1000..].to_vec();
        sent.extend_from_slice(b"NEXT REQUEST");
        let got = pass_through(&body[..1000], sent, BodyLength::Exact(body.len() as u64))
            .await
            .unwrap();
        assert_eq!(got, body);
        // The sender stopping short is an error, not a shorter body.
        let short = pass_through(b"", vec![1; 10], BodyLength::Exact(100)).await;
        assert_eq!(short.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    }

    #[tokio::test]
    async fn chunked_bodies_pass_with_their_framing() {
        let big = vec![b'z'; 200_000];
        let mut sent = b"5;x=y\r\nhello\r\n".to_vec();
        sent.extend_from_slice(format!("{:x}\r\n", big.len()).as_bytes());
        sent.extend_from_slice(&big);
        sent.extend_from_slice(b"\r\n0\r\nX-Trailer: 1\r\n\r\n");
        let mut with_next = sent.clone();
        with_next.extend_from_slice(b"GET /next HTTP/1.1\r\n\r\n");
        let got = pass_through(b"", with_next, BodyLength::Chunked)
            .await
            .unwrap();
        assert_eq!(got, sent);
        let bad = pass_through(
            b"",
            b"3\r\nhello\r\n0\r\n\r\n".to_vec(),
            BodyLength::Chunked,
        )
        .await;
        assert!(bad.is_err());
    }

    #[tokio::test]
    async fn until_close_takes_everything() {
        let got = pass_through(b"ab", vec![b'c'; 100_000], BodyLength::UntilClose)
            .await
            .unwrap();
        assert_eq!(got.len(), 100_002);
        assert_eq!(&got[..3], b"abc");
    }
}
