//! Tunnels (CONNECT and SOCKS5): inspect the first bytes, then splice both ways
//! while counting bytes into the connection log.

use crate::client::ClientConn;
use crate::fdio::{shutdown_write, ReadyFd, Splicer};
use crate::log::{Decision, EntryHandle, Reason};
use crate::pattern::TargetHost;
use crate::tls::{parse_client_hello, HelloParse, ALERT_ACCESS_DENIED, MAX_HELLO_BYTES};
use std::io;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// What the first bytes of a tunnel say about where it is really going.
enum FirstBytes {
    Pass,
    Refuse(Reason, String),
}

/// Check the first bytes the client sends against the host it asked for.
///
/// TLS: the ClientHello's server name must equal the requested name (for an IP
/// literal, no server name or that same IP). Plain HTTP: the Host header must name
/// the requested host. Anything else passes as an opaque byte stream to the
/// allowlisted host:port.
fn judge_first_bytes(buf: &[u8], host: &TargetHost) -> Option<FirstBytes> {
    match parse_client_hello(buf) {
        HelloParse::Incomplete => None,
        HelloParse::Malformed => Some(FirstBytes::Refuse(
            Reason::NoTlsClientHello,
            "malformed TLS ClientHello".into(),
        )),
        HelloParse::Hello { sni } => Some(match (sni, host) {
            (Some(sni), TargetHost::Name(name)) if &sni == name => FirstBytes::Pass,
            (None, TargetHost::Ip(_)) => FirstBytes::Pass,
            (Some(sni), TargetHost::Ip(ip)) if sni == ip.to_string() => FirstBytes::Pass,
            (Some(sni), _) => FirstBytes::Refuse(
                Reason::SniMismatch,
                format!(
                    "TLS server name `{sni}` differs from requested host `{}`",
                    host_text(host)
                ),
            ),
            (None, _) => FirstBytes::Refuse(
                Reason::SniMismatch,
                "TLS ClientHello without a server name".into(),
            ),
        }),
        HelloParse::NotTls => judge_plain_http(buf, host),
    }
}

fn host_text(host: &TargetHost) -> String {
    match host {
        TargetHost::Name(n) => n.clone(),
        TargetHost::Ip(ip) => ip.to_string(),
    }
}

/// If the bytes look like an HTTP/1 request, wait for its headers and compare Host.
fn judge_plain_http(buf: &[u8], host: &TargetHost) -> Option<FirstBytes> {
    // An HTTP/1 request starts with a method token (upper-case letters) and a space.
    let method_len = buf.iter().take_while(|b| b.is_ascii_uppercase()).count();
    let looks_http = (1..=16).contains(&method_len) && buf.get(method_len) == Some(&b' ');
    if !looks_http {
        if method_len == buf.len() && method_len <= 16 {
            return None; // maybe the start of a method name: wait for more
        }
        return Some(FirstBytes::Pass);
    }
    let end = match buf.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(e) => e,
        None if buf.len() >= MAX_HELLO_BYTES => {
            return Some(FirstBytes::Refuse(
                Reason::HostHeaderMismatch,
                "HTTP headers too long".into(),
            ))
        }
        None => return None,
    };
    let head = String::from_utf8_lossy(&buf[..end]);
    let host_header = head.lines().skip(1).find_map(|line| {
        let (k, v) = line.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("host")
            .then(|| v.trim().to_ascii_lowercase())
    });
    let want = host_text(host);
    Some(match host_header {
        Some(h) if strip_port(&h).trim_end_matches('.') == want => FirstBytes::Pass,
        Some(h) => FirstBytes::Refuse(
            Reason::HostHeaderMismatch,
            format!("Host `{h}` differs from requested host `{want}`"),
        ),
        None => FirstBytes::Refuse(
            Reason::HostHeaderMismatch,
            "HTTP request without Host".into(),
        ),
    })
}

