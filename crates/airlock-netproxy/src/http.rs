//! The HTTP side of the proxy: `CONNECT` tunnels and plain-HTTP forwarding.

use crate::client::ClientConn;
use crate::decide::{open_upstream, Refusal};
use crate::log::{Decision, Protocol, Reason};
use crate::pattern::Target;
use crate::server::ContextState;
use crate::server::Rewind;
use crate::tunnel::{inspect_and_splice, strip_port, Counted};
use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue, HOST};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::sync::Arc;

/// The header that carries the machine-readable refusal code.
pub const ERROR_HEADER: &str = "x-airlock-proxy-error";

type Body = BoxBody<Bytes, hyper::Error>;

fn text_body(text: String) -> Body {
    Full::new(Bytes::from(text))
        .map_err(|never| match never {})
        .boxed()
}

fn refusal_response(refusal: &Refusal) -> Response<Body> {
    let status = match (refusal.decision, refusal.reason) {
        (Decision::Refused, _) => StatusCode::FORBIDDEN,
        (_, Reason::DnsFailed) => StatusCode::BAD_GATEWAY,
        (_, Reason::ConnectFailed) => StatusCode::BAD_GATEWAY,
        _ => StatusCode::BAD_GATEWAY,
    };
    error_response(status, refusal.reason, &refusal.summary)
}

