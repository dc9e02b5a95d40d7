//! Operator endpoints: approvals, grants and the audit log, through the
//! engine's ledger (the same one the CLI uses).
//!
//! Who may do what: every approval, grant and audit record belongs to one
//! tenant. Any caller lists and reads its *own* approvals, grants and records;
//! an `approver` also sees, answers and manages those of the tenants it is
//! configured for (`tenants = [...]` in the tokens file; the local socket owner
//! answers for everyone), and nobody else's: another tenant's object is "not
//! found". An agent answering its own approval would make approvals meaningless.

use crate::serve::error::{ApiError, ErrorCode};
use crate::serve::routes::{ApiJson, ApiQuery, AppState};
use crate::serve::tenants::Tenant;
use airlock_core::audit::query::Filter;
use airlock_core::audit::record::{Event, Record};
use airlock_core::grants::{Boundary, GrantRequest};
use airlock_core::LedgerError;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use std::sync::Arc;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/approvals", get(list_approvals))
        .route("/v1/approvals/{id}", get(show_approval))
        .route("/v1/approvals/{id}/approve", post(approve))
        .route("/v1/approvals/{id}/deny", post(deny))
        .route("/v1/grants", get(list_grants).post(create_grant))
        .route("/v1/grants/{id}", axum::routing::delete(revoke_grant))
        .route("/v1/audit", get(audit))
}

fn forbidden(what: &str) -> ApiError {
    ApiError::new(
        ErrorCode::Forbidden,
        format!("only an approver token may {what}"),
    )
}

fn ledger_error(e: LedgerError) -> ApiError {
    let message = e.to_string();
    match e {
        LedgerError::ApprovalNotFound(_) | LedgerError::GrantNotFound(_) => {
            ApiError::new(ErrorCode::NotFound, message)
        }
        LedgerError::NotPending { .. } => ApiError::new(ErrorCode::Conflict, message),
        LedgerError::SelfApproval { .. } => ApiError::new(ErrorCode::Forbidden, message),
        LedgerError::Grant(airlock_core::grants::GrantError::NotActive { .. }) => {
            ApiError::new(ErrorCode::Conflict, message)
        }
        LedgerError::Grant(_) => ApiError::new(ErrorCode::BadRequest, message),
        // An id that is not even well-formed cannot name anything.
        LedgerError::Store(airlock_core::store::StoreError::BadId { .. }) => {
            ApiError::new(ErrorCode::NotFound, message)
        }
        _ => ApiError::new(ErrorCode::AuditError, message),
    }
}

/// Run a ledger call on the blocking pool (it locks files and fsyncs).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::new(ErrorCode::Internal, format!("task failed: {e}")))?
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApprovalFilter {
    status: Option<String>,
}

async fn list_approvals(
    State(state): State<AppState>,
    Extension(tenant): Extension<Arc<Tenant>>,
    ApiQuery(filter): ApiQuery<ApprovalFilter>,
) -> Result<Response, ApiError> {
    const STATUSES: [&str; 5] = ["pending", "approved", "denied", "expired", "used"];
    if let Some(s) = filter.status.as_deref() {
        if !STATUSES.contains(&s) {
            return Err(ApiError::new(
                ErrorCode::BadRequest,
                format!("status {s:?} is not one of {}", STATUSES.join(", ")),
            ));
        }
    }
    let engine = state.service.engine.clone();
    let approvals = blocking(move || engine.ledger().approvals().map_err(ledger_error)).await?;
    let approvals: Vec<_> = approvals
        .into_iter()
        .filter(|a| tenant.sees(Some(&a.tenant)))
        .filter(|a| {
            filter
                .status
                .as_deref()
                .is_none_or(|s| a.status.as_str() == s)
        })
        .collect();
    Ok(Json(serde_json::json!({ "approvals": approvals })).into_response())
}

