//! The HTTP side of the proxy: `CONNECT` tunnels and plain-HTTP forwarding, on
//! the program's own connection.
//!
//! Heads are parsed with httparse and judged here; bodies are never parsed
//! beyond their framing and move in the kernel (`splice(2)`), so a download
//! through the proxy costs little more than a direct one. One upstream
//! connection serves one request (`Connection: close` upstream); the program's
//! connection stays open across requests when both sides allow it.

mod body;
mod forward;
pub mod head;

use crate::client::ClientConn;
use crate::decide::{open_upstream, Refusal};
use crate::fdio::{recv_some, send_all, shutdown_write};
use crate::log::{Decision, Protocol, Reason};
use crate::pattern::Target;
use crate::server::ContextState;
use crate::tunnel::inspect_and_splice;
use head::{HeadError, ReadBuf, RequestHead};
use std::io;
use std::sync::Arc;
use std::time::Duration;

/// The header that carries the machine-readable refusal code.
pub const ERROR_HEADER: &str = "x-airlock-proxy-error";

/// How long a kept-open connection may wait for its next request.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether the program's connection stays open after an exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    Open,
    Close,
}

/// Serve one HTTP connection whose first byte was already read.
pub async fn serve(state: Arc<ContextState>, first: u8, client: ClientConn) -> io::Result<()> {
    let mut buf = ReadBuf::with(vec![first]);
    loop {
        let head =
            match tokio::time::timeout(IDLE_TIMEOUT, head::read_request(&mut buf, &client)).await {
                Err(_) | Ok(Err(HeadError::Closed)) | Ok(Err(HeadError::Io(_))) => break,
                Ok(Err(e)) => {
                    let response = bad_request(&state, Protocol::HttpForward, "", 0, &e.describe());
                    let _ = send_all(&client, &response).await;
                    break;
                }
                Ok(Ok(head)) => head,
            };
        if head.method.eq_ignore_ascii_case("CONNECT") {
            return connect(state, client, buf, head).await;
        }
        if forward::forward(&state, &client, &mut buf, head).await? == Keep::Close {
            break;
        }
    }
    linger(&client).await;
    Ok(())
}

/// How long, and for how many bytes, a closing connection keeps reading. The
/// byte bound is above the bodies programs send in one go: a refused 4 MiB
/// upload with 1 MiB drained got its answer destroyed by the reset under load
/// (curl: "Send failure: Broken pipe" instead of the 403).
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 16 << 20;

/// Half-close, then read and drop what the client still sends for a moment.
/// Closing a socket with unread data makes the kernel send a reset, which can
/// destroy a response (a refusal, say) before the client has read it.
async fn linger(client: &ClientConn) {
    shutdown_write(client);
    let mut sink = vec![0u8; 16 * 1024];
    let drain = async {
        let mut total = 0;
        while total < LINGER_BYTES {
            match recv_some(client, &mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

/// `CONNECT host:port`: judge, connect, answer 200, then hand the connection to
/// the tunnel (with any bytes the client sent after the head).
async fn connect(
    state: Arc<ContextState>,
    client: ClientConn,
    mut buf: ReadBuf,
    head: RequestHead,
) -> io::Result<()> {
    let refuse = |host: &str, port: u16, detail: &str| {
        bad_request(&state, Protocol::HttpConnect, host, port, detail)
    };
    let response = match split_authority(&head.target) {
        Err(detail) => Err(refuse(&head.target, 0, detail)),
        Ok((host, None)) => Err(refuse(host, 0, "CONNECT without a port")),
        Ok((host, Some(port))) => match Target::new(host, port) {
            None => Err(refuse(host, port, "not a valid host name")),
            Some(target) => {
                match open_upstream(&state.config, &state.log, Protocol::HttpConnect, &target).await
                {
                    Err(refusal) => Err(refusal_response(&refusal)),
                    Ok(upstream) => Ok((target, upstream)),
                }
            }
        },
    };
    let (target, upstream) = match response {
        Ok(pair) => pair,
        Err(refusal) => {
            let _ = send_all(&client, &refusal).await;
            linger(&client).await;
            return Ok(());
        }
    };
    send_all(&client, b"HTTP/1.1 200 Connection established\r\n\r\n").await?;
    inspect_and_splice(
        client,
        buf.take(),
        upstream.stream,
        &target.host,
        upstream.entry,
        state.config.first_bytes_timeout,
    )
    .await
}

/// `host:port`, `[v6]:port` or a bare host; the port is `None` when absent.
/// User information (`user@host`) is refused: it makes one authority read as two.
pub fn split_authority(authority: &str) -> Result<(&str, Option<u16>), &'static str> {
    if authority.contains('@') {
        return Err("user information in the authority");
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => {
            let (inside, after) = rest
                .split_once(']')
                .ok_or("unclosed `[` in the authority")?;
            let host = &authority[..inside.len() + 2];
            match after {
                "" => (host, None),
                _ => (host, Some(after.strip_prefix(':').ok_or("junk after `]`")?)),
            }
        }
        None => match authority.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, Some(p)),
            Some(_) => return Err("an IPv6 address must be in brackets"),
            None => (authority, None),
        },
    };
    if host.is_empty() {
        return Err("no host");
    }
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            Some(p.parse::<u16>().map_err(|_| "port out of range")?)
        }
        Some(_) => return Err("port is not a number"),
    };
    Ok((host, port))
}

/// A complete response from the proxy itself; the connection closes after it.
pub fn proxy_response(status: u16, reason: Reason, summary: &str) -> Vec<u8> {
    let body = format!("airlock proxy: {summary}\n");
    format!(
        "HTTP/1.1 {status} {}\r\n{ERROR_HEADER}: {}\r\ncontent-type: text/plain; charset=utf-8\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        status_text(status),
        reason.as_str(),
        body.len()
    )
    .into_bytes()
}

fn status_text(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        403 => "Forbidden",
        502 => "Bad Gateway",
        _ => "Error",
    }
}

fn refusal_response(refusal: &Refusal) -> Vec<u8> {
    let status = match refusal.decision {
        Decision::Refused => 403,
        _ => 502,
    };
    proxy_response(status, refusal.reason, &refusal.summary)
}

/// A request the proxy cannot act on at all; it is logged like any decision.
fn bad_request(
    state: &ContextState,
    protocol: Protocol,
    host: &str,
    port: u16,
    detail: &str,
) -> Vec<u8> {
    let entry = state.log.refuse_bad_request(protocol, host, port, detail);
    proxy_response(
        400,
        Reason::BadRequest,
        &format!("{} - {detail}", entry.snapshot().summary()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities() {
        assert_eq!(split_authority("a.test:443"), Ok(("a.test", Some(443))));
        assert_eq!(split_authority("a.test"), Ok(("a.test", None)));
        assert_eq!(split_authority("[::1]:80"), Ok(("[::1]", Some(80))));
        assert_eq!(
            split_authority("[2001:db8::1]"),
            Ok(("[2001:db8::1]", None))
        );
        for bad in [
            "good.test@evil.test:80",
            "::1:80",
            "[::1",
            "[::1]x",
            "a.test:",
            "a.test:99999",
            "a.test:8o",
            ":80",
        ] {
            assert!(split_authority(bad).is_err(), "{bad}");
        }
    }
}