pub(crate) fn strip_port(hostport: &str) -> &str {
    if let Some(rest) = hostport.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match hostport.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') && p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => hostport,
    }
}

/// Read and judge the first bytes. `Some(head)`: forward `head` and go on;
/// `None`: refused (entry updated, client told) or the client left.
async fn judge_tunnel_start<C>(
    client: &mut C,
    mut head: Vec<u8>,
    host: &TargetHost,
    entry: &EntryHandle,
    first_bytes_timeout: Duration,
) -> io::Result<Option<Vec<u8>>>
where
    C: AsyncRead + AsyncWrite + Unpin,
{
    let mut chunk = vec![0u8; 16 * 1024];
    let deadline = tokio::time::Instant::now() + first_bytes_timeout;
    let verdict = loop {
        if let Some(v) = judge_first_bytes(&head, host) {
            break v;
        }
        if head.len() >= MAX_HELLO_BYTES {
            break FirstBytes::Refuse(
                Reason::NoTlsClientHello,
                "first bytes too long to judge".into(),
            );
        }
        match tokio::time::timeout_at(deadline, client.read(&mut chunk)).await {
            Ok(Ok(0)) => return Ok(None), // client gave up before sending anything useful
            Ok(Ok(n)) => head.extend_from_slice(&chunk[..n]),
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                break FirstBytes::Refuse(
                    Reason::NoTlsClientHello,
                    "client sent nothing in time".into(),
                )
            }
        }
    };
    match verdict {
        FirstBytes::Pass => Ok(Some(head)),
        FirstBytes::Refuse(reason, detail) => {
            entry.set_verdict(Decision::Refused, reason, detail);
            if head.first() == Some(&22) {
                let _ = client.write_all(&ALERT_ACCESS_DENIED).await;
            }
            let _ = client.shutdown().await;
            Ok(None)
        }
    }
}

/// Inspect, then move the rest of the tunnel in the kernel (`splice(2)`).
pub async fn inspect_and_splice(
    mut client: ClientConn,
    prefix: Vec<u8>,
    mut upstream: TcpStream,
    host: &TargetHost,
    entry: EntryHandle,
    first_bytes_timeout: Duration,
) -> io::Result<()> {
    let Some(head) =
        judge_tunnel_start(&mut client, prefix, host, &entry, first_bytes_timeout).await?
    else {
        return Ok(());
    };
    upstream.write_all(&head).await?;
    entry.add_up(head.len() as u64);
    // The first failure ends both directions (the other would wait forever).
    let up = splice_until_eof(&client, &upstream, |n| entry.add_up(n));
    let down = splice_until_eof(&upstream, &client, |n| entry.add_down(n));
    tokio::try_join!(up, down).map(|_| ())
}

/// Move bytes from `from` to `to` until `from` ends, then half-close `to`.
async fn splice_until_eof<F: ReadyFd, T: ReadyFd>(
    from: &F,
    to: &T,
    count: impl FnMut(u64),
) -> io::Result<()> {
    Splicer::new()?.pass(from, to, None, count).await?;
    shutdown_write(to);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_host_must_match() {
        let host = TargetHost::Name("a.test".into());
        let ok = b"GET / HTTP/1.1\r\nHost: A.test:8080\r\n\r\n";
        assert!(matches!(
            judge_first_bytes(ok, &host),
            Some(FirstBytes::Pass)
        ));
        let bad = b"GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n";
        assert!(matches!(
            judge_first_bytes(bad, &host),
            Some(FirstBytes::Refuse(Reason::HostHeaderMismatch, _))
        ));
        assert!(
            judge_first_bytes(b"GET / HTTP/1.1\r\nHost: a", &host).is_none(),
            "waits for the whole head"
        );
        assert!(matches!(
            judge_first_bytes(b"SSH-2.0-OpenSSH\r\n", &host),
            Some(FirstBytes::Pass)
        ));
    }
}
