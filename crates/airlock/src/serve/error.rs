//! Every error the HTTP API returns: JSON `{code, message}` with a stable `code`.
//!
//! The codes are a contract (openapi.json lists them, the Python client raises
//! them); add new ones, never rename.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// Stable machine-readable error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    BadRequest,
    InvalidJson,
    Unauthorized,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    PayloadTooLarge,
    CommandTooLarge,
    CodeTooLarge,
    UnsupportedLanguage,
    InvalidCwd,
    /// A request's `timeout_s` is longer than its policy's `limits.timeout`
    /// (403: well formed, not allowed).
    TimeoutAbovePolicy,
    QueueFull,
    ShuttingDown,
    OriginNotAllowed,
    SandboxError,
    AuditError,
    Conflict,
    /// The request body did not arrive within the body read timeout.
    RequestTimeout,
    /// Over the cap on open connections (written by the accept loop itself).
    TooManyConnections,
    Internal,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::InvalidJson => "invalid_json",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::NotFound => "not_found",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::CommandTooLarge => "command_too_large",
            ErrorCode::CodeTooLarge => "code_too_large",
            ErrorCode::UnsupportedLanguage => "unsupported_language",
            ErrorCode::InvalidCwd => "invalid_cwd",
            ErrorCode::TimeoutAbovePolicy => "timeout_above_policy",
            ErrorCode::QueueFull => "queue_full",
            ErrorCode::ShuttingDown => "shutting_down",
            ErrorCode::OriginNotAllowed => "origin_not_allowed",
            ErrorCode::SandboxError => "sandbox_error",
            ErrorCode::AuditError => "audit_error",
            ErrorCode::Conflict => "conflict",
            ErrorCode::RequestTimeout => "request_timeout",
            ErrorCode::TooManyConnections => "too_many_connections",
            ErrorCode::Internal => "internal",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            ErrorCode::BadRequest
            | ErrorCode::InvalidJson
            | ErrorCode::UnsupportedLanguage
            | ErrorCode::InvalidCwd => StatusCode::BAD_REQUEST,
            ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
            // The request is well formed; its policy does not allow it.
            ErrorCode::OriginNotAllowed | ErrorCode::Forbidden | ErrorCode::TimeoutAbovePolicy => {
                StatusCode::FORBIDDEN
            }
            ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::Conflict => StatusCode::CONFLICT,
            ErrorCode::PayloadTooLarge | ErrorCode::CommandTooLarge | ErrorCode::CodeTooLarge => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            ErrorCode::QueueFull => StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::ShuttingDown | ErrorCode::TooManyConnections => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ErrorCode::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ErrorCode::SandboxError | ErrorCode::AuditError | ErrorCode::Internal => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }
}

/// An API error: a code, a message for humans (and models), and an optional
/// `Retry-After` in seconds.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub retry_after_s: Option<u64>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            retry_after_s: None,
        }
    }

    pub fn with_retry_after(mut self, seconds: u64) -> ApiError {
        self.retry_after_s = Some(seconds);
        self
    }

    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({ "code": self.code.as_str(), "message": self.message })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.code.status(), axum::Json(self.body())).into_response();
        if let Some(seconds) = self.retry_after_s {
            if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
                response
                    .headers_mut()
                    .insert(axum::http::header::RETRY_AFTER, value);
            }
        }
        if self.code == ErrorCode::Unauthorized {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"airlock\""),
            );
        }
        response
    }
}
