//! The HTTP routes: thin handlers that authenticate, parse and call the
//! [`Service`]. Every error leaves as JSON `{code, message}`.

use crate::serve::error::{ApiError, ErrorCode};
use crate::serve::service::{Chunk, RunInput, Service};
use crate::serve::tenants::{Tenant, Tenants};
use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, FromRequest, Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use std::sync::Arc;

/// Shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub service: Arc<Service>,
    pub tenants: Arc<Tenants>,
    /// Open connections and their caps (for `/metrics`).
    pub connections: Arc<crate::serve::conn::limits::Limits>,
}

/// The router. `/mcp` is added by the caller (it needs the MCP service).
pub fn router(
    state: AppState,
    mcp: Option<Router<AppState>>,
    body_timeout: std::time::Duration,
) -> Router {
    let body_limit = state.service.limits.body_bytes;
    let body_read = crate::serve::conn::body::BodyRead {
        timeout: body_timeout,
        max_bytes: body_limit,
    };
    let authed = Router::new()
        .route("/v1/check", post(check))
        .route("/v1/run", post(run))
        .route("/v1/run/stream", post(run_stream))
        .route("/v1/runs/{id}", get(get_run))
        .route("/metrics", get(metrics))
        .merge(crate::serve::ops::routes());
    let authed = match mcp {
        Some(mcp) => authed.merge(mcp),
        None => authed,
    };
    let authed = authed.layer(axum::middleware::from_fn_with_state(
        state.clone(),
        authenticate,
    ));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/openapi.json", get(openapi))
        .merge(authed)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn_with_state(
            body_read,
            crate::serve::conn::body::read_body,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            close_unless_authenticated,
        ))
        .with_state(state)
}

/// With tokens, only a caller that presented a valid one may keep its
/// connection open: any other answer (`/healthz`, `/openapi.json`, a 401, a
/// 404) says `Connection: close`, and hyper closes after it. Otherwise anyone
/// who can reach the port could hold connection slots with a cheap
/// unauthenticated request now and then, and lock out every client.
async fn close_unless_authenticated(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    if !state.tenants.requires_tokens() {
        return next.run(req).await;
    }
    let authenticated = match tenant_for(&state.tenants, req.headers()) {
        Ok(tenant) => {
            // `authenticate` takes it from here rather than hashing again.
            req.extensions_mut().insert(tenant);
            true
        }
        Err(_) => false,
    };
    let mut response = next.run(req).await;
    if !authenticated {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Resolve the caller: a bearer token when the server has a tokens file, else
/// the local tenant (only reachable through the owner-only unix socket).
async fn authenticate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    if req.extensions().get::<Arc<Tenant>>().is_some() {
        return next.run(req).await;
    }
    let tenant = match tenant_for(&state.tenants, req.headers()) {
        Ok(t) => t,
        Err(e) => {
            state
                .service
                .metrics
                .inc("airlock_errors_total", "code", e.code.as_str());
            return e.into_response();
        }
    };
    req.extensions_mut().insert(tenant);
    next.run(req).await
}

pub fn tenant_for(tenants: &Tenants, headers: &HeaderMap) -> Result<Arc<Tenant>, ApiError> {
    if let Some(local) = tenants.local() {
        return Ok(local);
    }
    let unauthorized = |m: &str| ApiError::new(ErrorCode::Unauthorized, m);
    // Two credentials are ambiguous, and a proxy and the server could each
    // read a different one: refuse rather than pick.
    if headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .nth(1)
        .is_some()
    {
        return Err(ApiError::new(
            ErrorCode::BadRequest,
            "more than one Authorization header; send exactly one `Authorization: Bearer <token>`",
        ));
    }
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| unauthorized("missing `Authorization: Bearer <token>`"))?;
    let value = value
        .to_str()
        .map_err(|_| unauthorized("malformed Authorization header"))?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .ok_or_else(|| unauthorized("Authorization must use the Bearer scheme"))?;
    tenants
        .authenticate(token.trim())
        .ok_or_else(|| unauthorized("unknown token"))
}

