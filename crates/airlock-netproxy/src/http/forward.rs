//! Plain-HTTP forwarding: one absolute-form request, judged like a tunnel, sent
//! on a fresh upstream connection; the response comes back with its body moved
//! in the kernel.

use super::body::Pass;
use super::head::{self, BodyLength, HeadError, ReadBuf, RequestHead, ResponseHead};
use super::{bad_request, proxy_response, refusal_response, split_authority, Keep};
use crate::client::ClientConn;
use crate::decide::open_upstream;
use crate::fdio::{send_all, Splicer};
use crate::log::{Decision, EntryHandle, NewEntry, Protocol, Reason};
use crate::pattern::Target;
use crate::server::ContextState;
use crate::tunnel::strip_port;
use std::io;
use tokio::net::TcpStream;

/// Where an absolute-form request goes.
#[derive(Debug)]
struct Url<'a> {
    host: &'a str,
    port: u16,
    /// The origin form sent upstream (`/path?query`).
    path: String,
}

fn parse_url(target: &str) -> Result<Url<'_>, String> {
    let Some((scheme, rest)) = target.split_once("://") else {
        return Err("request is not in absolute form".into());
    };
    if !scheme.eq_ignore_ascii_case("http") {
        return Err(format!(
            "scheme `{scheme}` cannot be forwarded; use CONNECT"
        ));
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let (host, port) = split_authority(authority)?;
    let path = match path.split('#').next().unwrap_or("") {
        "" => "/".to_string(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_string(),
    };
    Ok(Url {
        host,
        port: port.unwrap_or(80),
        path,
    })
}

/// Forward one request and its response. `Keep::Close` when the program's
/// connection cannot carry another request (a refusal, a body delimited by the
/// server closing, a client that asked to close, an error part-way).
pub async fn forward(
    state: &ContextState,
    client: &ClientConn,
    client_buf: &mut ReadBuf,
    request: RequestHead,
) -> io::Result<Keep> {
    let refuse = |response: Vec<u8>| async move {
        send_all(client, &response).await?;
        Ok(Keep::Close)
    };
    let url = match parse_url(&request.target) {
        Ok(url) => url,
        Err(detail) => {
            return refuse(bad_request(state, Protocol::HttpForward, "", 0, &detail)).await
        }
    };
    let Some(target) = Target::new(url.host, url.port) else {
        let response = bad_request(
            state,
            Protocol::HttpForward,
            url.host,
            url.port,
            "not a valid host name",
        );
        return refuse(response).await;
    };
    if let Some(detail) = host_field_mismatch(&request, &target) {
        let entry = state.log.record(NewEntry {
            protocol: Protocol::HttpForward,
            host: target.host_string(),
            port: target.port,
            resolved: None,
            decision: Decision::Refused,
            reason: Reason::HostHeaderMismatch,
            detail,
        });
        let response = proxy_response(403, Reason::HostHeaderMismatch, &entry.snapshot().summary());
        return refuse(response).await;
    }
    let request_body = match request.body() {
        Ok(b) => b,
        Err(detail) => {
            let response = bad_request(
                state,
                Protocol::HttpForward,
                &target.host_string(),
                target.port,
                &detail,
            );
            return refuse(response).await;
        }
    };
    let upstream =
        match open_upstream(&state.config, &state.log, Protocol::HttpForward, &target).await {
            Ok(u) => u,
            Err(refusal) => return refuse(refusal_response(&refusal)).await,
        };
    let entry = upstream.entry;
    let stream = upstream.stream;

    let mut head_up = format!(
        "{} {} HTTP/1.{}\r\nHost: {}\r\n",
        request.method,
        url.path,
        request.minor,
        host_value(&target)
    )
    .into_bytes();
    request.fields.write_end_to_end(&mut head_up, &["host"]);
    head_up.extend_from_slice(b"Connection: close\r\n\r\n");
    send_all(&stream, &head_up).await?;
    entry.add_up(head_up.len() as u64);

    // The request body goes up while the response comes down: a client that
    // sent `Expect: 100-continue` waits for the interim response first.
    let up_count = |n: u64| entry.add_up(n);
    let up = async {
        let mut splicer = Splicer::new()?;
        Pass {
            from: client,
            buf: client_buf,
            to: &stream,
            splicer: &mut splicer,
            count: &up_count,
        }
        .body(request_body)
        .await
    };
    let down = respond(client, &stream, &request, &entry);
    tokio::pin!(up, down);
    let mut request_sent = request_body == BodyLength::Empty;
    let response = loop {
        tokio::select! {
            sent = &mut up, if !request_sent => match sent {
                Ok(()) => request_sent = true,
                // The client stopped mid-body: nothing more can come of this exchange.
                Err(_) => return Ok(Keep::Close),
            },
            done = &mut down => break done,
        }
    };
    Ok(match response {
        // A server that answered before the whole request body arrived leaves the
        // rest of it unread on the program's connection: that connection ends.
        Ok(Keep::Open) if request_sent && request.keep_alive() => Keep::Open,
        _ => Keep::Close,
    })
}

/// A Host field naming another site than the URL is the plain-text form of
/// domain fronting.
fn host_field_mismatch(request: &RequestHead, target: &Target) -> Option<String> {
    let values = request.fields.all("host")?;
    let named = values.first()?;
    let host = strip_port(&named.to_ascii_lowercase())
        .trim_end_matches('.')
        .to_string();
    (host != target.host_string() || values.len() > 1)
        .then(|| format!("Host `{named}` differs from URL host"))
}

fn host_value(target: &Target) -> String {
    let host = match &target.host {
        crate::pattern::TargetHost::Ip(std::net::IpAddr::V6(v6)) => format!("[{v6}]"),
        _ => target.host_string(),
    };
    if target.port == 80 {
        host
    } else {
        format!("{host}:{}", target.port)
    }
}

/// Read the response (after any interim 1xx ones), pass its head and body to
/// the client. `Keep::Open` when its body was self-delimited.
async fn respond(
    client: &ClientConn,
    upstream: &TcpStream,
    request: &RequestHead,
    entry: &EntryHandle,
) -> io::Result<Keep> {
    let mut buf = ReadBuf::default();
    let mut splicer = Splicer::new()?;
    let down_count = |n: u64| entry.add_down(n);
    loop {
        let head = match head::read_response(&mut buf, upstream).await {
            Ok(h) => h,
            Err(e) => return upstream_failed(client, entry, e).await,
        };
        let length = match head.body(&request.method) {
            Ok(length) if head.status != 101 => length,
            Ok(_) => {
                let e = HeadError::Malformed("101 without an upgrade asked for".into());
                return upstream_failed(client, entry, e).await;
            }
            Err(why) => return upstream_failed(client, entry, HeadError::Malformed(why)).await,
        };
        let interim = (100..200).contains(&head.status);
        let keep = if !interim && length != BodyLength::UntilClose && request.keep_alive() {
            Keep::Open
        } else {
            Keep::Close
        };
        let out = client_head(&head, keep, request.minor, interim);
        send_all(client, &out).await?;
        down_count(out.len() as u64);
        if interim {
            continue;
        }
        Pass {
            from: upstream,
            buf: &mut buf,
            to: client,
            splicer: &mut splicer,
            count: &down_count,
        }
        .body(length)
        .await?;
        return Ok(keep);
    }
}

/// The response head as the client gets it: the proxy's own version, the
/// server's status and end-to-end fields, and whether the connection stays.
fn client_head(head: &ResponseHead, keep: Keep, client_minor: u8, interim: bool) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {} {}\r\n", head.status, head.reason).into_bytes();
    head.fields.write_end_to_end(&mut out, &[]);
    if !interim {
        match (keep, client_minor) {
            (Keep::Close, _) => out.extend_from_slice(b"Connection: close\r\n"),
            (Keep::Open, 0) => out.extend_from_slice(b"Connection: keep-alive\r\n"),
            (Keep::Open, _) => {}
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// The server sent no usable response: the client gets a 502 and the log says why.
async fn upstream_failed(
    client: &ClientConn,
    entry: &EntryHandle,
    error: HeadError,
) -> io::Result<Keep> {
    entry.set_verdict(
        Decision::Failed,
        Reason::ConnectFailed,
        format!("upstream: {}", error.describe()),
    );
    let response = proxy_response(502, Reason::ConnectFailed, &entry.snapshot().summary());
    send_all(client, &response).await?;
    Ok(Keep::Close)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_form_urls() {
        let u = parse_url("http://a.test:8080/p/q?x=1#frag").unwrap();
        assert_eq!(
            (u.host, u.port, u.path.as_str()),
            ("a.test", 8080, "/p/q?x=1")
        );
        let u = parse_url("HTTP://a.test").unwrap();
        assert_eq!((u.host, u.port, u.path.as_str()), ("a.test", 80, "/"));
        let u = parse_url("http://a.test?x").unwrap();
        assert_eq!(u.path, "/?x");
        let u = parse_url("http://[::1]:81/").unwrap();
        assert_eq!((u.host, u.port), ("[::1]", 81));
        assert!(parse_url("/just/a/path")
            .unwrap_err()
            .contains("absolute form"));
        assert!(parse_url("https://a.test/")
            .unwrap_err()
            .contains("use CONNECT"));
        assert!(parse_url("http://good.test@evil.test/").is_err());
    }
}
