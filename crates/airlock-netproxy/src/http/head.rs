//! HTTP/1 message heads: read with httparse from a connection's buffer, judged
//! for framing (RFC 9112 §6), and written back out without hop-by-hop headers.

use crate::fdio::{recv_some, ReadyFd};
use std::io;

/// The most a request or response head may take.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The most header fields in one head.
const MAX_HEADERS: usize = 128;
/// Bytes read per `recv` into a connection's buffer.
const READ_SIZE: usize = 16 * 1024;

/// Bytes read from a connection and not yet used. Separate from the connection
/// itself, so that the bytes read past a head go wherever the message goes next
/// (a tunnel's first bytes, a body's first part).
#[derive(Default)]
pub struct ReadBuf {
    bytes: Vec<u8>,
    start: usize,
}

impl ReadBuf {
    pub fn with(bytes: Vec<u8>) -> ReadBuf {
        ReadBuf { bytes, start: 0 }
    }

    pub fn unread(&self) -> &[u8] {
        &self.bytes[self.start..]
    }

    pub fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.bytes.len() {
            self.bytes.clear();
            self.start = 0;
        }
    }

    /// Everything unread, leaving the buffer empty.
    pub fn take(&mut self) -> Vec<u8> {
        let rest = self.bytes.split_off(self.start);
        self.bytes.clear();
        self.start = 0;
        rest
    }

    /// Read once more from `conn`; the number of new bytes, 0 at end of stream.
    pub async fn fill<C: ReadyFd>(&mut self, conn: &C) -> io::Result<usize> {
        if self.start > 0 {
            self.bytes.drain(..self.start);
            self.start = 0;
        }
        let old = self.bytes.len();
        self.bytes.resize(old + READ_SIZE, 0);
        let got = recv_some(conn, &mut self.bytes[old..]).await;
        self.bytes.truncate(old + *got.as_ref().unwrap_or(&0));
        got
    }

    /// Read until one line (ending in `\n`) is unread, and take it.
    pub async fn line<C: ReadyFd>(&mut self, conn: &C, max: usize) -> io::Result<Vec<u8>> {
        loop {
            if let Some(end) = self.unread().iter().position(|&b| b == b'\n') {
                let line = self.unread()[..=end].to_vec();
                self.consume(end + 1);
                return Ok(line);
            }
            if self.unread().len() >= max {
                return Err(bad_data("line too long"));
            }
            if self.fill(conn).await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
    }
}

pub fn bad_data(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// One header field; the value as sent (not necessarily UTF-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub value: Vec<u8>,
}

/// The fields of one head, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields(pub Vec<Field>);

impl Fields {
    fn from_parsed(headers: &[httparse::Header<'_>]) -> Fields {
        Fields(
            headers
                .iter()
                .map(|h| Field {
                    name: h.name.to_string(),
                    value: h.value.to_vec(),
                })
                .collect(),
        )
    }

    /// Every value of `name` (case-insensitive), as text; `None` if one is not UTF-8.
    pub fn all(&self, name: &str) -> Option<Vec<&str>> {
        self.0
            .iter()
            .filter(|f| f.name.eq_ignore_ascii_case(name))
            .map(|f| std::str::from_utf8(&f.value).ok().map(str::trim))
            .collect()
    }

    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|f| f.name.eq_ignore_ascii_case(name))
    }

    /// The comma-separated tokens of every `name` field, lower-cased.
    pub fn tokens(&self, name: &str) -> Vec<String> {
        self.all(name)
            .unwrap_or_default()
            .iter()
            .flat_map(|v| v.split(','))
            .map(|t| t.trim().to_ascii_lowercase())
            .filter(|t| !t.is_empty())
            .collect()
    }

    /// Write the fields a proxy passes on: without the hop-by-hop ones (RFC 9110
    /// §7.6.1), those the `Connection` field names, and those in `also_drop`.
    pub fn write_end_to_end(&self, out: &mut Vec<u8>, also_drop: &[&str]) {
        let named = self.tokens("connection");
        for f in &self.0 {
            let lower = f.name.to_ascii_lowercase();
            if HOP_BY_HOP.contains(&lower.as_str())
                || named.contains(&lower)
                || also_drop.contains(&lower.as_str())
            {
                continue;
            }
            out.extend_from_slice(f.name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(&f.value);
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// Hop-by-hop fields (RFC 9110 §7.6.1), plus the proxy's own. Transfer-Encoding
/// is not among them: bodies pass with the framing they came with.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    pub method: String,
    pub target: String,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor: u8,
    pub fields: Fields,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: u16,
    pub reason: String,
    pub minor: u8,
    pub fields: Fields,
}

/// How a message's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyLength {
    Empty,
    Exact(u64),
    Chunked,
    /// Until the sender closes (responses only).
    UntilClose,
}

/// Why a head cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadError {
    /// The peer closed before sending anything.
    Closed,
    Malformed(String),
    TooLarge,
    Io(String),
}