fn error_response(status: StatusCode, reason: Reason, summary: &str) -> Response<Body> {
    let mut resp = Response::new(text_body(format!("airlock proxy: {summary}\n")));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(ERROR_HEADER, HeaderValue::from_static(reason.as_str()));
    resp.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// A request the proxy cannot act on at all; it is logged like any decision.
fn bad_request(
    state: &ContextState,
    protocol: Protocol,
    host: &str,
    port: u16,
    detail: &str,
) -> Response<Body> {
    let entry = state.log.record(crate::log::NewEntry {
        protocol,
        host: host.to_string(),
        port,
        resolved: None,
        decision: Decision::Refused,
        reason: Reason::BadRequest,
        detail: detail.to_string(),
    });
    error_response(
        StatusCode::BAD_REQUEST,
        Reason::BadRequest,
        &format!("{} - {detail}", entry.snapshot().summary()),
    )
}

pub async fn handle(
    state: Arc<ContextState>,
    req: Request<Incoming>,
) -> Result<Response<Body>, hyper::Error> {
    if req.method() == Method::CONNECT {
        Ok(connect(state, req).await)
    } else {
        forward(state, req).await
    }
}

async fn connect(state: Arc<ContextState>, req: Request<Incoming>) -> Response<Body> {
    let Some(authority) = req.uri().authority().cloned() else {
        return bad_request(
            &state,
            Protocol::HttpConnect,
            "",
            0,
            "CONNECT without host:port",
        );
    };
    let Some(port) = authority.port_u16() else {
        return bad_request(
            &state,
            Protocol::HttpConnect,
            authority.host(),
            0,
            "CONNECT without a port",
        );
    };
    let Some(target) = Target::new(authority.host(), port) else {
        return bad_request(
            &state,
            Protocol::HttpConnect,
            authority.host(),
            port,
            "not a valid host name",
        );
    };
    let upstream =
        match open_upstream(&state.config, &state.log, Protocol::HttpConnect, &target).await {
            Ok(u) => u,
            Err(refusal) => return refusal_response(&refusal),
        };
    let first_bytes_timeout = state.config.first_bytes_timeout;
    state.spawn(async move {
        let upgraded = match hyper::upgrade::on(req).await {
            Ok(u) => u,
            Err(_) => {
                let detail = "client left before the tunnel opened".to_string();
                upstream
                    .entry
                    .set_verdict(Decision::Failed, Reason::BadRequest, detail);
                return;
            }
        };
        // The connection is the sandbox's own socket underneath: take it back from
        // hyper (with whatever it had already read) so the tunnel can splice.
        match upgraded.downcast::<TokioIo<Rewind<ClientConn>>>() {
            Ok(parts) => {
                let (first, client) = parts.io.into_inner().into_parts();
                let mut prefix: Vec<u8> = first.into_iter().collect();
                prefix.extend_from_slice(&parts.read_buf);
                let _ = inspect_and_splice(
                    client,
                    prefix,
                    upstream.stream,
                    &target.host,
                    upstream.entry,
                    first_bytes_timeout,
                )
                .await;
            }
            // Only a hyper that changed its upgrade type could land here.
            Err(_) => {
                let detail = "the tunnel could not be taken back from the HTTP layer".to_string();
                upstream
                    .entry
                    .set_verdict(Decision::Failed, Reason::BadRequest, detail);
            }
        }
    });
    Response::new(text_body(String::new()))
}

/// Hop-by-hop headers a proxy must not pass on (RFC 9110 §7.6.1), plus the
/// proxy's own.
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

async fn forward(
    state: Arc<ContextState>,
    mut req: Request<Incoming>,
) -> Result<Response<Body>, hyper::Error> {
    let uri = req.uri().clone();
    let host = uri.host().unwrap_or("").to_string();
    match uri.scheme_str() {
        Some("http") => {}
        Some(other) => {
            let detail = format!("scheme `{other}` cannot be forwarded; use CONNECT");
            return Ok(bad_request(
                &state,
                Protocol::HttpForward,
                &host,
                0,
                &detail,
            ));
        }
        None => {
            return Ok(bad_request(
                &state,
                Protocol::HttpForward,
                "",
                0,
                "request is not in absolute form",
            ))
        }
    }
    let port = uri.port_u16().unwrap_or(80);
    let Some(target) = Target::new(&host, port) else {
        return Ok(bad_request(
            &state,
            Protocol::HttpForward,
            &host,
            port,
            "not a valid host name",
        ));
    };
    // A Host header naming another site than the URL is the plain-text form of
    // domain fronting.
    if let Some(h) = req.headers().get(HOST).and_then(|v| v.to_str().ok()) {
        let named = strip_port(&h.to_ascii_lowercase())
            .trim_end_matches('.')
            .to_string();
        if named != target.host_string() {
            let entry = state.log.record(crate::log::NewEntry {
                protocol: Protocol::HttpForward,
                host: target.host_string(),
                port,
                resolved: None,
                decision: Decision::Refused,
                reason: Reason::HostHeaderMismatch,
                detail: format!("Host `{h}` differs from URL host"),
            });
            return Ok(error_response(
                StatusCode::FORBIDDEN,
                Reason::HostHeaderMismatch,
                &entry.snapshot().summary(),
            ));
        }
    }
    let upstream =
        match open_upstream(&state.config, &state.log, Protocol::HttpForward, &target).await {
            Ok(u) => u,
            Err(refusal) => return Ok(refusal_response(&refusal)),
        };
    let entry = upstream.entry.clone();
    let io = TokioIo::new(Counted::new(upstream.stream, upstream.entry));
    let (mut sender, conn) = match hyper::client::conn::http1::handshake(io).await {
        Ok(pair) => pair,
        Err(e) => {
            entry.set_verdict(
                Decision::Failed,
                Reason::ConnectFailed,
                format!("HTTP handshake: {e}"),
            );
            return Ok(error_response(
                StatusCode::BAD_GATEWAY,
                Reason::ConnectFailed,
                &entry.snapshot().summary(),
            ));
        }
    };
    state.spawn(async move {
        let _ = conn.await;
    });

    let path = uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    *req.uri_mut() = match path.parse() {
        Ok(u) => u,
        Err(_) => {
            return Ok(bad_request(
                &state,
                Protocol::HttpForward,
                &host,
                port,
                "bad path",
            ))
        }
    };
    let headers = req.headers_mut();
    for name in HOP_BY_HOP {
        headers.remove(*name);
    }
    let host_value = if port == 80 {
        target.host_string()
    } else {
        format!("{}:{port}", target.host_string())
    };
    if let Ok(v) = HeaderValue::from_str(&host_value) {
        headers.insert(HOST, v);
    }
    match sender.send_request(req).await {
        Ok(resp) => {
            let (mut parts, body) = resp.into_parts();
            for name in HOP_BY_HOP {
                parts.headers.remove(HeaderName::from_static(name));
            }
            Ok(Response::from_parts(parts, body.boxed()))
        }
        Err(e) => {
            entry.set_verdict(
                Decision::Failed,
                Reason::ConnectFailed,
                format!("upstream: {e}"),
            );
            Ok(error_response(
                StatusCode::BAD_GATEWAY,
                Reason::ConnectFailed,
                &entry.snapshot().summary(),
            ))
        }
    }
}