/// `Json<T>` whose rejections are API errors with stable codes.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let value = match Json::<serde_json::Value>::from_request(req, state).await {
            Ok(Json(v)) => v,
            Err(rejection) => return Err(json_rejection(rejection)),
        };
        // An optional field is omitted, never `null`: the schema says so, and
        // one spelling per meaning keeps clients honest.
        if let Some(object) = value.as_object() {
            if let Some((key, _)) = object.iter().find(|(_, v)| v.is_null()) {
                return Err(ApiError::new(
                    ErrorCode::BadRequest,
                    format!("`{key}` is null; omit a field instead of sending null"),
                ));
            }
        }
        serde_json::from_value(value)
            .map(ApiJson)
            .map_err(|e| ApiError::new(ErrorCode::BadRequest, format!("invalid request body: {e}")))
    }
}

/// `Query<T>` whose rejections are API errors.
pub struct ApiQuery<T>(pub T);

impl<S, T> axum::extract::FromRequestParts<S> for ApiQuery<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(ApiQuery(v)),
            Err(e) => Err(ApiError::new(ErrorCode::BadRequest, e.body_text())),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::JsonDataError(e) => ApiError::new(ErrorCode::BadRequest, e.body_text()),
        JsonRejection::JsonSyntaxError(e) => ApiError::new(ErrorCode::InvalidJson, e.body_text()),
        JsonRejection::MissingJsonContentType(_) => ApiError::new(
            ErrorCode::BadRequest,
            "expected `Content-Type: application/json`",
        ),
        JsonRejection::BytesRejection(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::new(
                ErrorCode::PayloadTooLarge,
                "request body is larger than the server's limit",
            )
        }
        other => ApiError::new(ErrorCode::BadRequest, other.body_text()),
    }
}

fn tenant_of(req_tenant: Option<axum::Extension<Arc<Tenant>>>) -> Result<Arc<Tenant>, ApiError> {
    req_tenant.map(|axum::Extension(t)| t).ok_or_else(|| {
        ApiError::new(
            ErrorCode::Internal,
            "request reached a handler without a caller",
        )
    })
}

fn counted(service: &Service, e: ApiError) -> ApiError {
    service
        .metrics
        .inc("airlock_errors_total", "code", e.code.as_str());
    e
}

async fn check(
    State(state): State<AppState>,
    tenant: Option<axum::Extension<Arc<Tenant>>>,
    body: Result<ApiJson<RunInput>, ApiError>,
) -> Result<Response, ApiError> {
    let service = &state.service;
    let tenant = tenant_of(tenant)?;
    let ApiJson(input) = body.map_err(|e| counted(service, e))?;
    let result = service
        .check(tenant, input)
        .await
        .map_err(|e| counted(service, e))?;
    Ok(Json(result).into_response())
}

async fn run(
    State(state): State<AppState>,
    tenant: Option<axum::Extension<Arc<Tenant>>>,
    body: Result<ApiJson<RunInput>, ApiError>,
) -> Result<Response, ApiError> {
    let service = &state.service;
    let tenant = tenant_of(tenant)?;
    let ApiJson(input) = body.map_err(|e| counted(service, e))?;
    let result = service
        .run(tenant, input, "run")
        .await
        .map_err(|e| counted(service, e))?;
    Ok(Json(result).into_response())
}

/// How `/v1/run/stream` carries output: `?output=text` (the default) as UTF-8
/// in `data`, invalid bytes replaced; `?output=base64`, every byte kept, in
/// `data_base64` (what `airlock run --server` asks for).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum OutputEncoding {
    #[default]
    Text,
    Base64,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StreamQuery {
    #[serde(default)]
    output: OutputEncoding,
}

