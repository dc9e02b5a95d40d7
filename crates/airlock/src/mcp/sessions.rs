//! Live MCP sessions on `/mcp`: each belongs to the tenant whose token opened
//! it, and their number is capped per tenant and in all.
//!
//! rmcp keeps every session in memory until it is deleted or idles out, and
//! its session manager knows nothing of callers. Without a cap one token can
//! open sessions until the server runs out of memory; without an owner, any
//! token that learns a session id can call tools in it, read its stream and
//! end it. [`TenantSessions`] wraps rmcp's [`LocalSessionManager`]: the
//! `/mcp` middleware ([`guard`]) holds a slot for the caller before a request
//! that may open a session reaches rmcp, the wrapper binds the new session to
//! that slot's tenant, and closing (on DELETE or expiry) frees it. A request
//! naming a session of another tenant is answered as for an unknown session.

use crate::serve::tenants::Tenant;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, ServerSseMessage, SessionId, SessionManager,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How many MCP sessions may be live at once, and how long one lives without
/// a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionCaps {
    /// For one tenant (one token).
    pub per_tenant: usize,
    /// On the whole server.
    pub total: usize,
    /// A session with no request for this long ends and frees its slot: a
    /// client that went away without `DELETE` holds its slots no longer.
    pub idle: std::time::Duration,
}

impl Default for SessionCaps {
    fn default() -> Self {
        SessionCaps {
            per_tenant: 16,
            total: 256,
            idle: std::time::Duration::from_secs(300),
        }
    }
}

/// The sessions' owners and counts, shared by the middleware and the manager.
#[derive(Debug)]
pub struct SessionTable {
    caps: SessionCaps,
    state: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    /// Live session id → the tenant that opened it.
    owners: HashMap<String, String>,
    /// Live sessions and held slots, per tenant and in all.
    per_tenant: HashMap<String, usize>,
    total: usize,
}

/// Which cap refused a new session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapReached {
    Tenant(usize),
    Total(usize),
}