async fn show_approval(
    State(state): State<AppState>,
    Extension(tenant): Extension<Arc<Tenant>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let engine = state.service.engine.clone();
    let lookup = id.clone();
    let approval =
        blocking(move || engine.ledger().approval(&lookup).map_err(ledger_error)).await?;
    if !tenant.sees(Some(&approval.tenant)) {
        return Err(ApiError::new(
            ErrorCode::NotFound,
            format!("no approval {id}"),
        ));
    }
    Ok(Json(approval).into_response())
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Answer {
    note: Option<String>,
}

async fn answer(
    state: AppState,
    tenant: Arc<Tenant>,
    id: String,
    note: Option<String>,
    approve: bool,
) -> Result<Response, ApiError> {
    if !tenant.is_approver() {
        return Err(forbidden(if approve {
            "approve requests"
        } else {
            "deny requests"
        }));
    }
    if note.as_ref().is_some_and(|n| n.len() > 4096) {
        return Err(ApiError::new(
            ErrorCode::BadRequest,
            "`note` is longer than 4096 bytes",
        ));
    }
    let engine = state.service.engine.clone();
    let caller = tenant.caller.clone();
    let approval = blocking(move || {
        let ledger = engine.ledger();
        // Another tenant's approval, outside this approver's scope, does not
        // exist for it; its own is refused by the ledger (self-approval).
        let current = ledger.approval(&id).map_err(ledger_error)?;
        if !tenant.answers_for(&current.tenant) && current.tenant != tenant.id() {
            return Err(ApiError::new(
                ErrorCode::NotFound,
                format!("no approval {id}"),
            ));
        }
        let r = if approve {
            ledger.approve(&id, &caller, note)
        } else {
            ledger.deny(&id, &caller, note)
        };
        r.map_err(ledger_error)
    })
    .await?;
    Ok(Json(approval).into_response())
}

/// The body is optional: empty, or `{"note": "..."}`.
fn parse_answer(body: &[u8]) -> Result<Option<String>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::new(
            ErrorCode::InvalidJson,
            format!("body must be empty or {{\"note\": \"...\"}}: {e}"),
        )
    })?;
    if value.get("note").is_some_and(|n| n.is_null()) {
        return Err(ApiError::new(
            ErrorCode::BadRequest,
            "`note` is null; omit it instead",
        ));
    }
    let answer: Answer = serde_json::from_value(value).map_err(|e| {
        ApiError::new(
            ErrorCode::InvalidJson,
            format!("body must be empty or {{\"note\": \"...\"}}: {e}"),
        )
    })?;
    Ok(answer.note)
}

async fn approve(
    State(state): State<AppState>,
    Extension(tenant): Extension<Arc<Tenant>>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    answer(state, tenant, id, parse_answer(&body)?, true).await
}

async fn deny(
    State(state): State<AppState>,
    Extension(tenant): Extension<Arc<Tenant>>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    answer(state, tenant, id, parse_answer(&body)?, false).await
}