impl HeadError {
    pub fn describe(&self) -> String {
        match self {
            HeadError::Closed => "connection closed".into(),
            HeadError::Malformed(why) => format!("malformed HTTP head: {why}"),
            HeadError::TooLarge => format!("HTTP head over {} KiB", MAX_HEAD_BYTES / 1024),
            HeadError::Io(e) => e.clone(),
        }
    }
}

/// Read and parse one head from `conn` (through `buf`); the head's bytes are
/// consumed, whatever followed them stays in `buf`.
async fn read_head<C: ReadyFd, H>(
    buf: &mut ReadBuf,
    conn: &C,
    parse: impl Fn(&[u8]) -> Result<Option<(usize, H)>, String>,
) -> Result<H, HeadError> {
    loop {
        match parse(buf.unread()) {
            Ok(Some((len, head))) => {
                buf.consume(len);
                return Ok(head);
            }
            Ok(None) if buf.unread().len() >= MAX_HEAD_BYTES => return Err(HeadError::TooLarge),
            Ok(None) => {}
            Err(why) => return Err(HeadError::Malformed(why)),
        }
        let had = buf.unread().len();
        match buf.fill(conn).await {
            Ok(0) if had == 0 => return Err(HeadError::Closed),
            Ok(0) => {
                return Err(HeadError::Malformed(
                    "connection closed inside the head".into(),
                ))
            }
            Ok(_) => {}
            Err(e) => return Err(HeadError::Io(e.to_string())),
        }
    }
}

pub async fn read_request<C: ReadyFd>(
    buf: &mut ReadBuf,
    conn: &C,
) -> Result<RequestHead, HeadError> {
    read_head(buf, conn, parse_request).await
}

pub async fn read_response<C: ReadyFd>(
    buf: &mut ReadBuf,
    conn: &C,
) -> Result<ResponseHead, HeadError> {
    read_head(buf, conn, parse_response).await
}

pub fn parse_request(bytes: &[u8]) -> Result<Option<(usize, RequestHead)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => Ok(Some((
            len,
            RequestHead {
                method: req.method.unwrap_or_default().to_string(),
                target: req.path.unwrap_or_default().to_string(),
                minor: req.version.unwrap_or(1),
                fields: Fields::from_parsed(req.headers),
            },
        ))),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

pub fn parse_response(bytes: &[u8]) -> Result<Option<(usize, ResponseHead)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    match resp.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => Ok(Some((
            len,
            ResponseHead {
                status: resp.code.unwrap_or_default(),
                reason: resp.reason.unwrap_or_default().to_string(),
                minor: resp.version.unwrap_or(1),
                fields: Fields::from_parsed(resp.headers),
            },
        ))),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// The one Content-Length of a message, if it has any; every copy must agree.
fn content_length(fields: &Fields) -> Result<Option<u64>, String> {
    let values = fields
        .all("content-length")
        .ok_or("Content-Length is not text")?;
    let mut length = None;
    for value in values.iter().flat_map(|v| v.split(',')) {
        let value = value.trim();
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("Content-Length `{value}` is not a number"));
        }
        let n: u64 = value
            .parse()
            .map_err(|_| format!("Content-Length `{value}` is too large"))?;
        if length.is_some_and(|l| l != n) {
            return Err("Content-Length values differ".into());
        }
        length = Some(n);
    }
    Ok(length)
}

/// Whether the transfer codings end in `chunked`; `None` without Transfer-Encoding.
fn ends_chunked(fields: &Fields) -> Option<bool> {
    let codings = fields.tokens("transfer-encoding");
    (fields.has("transfer-encoding")).then(|| codings.last().is_some_and(|c| c == "chunked"))
}

