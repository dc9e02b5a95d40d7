//! Reading the server name out of a TLS ClientHello, without terminating TLS.
//!
//! The proxy peeks at the first bytes a client sends into a tunnel so that a
//! CONNECT to an allowlisted host cannot carry a TLS session for another name
//! served from the same address (domain fronting).

/// What the first bytes of a tunnel are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelloParse {
    /// Not enough bytes yet.
    Incomplete,
    /// The first byte is not a TLS handshake record.
    NotTls,
    /// A TLS handshake record that is not a well-formed ClientHello.
    Malformed,
    /// A complete ClientHello, with its host name if it sent one (lower-case,
    /// trailing dot removed).
    Hello { sni: Option<String> },
}

const RECORD_HANDSHAKE: u8 = 22;
const HANDSHAKE_CLIENT_HELLO: u8 = 1;
const EXT_SERVER_NAME: u16 = 0;
/// Larger than any ClientHello seen in practice (post-quantum key shares included).
pub const MAX_HELLO_BYTES: usize = 64 * 1024;

/// Parse as much of `buf` as has arrived. A ClientHello may span several records.
pub fn parse_client_hello(buf: &[u8]) -> HelloParse {
    let mut handshake = Vec::new();
    let mut pos = 0;
    loop {
        if pos == 0 && !buf.is_empty() && buf[0] != RECORD_HANDSHAKE {
            return HelloParse::NotTls;
        }
        if buf.len() < pos + 5 {
            return HelloParse::Incomplete;
        }
        if buf[pos] != RECORD_HANDSHAKE || buf[pos + 1] != 3 {
            return if pos == 0 {
                HelloParse::NotTls
            } else {
                HelloParse::Malformed
            };
        }
        let len = u16::from_be_bytes([buf[pos + 3], buf[pos + 4]]) as usize;
        if len == 0 || len > 16384 + 2048 {
            return HelloParse::Malformed;
        }
        if buf.len() < pos + 5 + len {
            return HelloParse::Incomplete;
        }
        handshake.extend_from_slice(&buf[pos + 5..pos + 5 + len]);
        pos += 5 + len;
        if handshake.len() >= 4 {
            if handshake[0] != HANDSHAKE_CLIENT_HELLO {
                return HelloParse::Malformed;
            }
            let body_len =
                u32::from_be_bytes([0, handshake[1], handshake[2], handshake[3]]) as usize;
            if body_len > MAX_HELLO_BYTES {
                return HelloParse::Malformed;
            }
            if handshake.len() >= 4 + body_len {
                return match hello_server_name(&handshake[4..4 + body_len]) {
                    Some(sni) => HelloParse::Hello { sni },
                    None => HelloParse::Malformed,
                };
            }
        }
    }
}

/// A byte cursor that fails instead of panicking on short input.
struct Cursor<'a> {
    buf: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() < n {
            return None;
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
    fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()? as usize;
        self.take(n)
    }
    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()? as usize;
        self.take(n)
    }
}

/// `Some(None)`: well-formed, no server name; `None`: malformed.
fn hello_server_name(body: &[u8]) -> Option<Option<String>> {
    let mut c = Cursor { buf: body };
    c.take(2)?; // legacy_version
    c.take(32)?; // random
    c.vec8()?; // session id
    c.vec16()?; // cipher suites
    c.vec8()?; // compression methods
    if c.buf.is_empty() {
        return Some(None); // no extensions at all
    }
    let mut exts = Cursor { buf: c.vec16()? };
    let mut found = None;
    while !exts.buf.is_empty() {
        let ty = exts.u16()?;
        let data = exts.vec16()?;
        if ty != EXT_SERVER_NAME {
            continue;
        }
        if found.is_some() {
            return None; // two server_name extensions: ambiguous, refuse
        }
        let mut list = Cursor { buf: data };
        let mut names = Cursor { buf: list.vec16()? };
        while !names.buf.is_empty() {
            let name_type = names.u8()?;
            let name = names.vec16()?;
            if name_type == 0 {
                if found.is_some() {
                    return None;
                }
                let text = std::str::from_utf8(name).ok()?;
                found = Some(text.trim_end_matches('.').to_ascii_lowercase());
            }
        }
    }
    Some(found)
}

