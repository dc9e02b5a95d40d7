//! Just enough HTTP/1.1 over a unix socket for `airlock run --server`: one
//! POST per connection (`Connection: close`), a status line, headers, and a
//! body that is either `Content-Length` framed, chunked, or read to the end.
//!
//! No HTTP library: `airlock run` is on the path of every command an agent
//! runs, and hyper with a runtime would cost more start-up than the whole
//! request. The server is our own (`airlock serve`), so the subset it answers
//! with is the subset read here; anything else is an error, never a guess.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;

/// Headers longer than this, or more of them, are refused as malformed.
const MAX_HEAD: usize = 64 << 10;

/// A response whose head has been read; its body is read with [`Body`].
pub struct Response {
    pub status: u16,
    pub body: Body,
}

/// How the body is framed.
enum Framing {
    Length(u64),
    Chunked,
    ToEnd,
}

/// A response body, decoded as it is read.
pub struct Body {
    reader: BufReader<UnixStream>,
    framing: Framing,
    /// Bytes left in the current chunk (chunked) or in the body (length).
    left: u64,
    done: bool,
}

/// Send one POST with a JSON body and read the response head.
pub fn post_json(stream: UnixStream, path: &str, json: &[u8]) -> std::io::Result<Response> {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: airlock\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        json.len()
    )
    .into_bytes();
    request.extend_from_slice(json);
    // One write: head and body leave together. A server that refuses the
    // request before reading all of it (413 for a body over its limit)
    // answers and closes: the write then fails, and its answer says why.
    let written = (&stream).write_all(&request);
    let mut reader = BufReader::new(stream);
    let (status, framing) = match (written, read_head(&mut reader)) {
        (_, Ok(head)) => head,
        (Err(e), Err(_)) | (Ok(()), Err(e)) => return Err(e),
    };
    let left = match framing {
        Framing::Length(n) => n,
        _ => 0,
    };
    Ok(Response {
        status,
        body: Body {
            reader,
            framing,
            left,
            done: false,
        },
    })
}

fn malformed(what: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("malformed HTTP response from the server: {what}"),
    )
}

/// A line of the head, without its CRLF; counts against `budget`.
fn head_line(reader: &mut impl BufRead, budget: &mut usize) -> std::io::Result<String> {
    let mut line = Vec::new();
    let n = reader
        .by_ref()
        .take(*budget as u64 + 1)
        .read_until(b'\n', &mut line)?;
    if n == 0 {
        return Err(malformed("the connection closed before the response head"));
    }
    if n > *budget || !line.ends_with(b"\n") {
        return Err(malformed("the response head is too long"));
    }
    *budget -= n;
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| malformed("a header is not UTF-8"))
}

fn read_head(reader: &mut impl BufRead) -> std::io::Result<(u16, Framing)> {
    let mut budget = MAX_HEAD;
    let status_line = head_line(reader, &mut budget)?;
    let status = status_line
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| status_line.strip_prefix("HTTP/1.0 "))
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| malformed(format!("status line {status_line:?}")))?;
    let mut framing = Framing::ToEnd;
    loop {
        let line = head_line(reader, &mut budget)?;
        if line.is_empty() {
            return Ok((status, framing));
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| malformed(format!("header line {line:?}")))?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let n = value
                .parse()
                .map_err(|_| malformed(format!("Content-Length {value:?}")))?;
            framing = Framing::Length(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if !value.eq_ignore_ascii_case("chunked") {
                return Err(malformed(format!("Transfer-Encoding {value:?}")));
            }
            framing = Framing::Chunked;
        }
    }
}

impl Body {
    /// The next bytes of the body (empty at its end).
    pub fn next_bytes(&mut self) -> std::io::Result<Vec<u8>> {
        if self.done {
            return Ok(Vec::new());
        }
        match self.framing {
            Framing::ToEnd => self.take_available(u64::MAX),
            Framing::Length(_) => {
                if self.left == 0 {
                    self.done = true;
                    return Ok(Vec::new());
                }
                let got = self.take_available(self.left)?;
                if got.is_empty() {
                    return Err(malformed("the body ended early"));
                }
                self.left -= got.len() as u64;
                Ok(got)
            }
            Framing::Chunked => {
                if self.left == 0 {
                    let size = self.chunk_size()?;
                    if size == 0 {
                        // Trailers, if any, end with an empty line.
                        let mut budget = MAX_HEAD;
                        while !head_line(&mut self.reader, &mut budget)?.is_empty() {}
                        self.done = true;
                        return Ok(Vec::new());
                    }
                    self.left = size;
                }
                let got = self.take_available(self.left)?;
                if got.is_empty() {
                    return Err(malformed("a chunk ended early"));
                }
                self.left -= got.len() as u64;
                if self.left == 0 {
                    let mut budget = 2;
                    if !head_line(&mut self.reader, &mut budget)?.is_empty() {
                        return Err(malformed("a chunk is longer than its size"));
                    }
                }
                Ok(got)
            }
        }
    }