async fn list_grants(
    State(state): State<AppState>,
    Extension(tenant): Extension<Arc<Tenant>>,
) -> Result<Response, ApiError> {
    let engine = state.service.engine.clone();
    let grants = blocking(move || engine.ledger().grants().map_err(ledger_error)).await?;
    let now = airlock_core::clock::now_ms();
    let grants: Vec<_> = grants
        .into_iter()
        .filter(|g| tenant.sees(Some(&g.tenant)))
        .map(|g| {
            let state = g.state(now).as_str();
            let mut v = serde_json::to_value(&g).unwrap_or_default();
            v["state"] = serde_json::Value::String(state.into());
            v
        })
        .collect();
    Ok(Json(serde_json::json!({ "grants": grants })).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewGrant {
    boundary: BoundaryInput,
    /// The token name whose requests it loosens (default: the caller's own
    /// tenant). It is scoped to that tenant's policy too.
    tenant: Option<String>,
    /// Argv prefix the grant applies to (`python3 etl.py`).
    #[serde(rename = "for")]
    for_prefix: String,
    /// Whole seconds; JSON numbers like `600.0` are whole too.
    ttl_s: f64,
    uses: Option<f64>,
}

/// `{"type": "write", "paths": [...]}` or `{"type": "network", "hosts": [...]}`,
/// strictly (no other fields).
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum BoundaryInput {
    Write { paths: Vec<std::path::PathBuf> },
    Network { hosts: Vec<String> },
}

impl From<BoundaryInput> for Boundary {
    fn from(b: BoundaryInput) -> Boundary {
        match b {
            BoundaryInput::Write { paths } => Boundary::Write { paths },
            BoundaryInput::Network { hosts } => Boundary::Network { hosts },
        }
    }
}

/// A JSON number that must be a whole number in `lo..=hi`.
fn whole(name: &str, v: f64, lo: u64, hi: u64) -> Result<u64, ApiError> {
    if v.fract() == 0.0 && v >= lo as f64 && v <= hi as f64 {
        Ok(v as u64)
    } else {
        Err(ApiError::new(
            ErrorCode::BadRequest,
            format!("`{name}` must be a whole number from {lo} to {hi}"),
        ))
    }
}

async fn create_grant(
    State(state): State<AppState>,
    Extension(tenant): Extension<Arc<Tenant>>,
    body: Result<ApiJson<NewGrant>, ApiError>,
) -> Result<Response, ApiError> {
    if !tenant.is_approver() {
        return Err(forbidden("create grants"));
    }
    let ApiJson(g) = body?;
    // For whom, under which policy: the grant is that tenant's alone.
    let target = match g.tenant.as_deref() {
        None => tenant.clone(),
        Some(name) => {
            let id = airlock_core::TenantId::token(name);
            let found = state.tenants.find(&id).filter(|_| tenant.answers_for(&id));
            found.ok_or_else(|| {
                ApiError::new(
                    ErrorCode::Forbidden,
                    format!("this approver does not answer for a tenant named {name:?}; grants are made only for the tenants listed in its `tenants`"),
                )
            })?
        }
    };
    let bad = |m: &str| ApiError::new(ErrorCode::BadRequest, m);
    // Blank as the schema's `\S` sees it (Python's isspace adds U+001C..U+001F).
    if g.for_prefix
        .chars()
        .all(|c| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
    {
        return Err(bad(
            "`for` needs a command prefix (for example \"python3 etl.py\")",
        ));
    }
    if let BoundaryInput::Write { paths } = &g.boundary {
        if paths
            .iter()
            .any(|p| p.as_os_str().as_encoded_bytes().contains(&0))
        {
            return Err(bad("a grant path contains a NUL byte"));
        }
    }
    let ttl_s = whole("ttl_s", g.ttl_s, 1, airlock_core::grants::MAX_TTL.as_secs())?;
    let uses = g
        .uses
        .map(|u| whole("uses", u, 1, u32::MAX as u64))
        .transpose()?;
    let request = GrantRequest {
        boundary: g.boundary.into(),
        tenant: target.id(),
        policy_sha256: target.policy.sha256.clone(),
        for_prefix: g.for_prefix,
        ttl: std::time::Duration::from_secs(ttl_s),
        max_uses: uses.map(|u| u as u32),
    };
    let engine = state.service.engine.clone();
    let caller = tenant.caller.clone();
    let grant = blocking(move || {
        engine
            .ledger()
            .create_grant(&caller, request)
            .map_err(ledger_error)
    })
    .await?;
    Ok((axum::http::StatusCode::CREATED, Json(grant)).into_response())
}

async fn revoke_grant(
    State(state): State<AppState>,
    Extension(tenant): Extension<Arc<Tenant>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    if !tenant.is_approver() {
        return Err(forbidden("revoke grants"));
    }
    let engine = state.service.engine.clone();
    let caller = tenant.caller.clone();
    let grant = blocking(move || {
        let ledger = engine.ledger();
        let visible = ledger
            .grants()
            .map_err(ledger_error)?
            .into_iter()
            .any(|g| g.id == id && (tenant.answers_for(&g.tenant) || g.tenant == tenant.id()));
        if !visible {
            return Err(ApiError::new(ErrorCode::NotFound, format!("no grant {id}")));
        }
        ledger.revoke_grant(&id, &caller).map_err(ledger_error)
    })
    .await?;
    Ok(Json(grant).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuditQuery {
    /// `allow`, `deny` or `approval_required` (decision records only).
    decision: Option<String>,
    /// A duration back from now (`90s`, `15m`, `1h`, `2d`) or an RFC 3339 time.
    since: Option<String>,
    command_prefix: Option<String>,
    kind: Option<String>,
    request_id: Option<String>,
    /// Only this caller's records (approvers only; others always see their own).
    caller: Option<String>,
    /// The last N matches (default 100, at most 1000).
    limit: Option<usize>,
}

fn record_caller(record: &Record) -> Option<&airlock_core::Caller> {
    match &record.event {
        Event::Decision(e) => Some(&e.who),
        Event::Execution(e) => Some(&e.who),
        Event::Approval(e) => Some(&e.who),
        Event::Grant(e) => Some(&e.who),
        Event::FileWrite(e) => Some(&e.who),
        Event::FileRead(e) => Some(&e.who),
        Event::Apply(e) => Some(&e.who),
        _ => None,
    }
}

async fn audit(
    State(state): State<AppState>,
    Extension(tenant): Extension<Arc<Tenant>>,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> Result<Response, ApiError> {
    let bad = |m: String| ApiError::new(ErrorCode::BadRequest, m);
    let decision = match q.decision.as_deref() {
        None => None,
        Some("allow") => Some(airlock_policy::Verdict::Allow),
        Some("deny") => Some(airlock_policy::Verdict::Deny),
        Some("approval_required") => Some(airlock_policy::Verdict::ApprovalRequired),
        Some(other) => {
            return Err(bad(format!(
                "decision {other:?} is not allow, deny or approval_required"
            )))
        }
    };
    let since_ms = match q.since.as_deref() {
        None => None,
        Some(text) => Some(
            airlock_core::clock::parse_rfc3339(text)
                .or_else(|| {
                    airlock_core::clock::parse_duration(text)
                        .map(|d| airlock_core::clock::now_ms().saturating_sub(d.as_millis() as u64))
                })
                .ok_or_else(|| {
                    bad(format!(
                        "since {text:?} is neither a duration (1h) nor an RFC 3339 time"
                    ))
                })?,
        ),
    };
    const KINDS: [&str; 8] = [
        "decision",
        "execution",
        "approval",
        "grant",
        "file_write",
        "repair",
        "reanchor",
        "checkpoint",
    ];
    if let Some(kind) = q.kind.as_deref() {
        if !KINDS.contains(&kind) {
            return Err(bad(format!(
                "kind {kind:?} is not one of {}",
                KINDS.join(", ")
            )));
        }
    }
    let limit = q.limit.unwrap_or(100);
    if limit == 0 || limit > 1000 {
        return Err(bad("limit must be between 1 and 1000".into()));
    }
    if q.caller.is_some() && !tenant.is_approver() {
        return Err(forbidden("read other callers' records"));
    }
    let filter = Filter {
        decision,
        since_ms,
        command_prefix: q.command_prefix,
        kind: q.kind,
        request_id: q.request_id,
        limit: None,
    };
    let engine = state.service.engine.clone();
    let wanted_caller = q.caller;
    let records = blocking(move || {
        let dir = engine.ledger().audit().dir().to_path_buf();
        let all = filter
            .apply(&dir)
            .map_err(|e| ApiError::new(ErrorCode::AuditError, e.to_string()))?;
        let mine: Vec<Record> = all
            .into_iter()
            .filter(|r| {
                // Only records of tenants this caller may see; then, for an
                // approver, optionally one caller's.
                tenant.sees(r.tenant())
                    && wanted_caller
                        .as_deref()
                        .is_none_or(|name| record_caller(r).is_some_and(|c| c.name == name))
            })
            .collect();
        let skip = mine.len().saturating_sub(limit);
        Ok(mine.into_iter().skip(skip).collect::<Vec<_>>())
    })
    .await?;
    Ok(Json(serde_json::json!({ "records": records })).into_response())
}