/// Streaming run: NDJSON, one event per line. `stdout`/`stderr` events carry
/// output as it happens; the last line is `result` (the same object `/v1/run`
/// returns) or `error`. Refusals before the run (bad input, queue full) are
/// ordinary error responses, so `429` still works here.
async fn run_stream(
    State(state): State<AppState>,
    tenant: Option<axum::Extension<Arc<Tenant>>>,
    query: Result<ApiQuery<StreamQuery>, ApiError>,
    body: Result<ApiJson<RunInput>, ApiError>,
) -> Result<Response, ApiError> {
    let service = state.service.clone();
    let tenant = tenant_of(tenant)?;
    let ApiQuery(StreamQuery { output }) = query.map_err(|e| counted(&service, e))?;
    let ApiJson(input) = body.map_err(|e| counted(&service, e))?;
    let admitted = service
        .admit_run(tenant, input)
        .await
        .map_err(|e| counted(&service, e))?;
    let cancel = admitted.cancel_handle();
    let (chunk_tx, mut chunk_rx) = tokio::sync::mpsc::unbounded_channel::<Chunk>();
    let (line_tx, line_rx) =
        tokio::sync::mpsc::unbounded_channel::<Result<bytes::Bytes, std::convert::Infallible>>();
    tokio::spawn(async move {
        let exec = tokio::spawn({
            let service = service.clone();
            async move {
                service
                    .execute(admitted, Some(chunk_tx), "run_stream")
                    .await
            }
        });
        let mut out = Utf8Carry::default();
        let mut err = Utf8Carry::default();
        // The channel closes when the sandbox has finished and dropped its sink,
        // so every chunk is sent before the result line. A client that goes
        // away (its connection closed) cancels the run: the sandbox is killed,
        // and the outcome is still recorded.
        loop {
            let chunk = tokio::select! {
                chunk = chunk_rx.recv() => chunk,
                () = line_tx.closed() => {
                    cancel.cancel();
                    break;
                }
            };
            let Some(chunk) = chunk else { break };
            let (kind, bytes, carry) = match chunk {
                Chunk::Stdout(b) => ("stdout", b, &mut out),
                Chunk::Stderr(b) => ("stderr", b, &mut err),
            };
            let event = match output {
                OutputEncoding::Text => {
                    serde_json::json!({"type": kind, "data": carry.push(&bytes)})
                }
                OutputEncoding::Base64 => {
                    use base64::Engine as _;
                    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
                    serde_json::json!({"type": kind, "data_base64": data})
                }
            };
            let _ = line_tx.send(Ok(ndjson_line(&event)));
        }
        let last = match exec.await {
            Ok(Ok(result)) => serde_json::json!({"type": "result", "result": result}),
            Ok(Err(e)) => serde_json::json!({"type": "error", "error": e.body()}),
            Err(e) => {
                serde_json::json!({"type": "error", "error": {"code": "internal", "message": e.to_string()}})
            }
        };
        let _ = line_tx.send(Ok(ndjson_line(&last)));
    });
    let stream = tokio_stream::wrappers::UnboundedReceiverStream::new(line_rx);
    let mut response = Response::new(axum::body::Body::from_stream(stream));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    Ok(response)
}

fn ndjson_line(value: &serde_json::Value) -> bytes::Bytes {
    let mut line = serde_json::to_vec(value).unwrap_or_default();
    line.push(b'\n');
    bytes::Bytes::from(line)
}

/// Decodes a byte stream as UTF-8 across chunk boundaries: an incomplete
/// sequence at the end of a chunk waits for the next one; invalid bytes become
/// U+FFFD.
#[derive(Default)]
pub struct Utf8Carry {
    pending: Vec<u8>,
}

impl Utf8Carry {
    pub fn push(&mut self, chunk: &[u8]) -> String {
        self.pending.extend_from_slice(chunk);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let (good, rest) = self.pending.split_at(e.valid_up_to());
                    out.push_str(std::str::from_utf8(good).unwrap_or_default());
                    match e.error_len() {
                        // Incomplete at the end: keep it for the next chunk.
                        None => {
                            self.pending = rest.to_vec();
                            return out;
                        }
                        Some(n) => {
                            out.push('\u{FFFD}');
                            self.pending = rest[n..].to_vec();
                        }
                    }
                }
            }
        }
    }
}