    /// The whole rest of the body, up to `limit` bytes.
    pub fn read_all(&mut self, limit: usize) -> std::io::Result<Vec<u8>> {
        let mut all = Vec::new();
        loop {
            let got = self.next_bytes()?;
            if got.is_empty() {
                return Ok(all);
            }
            if all.len() + got.len() > limit {
                return Err(malformed(format!("the body is over {limit} bytes")));
            }
            all.extend_from_slice(&got);
        }
    }

    fn chunk_size(&mut self) -> std::io::Result<u64> {
        let mut budget = 1024;
        let line = head_line(&mut self.reader, &mut budget)?;
        let hex = line.split(';').next().unwrap_or("").trim();
        // At most 15 hex digits (under 2^60 bytes), as the egress proxy's
        // parser takes them: a longer size is garbage, not a large chunk.
        if hex.is_empty() || hex.len() > 15 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(malformed(format!("chunk size {hex:?}")));
        }
        u64::from_str_radix(hex, 16).map_err(|_| malformed(format!("chunk size {hex:?}")))
    }

    /// What the reader has buffered (or one read's worth), at most `max` bytes.
    fn take_available(&mut self, max: u64) -> std::io::Result<Vec<u8>> {
        let buf = self.reader.fill_buf()?;
        let n = buf.len().min(usize::try_from(max).unwrap_or(usize::MAX));
        let out = buf[..n].to_vec();
        self.reader.consume(n);
        if n == 0 {
            self.done = true;
        }
        Ok(out)
    }
}

/// Splits a byte stream into lines (for NDJSON bodies).
#[derive(Default)]
pub struct Lines {
    pending: Vec<u8>,
}

impl Lines {
    /// Add bytes; return the lines they complete, without their newlines.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        self.pending.extend_from_slice(bytes);
        let mut lines = Vec::new();
        while let Some(i) = self.pending.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.pending.drain(..=i).collect();
            line.pop();
            lines.push(line);
        }
        lines
    }

    /// Bytes waiting for their newline.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server side that writes `reply` whatever it is asked, and the
    /// client's response to it.
    fn respond(reply: &'static [u8]) -> std::io::Result<Response> {
        let (client, server) = UnixStream::pair()?;
        let t = std::thread::spawn(move || {
            let mut server = server;
            let mut req = [0u8; 4096];
            let _ = server.read(&mut req);
            let _ = server.write_all(reply);
        });
        let r = post_json(client, "/v1/run", b"{}");
        t.join().unwrap();
        r
    }

    #[test]
    fn content_length_body() {
        let mut r =
            respond(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 5\r\n\r\nhelloEXTRA").unwrap();
        assert_eq!(r.status, 400);
        assert_eq!(r.body.read_all(100).unwrap(), b"hello");
    }

    #[test]
    fn chunked_body_with_extension_and_trailer() {
        let mut r = respond(
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.body.read_all(100).unwrap(), b"abcde");
    }

    #[test]
    fn truncated_and_malformed_responses_are_errors() {
        for bad in [
            &b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab"[..],
            b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nab",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n",
            b"SSH-2.0-OpenSSH\r\n",
            b"",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1000000000000000\r\nab",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n+5\r\nabcde\r\n0\r\n\r\n",
        ] {
            let (client, server) = UnixStream::pair().unwrap();
            let t = std::thread::spawn(move || {
                let mut server = server;
                let mut req = [0u8; 4096];
                let _ = server.read(&mut req);
                let _ = server.write_all(bad);
            });
            let r = post_json(client, "/", b"{}").and_then(|mut r| r.body.read_all(100));
            t.join().unwrap();
            assert!(r.is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn lines_split_across_pushes() {
        let mut l = Lines::default();
        assert!(l.push(b"{\"a\"").is_empty());
        assert_eq!(
            l.push(b":1}\n{}\nx"),
            vec![b"{\"a\":1}".to_vec(), b"{}".to_vec()]
        );
        assert_eq!(l.push(b"y\n"), vec![b"xy".to_vec()]);
    }
}