/// A fatal TLS alert (access_denied) sent to a client whose tunnel is refused
/// after the proxy answered the CONNECT, so that the client fails fast.
pub const ALERT_ACCESS_DENIED: [u8; 7] = [21, 3, 3, 0, 2, 2, 49];

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ClientHello with the given server name, split into records of
    /// `record_size` bytes of payload.
    pub(crate) fn hello(sni: Option<&str>, record_size: usize) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend([7u8; 32]);
        body.push(0); // session id
        body.extend([0, 2, 0x13, 0x01]); // one cipher suite
        body.extend([1, 0]); // null compression
        let mut exts = Vec::new();
        if let Some(name) = sni {
            let mut entry = vec![0u8];
            entry.extend((name.len() as u16).to_be_bytes());
            entry.extend(name.as_bytes());
            let mut list = (entry.len() as u16).to_be_bytes().to_vec();
            list.extend(entry);
            exts.extend(0u16.to_be_bytes());
            exts.extend((list.len() as u16).to_be_bytes());
            exts.extend(list);
        }
        exts.extend([0, 43, 0, 3, 2, 3, 4]); // supported_versions
        body.extend((exts.len() as u16).to_be_bytes());
        body.extend(exts);
        let mut hs = vec![1];
        hs.extend(&(body.len() as u32).to_be_bytes()[1..]);
        hs.extend(body);
        let mut out = Vec::new();
        for chunk in hs.chunks(record_size) {
            out.extend([22, 3, 1]);
            out.extend((chunk.len() as u16).to_be_bytes());
            out.extend(chunk);
        }
        out
    }

    #[test]
    fn reads_sni_in_one_or_many_records() {
        for size in [1, 7, 50, 16384] {
            let bytes = hello(Some("PyPI.test."), size);
            assert_eq!(
                parse_client_hello(&bytes),
                HelloParse::Hello {
                    sni: Some("pypi.test".into())
                },
                "record size {size}"
            );
            for cut in 0..bytes.len() {
                assert_eq!(
                    parse_client_hello(&bytes[..cut]),
                    HelloParse::Incomplete,
                    "cut {cut} size {size}"
                );
            }
        }
        assert_eq!(
            parse_client_hello(&hello(None, 100)),
            HelloParse::Hello { sni: None }
        );
    }

    /// Every single-byte corruption of a real-shaped ClientHello parses to some
    /// answer without panicking, and never to a server name other than the one
    /// sent unless the corruption hit the name's own bytes.
    #[test]
    fn corrupted_hellos_never_panic_or_invent_names() {
        let good = hello(Some("pypi.test"), 1000);
        let name_at: Vec<usize> = good
            .windows(9)
            .enumerate()
            .filter(|(_, w)| *w == b"pypi.test")
            .map(|(i, _)| i)
            .collect();
        for pos in 0..good.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[pos] ^= flip;
                if let HelloParse::Hello { sni: Some(name) } = parse_client_hello(&bad) {
                    let in_name = name_at.iter().any(|&s| (s..s + 9).contains(&pos));
                    assert!(
                        name == "pypi.test" || in_name,
                        "pos {pos} flip {flip:#x} gave {name}"
                    );
                }
            }
        }
    }

    #[test]
    fn non_tls_and_garbage() {
        assert_eq!(
            parse_client_hello(b"GET / HTTP/1.1\r\n"),
            HelloParse::NotTls
        );
        assert_eq!(parse_client_hello(&[22, 3, 1, 0, 0]), HelloParse::Malformed);
        assert_eq!(
            parse_client_hello(&[22, 3, 1, 0, 4, 2, 0, 0, 0]),
            HelloParse::Malformed
        );
        // A server_name list whose length runs past the extension is malformed.
        let mut bad = hello(Some("a.test"), 1000);
        let sni_list_len_at = 5 + 4 + 2 + 32 + 1 + 4 + 2 + 2 + 4;
        bad[sni_list_len_at] = 0xff;
        assert_eq!(parse_client_hello(&bad), HelloParse::Malformed);
    }
}