impl RequestHead {
    /// How the request body is delimited. A request with both Content-Length and
    /// Transfer-Encoding, or with codings other than `chunked`, is refused: the
    /// proxy and the server could read it differently (request smuggling).
    pub fn body(&self) -> Result<BodyLength, String> {
        let length = content_length(&self.fields)?;
        match ends_chunked(&self.fields) {
            Some(_) if length.is_some() => Err("both Content-Length and Transfer-Encoding".into()),
            Some(true) if self.fields.tokens("transfer-encoding") == ["chunked"] => {
                Ok(BodyLength::Chunked)
            }
            Some(_) => Err("a transfer coding other than chunked".into()),
            None => Ok(match length {
                None | Some(0) => BodyLength::Empty,
                Some(n) => BodyLength::Exact(n),
            }),
        }
    }

    /// Whether the client wants the connection kept after this exchange.
    pub fn keep_alive(&self) -> bool {
        let connection = self.fields.tokens("connection");
        if self.minor == 0 {
            connection.iter().any(|t| t == "keep-alive")
        } else {
            !connection.iter().any(|t| t == "close")
        }
    }
}

impl ResponseHead {
    /// How the response body is delimited (RFC 9112 §6.3), given the request's method.
    pub fn body(&self, method: &str) -> Result<BodyLength, String> {
        if method.eq_ignore_ascii_case("HEAD")
            || (100..200).contains(&self.status)
            || self.status == 204
            || self.status == 304
        {
            return Ok(BodyLength::Empty);
        }
        let length = content_length(&self.fields)?;
        match ends_chunked(&self.fields) {
            Some(_) if length.is_some() => Err("both Content-Length and Transfer-Encoding".into()),
            Some(true) => Ok(BodyLength::Chunked),
            Some(false) => Ok(BodyLength::UntilClose),
            None => Ok(match length {
                Some(0) => BodyLength::Empty,
                Some(n) => BodyLength::Exact(n),
                None => BodyLength::UntilClose,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(text: &str) -> RequestHead {
        parse_request(text.as_bytes()).unwrap().unwrap().1
    }

    fn response(text: &str) -> ResponseHead {
        parse_response(text.as_bytes()).unwrap().unwrap().1
    }

    #[test]
    fn request_framing() {
        let r = request("POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(r.body(), Ok(BodyLength::Exact(5)));
        let r = request("POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(r.body(), Ok(BodyLength::Chunked));
        let r = request("GET http://a.test/ HTTP/1.1\r\n\r\n");
        assert_eq!(r.body(), Ok(BodyLength::Empty));
        // What could be read two ways is refused.
        for bad in [
            "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        ] {
            assert!(request(bad).body().is_err(), "{bad}");
        }
        // Repeating the same length is allowed (RFC 9110 §8.6).
        let r = request("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(r.body(), Ok(BodyLength::Exact(5)));
    }

    #[test]
    fn response_framing() {
        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n";
        assert_eq!(response(ok).body("GET"), Ok(BodyLength::Exact(7)));
        assert_eq!(response(ok).body("HEAD"), Ok(BodyLength::Empty));
        for status in ["204 No Content", "304 Not Modified", "100 Continue"] {
            let r = response(&format!("HTTP/1.1 {status}\r\nContent-Length: 7\r\n\r\n"));
            assert_eq!(r.body("GET"), Ok(BodyLength::Empty), "{status}");
        }
        let r = response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(r.body("GET"), Ok(BodyLength::Chunked));
        let r = response("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n");
        assert_eq!(r.body("GET"), Ok(BodyLength::UntilClose));
        let r = response("HTTP/1.0 200 OK\r\n\r\n");
        assert_eq!(r.body("GET"), Ok(BodyLength::UntilClose));
        let r =
            response("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert!(r.body("GET").is_err());
    }

    #[test]
    fn keep_alive_follows_the_version_and_connection() {
        assert!(request("GET / HTTP/1.1\r\n\r\n").keep_alive());
        assert!(!request("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive());
        assert!(!request("GET / HTTP/1.0\r\n\r\n").keep_alive());
        assert!(request("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive());
    }

    #[test]
    fn hop_by_hop_fields_and_those_connection_names_are_dropped() {
        let r = request(
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: close, X-Secret\r\nX-Secret: 1\r\n\
             Proxy-Authorization: Basic x\r\nKeep-Alive: 5\r\nAccept: */*\r\n\r\n",
        );
        let mut out = Vec::new();
        r.fields.write_end_to_end(&mut out, &["host"]);
        assert_eq!(String::from_utf8(out).unwrap(), "Accept: */*\r\n");
    }
}