async fn get_run(
    State(state): State<AppState>,
    tenant: Option<axum::Extension<Arc<Tenant>>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let tenant = tenant_of(tenant)?;
    match state.service.runs.get(&tenant.name, &id) {
        Some(result) => Ok(Json(&*result).into_response()),
        None => Err(counted(
            &state.service,
            ApiError::new(
                ErrorCode::NotFound,
                format!("no run {id:?} for this caller (recent runs only)"),
            ),
        )),
    }
}

async fn healthz(State(state): State<AppState>) -> Response {
    let status = if state.service.is_shutting_down() {
        "shutting_down"
    } else {
        "ok"
    };
    let code = if state.service.is_shutting_down() {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    (
        code,
        Json(serde_json::json!({
            "status": status,
            "version": env!("CARGO_PKG_VERSION"),
            "running": state.service.admission.running(),
            "queued": state.service.admission.queue_depth(),
            "concurrency": state.service.admission.concurrency(),
            "max_queue": state.service.admission.max_queue(),
        })),
    )
        .into_response()
}

async fn metrics(State(state): State<AppState>) -> Response {
    let adm = &state.service.admission;
    let pool = state
        .service
        .pool
        .as_ref()
        .map(|p| p.stats())
        .unwrap_or_default();
    let text = state.service.metrics.render(&[
        (
            "airlock_pool_ready",
            "Warm sandboxes built and waiting for a command.",
            pool.ready as f64,
        ),
        (
            "airlock_pool_building",
            "Warm sandboxes started whose view is still being built (a run that takes one, when none is ready, waits for the rest).",
            pool.building as f64,
        ),
        (
            "airlock_pool_warm_runs",
            "Runs that took a warm sandbox since the start.",
            pool.warm as f64,
        ),
        (
            "airlock_pool_cold_runs",
            "Runs built on demand since the start (pool empty, disabled, or built for another spec).",
            pool.cold as f64,
        ),
        (
            "airlock_pool_built",
            "Warm sandboxes started since the start.",
            pool.built as f64,
        ),
        (
            "airlock_pool_discarded",
            "Warm sandboxes let go without running anything since the start.",
            pool.discarded as f64,
        ),
        (
            "airlock_pool_memory_bytes",
            "Memory the ready warm sandboxes hold (Pss of their processes, as last measured; 0 without --pool-memory).",
            pool.memory_bytes as f64,
        ),
        (
            "airlock_queue_depth",
            "Run requests waiting for a slot.",
            adm.queue_depth() as f64,
        ),
        (
            "airlock_running",
            "Sandboxes running now.",
            adm.running() as f64,
        ),
        (
            "airlock_concurrency_limit",
            "Run slots.",
            adm.concurrency() as f64,
        ),
        (
            "airlock_queue_limit",
            "Queue places.",
            adm.max_queue() as f64,
        ),
        (
            "airlock_connections_open",
            "HTTP connections open now (all listeners).",
            state.connections.open() as f64,
        ),
        (
            "airlock_connections_refused",
            "Connections refused over the connection caps since the start.",
            state.connections.refused_total() as f64,
        ),
    ]);
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        text,
    )
        .into_response()
}

async fn openapi() -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        crate::serve::OPENAPI_JSON,
    )
        .into_response()
}

async fn not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "no such endpoint (see /openapi.json)")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        "method not allowed on this endpoint",
    )
}

#[cfg(test)]
mod tests {
    use super::Utf8Carry;

    #[test]
    fn utf8_split_across_chunks_is_joined() {
        let mut c = Utf8Carry::default();
        let euro = "€".as_bytes();
        assert_eq!(c.push(&euro[..1]), "");
        assert_eq!(c.push(&euro[1..]), "€");
        assert_eq!(c.push(b"a\xffb"), "a\u{FFFD}b");
    }
}