impl SessionTable {
    pub fn new(caps: SessionCaps) -> Arc<SessionTable> {
        Arc::new(SessionTable {
            caps,
            state: Mutex::new(Counts::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hold room for one more session of `tenant`, or say which cap is full.
    pub fn reserve(self: &Arc<Self>, tenant: &str) -> Result<Slot, CapReached> {
        let mut counts = self.lock();
        let mine = counts.per_tenant.get(tenant).copied().unwrap_or(0);
        if mine >= self.caps.per_tenant {
            return Err(CapReached::Tenant(self.caps.per_tenant));
        }
        if counts.total >= self.caps.total {
            return Err(CapReached::Total(self.caps.total));
        }
        *counts.per_tenant.entry(tenant.to_string()).or_default() += 1;
        counts.total += 1;
        Ok(Slot {
            table: self.clone(),
            tenant: tenant.to_string(),
            bound: false,
        })
    }

    /// Whether session `id` is live and `tenant`'s.
    pub fn owned_by(&self, id: &str, tenant: &str) -> bool {
        self.lock().owners.get(id).is_some_and(|t| t == tenant)
    }

    /// Live sessions (and held slots): in all, and `tenant`'s.
    pub fn live(&self, tenant: &str) -> (usize, usize) {
        let counts = self.lock();
        (
            counts.total,
            counts.per_tenant.get(tenant).copied().unwrap_or(0),
        )
    }

    fn release_count(counts: &mut Counts, tenant: &str) {
        if let Some(n) = counts.per_tenant.get_mut(tenant) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.per_tenant.remove(tenant);
            }
        }
        counts.total = counts.total.saturating_sub(1);
    }

    /// Session `id` is gone: its slot is free again (once, however often it
    /// is closed).
    fn closed(&self, id: &str) {
        let mut counts = self.lock();
        if let Some(tenant) = counts.owners.remove(id) {
            Self::release_count(&mut counts, &tenant);
        }
    }
}

/// Room held for one session of a tenant; freed on drop unless a session
/// took it.
#[derive(Debug)]
pub struct Slot {
    table: Arc<SessionTable>,
    tenant: String,
    bound: bool,
}

impl Slot {
    fn bind(mut self, id: &str) {
        self.table
            .lock()
            .owners
            .insert(id.to_string(), self.tenant.clone());
        self.bound = true;
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if !self.bound {
            SessionTable::release_count(&mut self.table.lock(), &self.tenant);
        }
    }
}

tokio::task_local! {
    /// The slot held for the request being handled, which rmcp's session
    /// creation (run inside that request's future) takes.
    static OPENING: RefCell<Option<Slot>>;
}

#[derive(Debug, thiserror::Error)]
pub enum TenantSessionError {
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    /// A session was to be created outside a request that holds a slot.
    #[error("no session slot was held for this request")]
    NoSlot,
}

/// rmcp's in-memory session manager, with each session bound to a slot of
/// the [`SessionTable`].
pub struct TenantSessions {
    inner: LocalSessionManager,
    table: Arc<SessionTable>,
}

impl TenantSessions {
    pub fn new(inner: LocalSessionManager, table: Arc<SessionTable>) -> TenantSessions {
        TenantSessions { inner, table }
    }
}

impl SessionManager for TenantSessions {
    type Error = TenantSessionError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        // No slot, no session: every session counts against a tenant.
        let slot = OPENING
            .try_with(|s| s.borrow_mut().take())
            .ok()
            .flatten()
            .ok_or(TenantSessionError::NoSlot)?;
        let (id, transport) = self.inner.create_session().await?;
        slot.bind(&id);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    /// Called on DELETE and when rmcp's session worker ends (idle or init
    /// timeout, shutdown): either way the slot is free again.
    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let closed = self.inner.close_session(id).await;
        self.table.closed(id);
        Ok(closed?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

/// rmcp's own answer for an unknown session: a session of another tenant
/// gets exactly this, so its existence is not revealed.
fn unknown_session() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

fn cap_reached(cap: CapReached) -> Response {
    let (status, message) = match cap {
        CapReached::Tenant(n) => (
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "refused: this token already has {n} live MCP sessions, the most one token may \
                 hold (airlock serve --mcp-max-sessions-per-token); end sessions you no longer \
                 use with DELETE /mcp and their Mcp-Session-Id (idle ones also expire), or \
                 reuse one"
            ),
        ),
        CapReached::Total(n) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "refused: the server already holds {n} live MCP sessions, the most it keeps \
                 (airlock serve --mcp-max-sessions); retry once sessions end (idle ones \
                 expire), or an operator may raise the cap"
            ),
        ),
    };
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": -32000, "message": message },
    });
    let mut response = (status, axum::Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

/// The `/mcp` middleware's part: a request naming a session must be from the
/// session's tenant; one naming none (which may open a session) must find
/// room under the caps, held while rmcp handles it.
pub async fn guard(
    table: &Arc<SessionTable>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    // `authenticate` runs first and puts the caller here; without one, refuse.
    let Some(tenant) = req.extensions().get::<Arc<Tenant>>().cloned() else {
        return unknown_session();
    };
    let named = req
        .headers()
        .get_all(rmcp::transport::common::http_header::HEADER_SESSION_ID)
        .iter()
        .map(|v| v.to_str().ok().map(str::to_owned))
        .collect::<Vec<_>>();
    match named.as_slice() {
        [] if req.method() == axum::http::Method::POST => {
            let slot = match table.reserve(&tenant.name) {
                Ok(slot) => slot,
                Err(cap) => return cap_reached(cap),
            };
            OPENING.scope(RefCell::new(Some(slot)), next.run(req)).await
        }
        [] => next.run(req).await,
        [Some(id)] if table.owned_by(id, &tenant.name) => next.run(req).await,
        _ => unknown_session(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slot no session took is freed; a session's slot is freed when the
    /// session closes, once; each cap refuses with its own kind.
    #[test]
    fn slots_are_freed_by_drop_or_close_and_caps_hold() {
        let table = SessionTable::new(SessionCaps {
            per_tenant: 2,
            total: 3,
            ..SessionCaps::default()
        });
        let a1 = table.reserve("a").unwrap();
        let a2 = table.reserve("a").unwrap();
        assert_eq!(table.reserve("a").unwrap_err(), CapReached::Tenant(2));
        drop(a2);
        assert_eq!(table.live("a"), (1, 1));
        a1.bind("s1");
        assert!(table.owned_by("s1", "a") && !table.owned_by("s1", "b"));
        let _a = table.reserve("a").unwrap();
        let _b = table.reserve("b").unwrap();
        assert_eq!(table.reserve("c").unwrap_err(), CapReached::Total(3));
        table.closed("s1");
        table.closed("s1");
        assert!(!table.owned_by("s1", "a"));
        assert_eq!(table.live("a"), (2, 1));
        assert!(table.reserve("c").is_ok());
    }
}
