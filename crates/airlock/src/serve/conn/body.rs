//! The request body read timeout: the whole body must arrive within
//! `body_timeout` of the request reaching the router, and be no larger than the
//! body limit. The body is read here, once, and handed on complete, so a client
//! that sends its body a byte a minute holds no handler and no run slot:
//! `408 request_timeout` (or `413 payload_too_large`) and the connection closes.

use crate::serve::error::{ApiError, ErrorCode};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use std::time::Duration;

#[derive(Debug, Clone, Copy)]
pub struct BodyRead {
    pub timeout: Duration,
    pub max_bytes: usize,
}

pub async fn read_body(
    axum::extract::State(limits): axum::extract::State<BodyRead>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let limited = http_body_util::Limited::new(body, limits.max_bytes);
    let bytes = match tokio::time::timeout(limits.timeout, limited.collect()).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            return close(ApiError::new(
                ErrorCode::PayloadTooLarge,
                "request body is larger than the server's limit",
            ));
        }
        Ok(Err(e)) => {
            return close(ApiError::new(
                ErrorCode::BadRequest,
                format!("the request body could not be read: {e}"),
            ));
        }
        Err(_) => {
            return close(ApiError::new(
                ErrorCode::RequestTimeout,
                format!(
                    "the request body did not arrive within {} s (--body-timeout)",
                    limits.timeout.as_secs_f64()
                ),
            ));
        }
    };
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// An error after which the connection is closed: what is left of the body on
/// the wire cannot be told from the next request.
fn close(error: ApiError) -> Response {
    let mut response = error.into_response();
    response.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    response
}
