//! The connection log of one proxy context: one entry per decision, allowed or not.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// How the client reached the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// HTTP `CONNECT host:port` (a tunnel, normally TLS).
    HttpConnect,
    /// A plain-HTTP request in absolute form, forwarded by the proxy.
    HttpForward,
    /// SOCKS5 `CONNECT`.
    Socks5,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The policy allowed it and the upstream connection was made.
    Allowed,
    /// The policy (or a safety rule) refused it; nothing was sent upstream.
    Refused,
    /// Allowed, but the name did not resolve or the upstream did not answer.
    Failed,
}

/// Why: a stable, machine-readable code (also sent in `x-airlock-proxy-error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Matched an allow pattern.
    Allowlisted,
    /// Matched no allow pattern.
    NotInAllowlist,
    /// Matched a deny pattern (deny wins over allow).
    DeniedByPolicy,
    /// An IP-literal destination that is not allowlisted exactly.
    IpLiteralNotAllowlisted,
    /// The name resolved to a loopback/private/link-local/metadata/... address.
    ResolvedToBlockedAddress,
    /// The name resolved to an address assigned to one of this host's
    /// interfaces (whatever its range): the host's own services.
    ResolvedToHostAddress,
    /// This host's interface addresses could not be read, so no destination
    /// could be told apart from them: refused (fail closed).
    HostAddressesUnreadable,
    /// The TLS ClientHello named another server than the CONNECT authority.
    SniMismatch,
    /// A plain-HTTP request whose Host header names another server than its URL.
    HostHeaderMismatch,
    /// The tunnel did not start with a TLS ClientHello with a server name in time.
    NoTlsClientHello,
    /// The request could not be understood (bad authority, unsupported method...).
    BadRequest,
    /// The name did not resolve.
    DnsFailed,
    /// The upstream refused or timed out.
    ConnectFailed,
    /// The execution's context is closed or over its connection limit.
    ContextLimit,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Allowlisted => "allowlisted",
            Reason::NotInAllowlist => "not_in_allowlist",
            Reason::DeniedByPolicy => "denied_by_policy",
            Reason::IpLiteralNotAllowlisted => "ip_literal_not_allowlisted",
            Reason::ResolvedToBlockedAddress => "resolved_to_blocked_address",
            Reason::ResolvedToHostAddress => "resolved_to_host_address",
            Reason::HostAddressesUnreadable => "host_addresses_unreadable",
            Reason::SniMismatch => "sni_mismatch",
            Reason::HostHeaderMismatch => "host_header_mismatch",
            Reason::NoTlsClientHello => "no_tls_client_hello",
            Reason::BadRequest => "bad_request",
            Reason::DnsFailed => "dns_failed",
            Reason::ConnectFailed => "connect_failed",
            Reason::ContextLimit => "context_limit",
        }
    }

    /// The words a model reads in a summary line.
    pub fn phrase(self) -> &'static str {
        match self {
            Reason::Allowlisted => "allowlisted",
            Reason::NotInAllowlist => "not in allowlist",
            Reason::DeniedByPolicy => "denied by policy",
            Reason::IpLiteralNotAllowlisted => "IP address not allowlisted",
            Reason::ResolvedToBlockedAddress => "resolves to an internal address",
            Reason::ResolvedToHostAddress => "resolves to an address of this host",
            Reason::HostAddressesUnreadable => "this host's addresses could not be read",
            Reason::SniMismatch => "TLS server name differs from CONNECT host",
            Reason::HostHeaderMismatch => "Host header differs from URL",
            Reason::NoTlsClientHello => "tunnel did not start with TLS",
            Reason::BadRequest => "malformed proxy request",
            Reason::DnsFailed => "name does not resolve",
            Reason::ConnectFailed => "upstream unreachable",
            Reason::ContextLimit => "proxy connection limit",
        }
    }
}

/// One decision of the proxy, as it ends up in the outcome and the audit record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionEntry {
    /// The execution this context belongs to.
    pub request_id: String,
    /// Order within the execution, from 0.
    pub seq: u64,
    pub protocol: Protocol,
    /// The host as the client asked for it (name or IP literal), normalised.
    pub host: String,
    pub port: u16,
    /// The address the proxy resolved and connected to (or refused).
    pub resolved: Option<String>,
    pub decision: Decision,
    pub reason: Reason,
    /// Detail for humans: the matching pattern, the blocked range, the SNI seen.
    pub detail: String,
    /// Bytes from the client to the upstream.
    pub bytes_up: u64,
    /// Bytes from the upstream to the client.
    pub bytes_down: u64,
    /// Milliseconds from the context's start to this decision.
    pub at_ms: u64,
}

impl ConnectionEntry {
    /// One line for a model, e.g. `blocked: evil.test (not in allowlist)`.
    pub fn summary(&self) -> String {
        let verb = match self.decision {
            Decision::Allowed => "allowed",
            Decision::Refused => "blocked",
            Decision::Failed => "failed",
        };
        let target = if self.port == 443 || self.port == 80 {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        };
        format!("{verb}: {target} ({})", self.reason.phrase())
    }
}

/// Shared, append-only log of one context. Bytes are counted live so that a
/// snapshot taken while tunnels are still open reports what has moved so far.
#[derive(Debug, Clone)]
pub struct ConnectionLog {
    inner: Arc<LogInner>,
}

#[derive(Debug)]
struct LogInner {
    request_id: String,
    started: Instant,
    entries: Mutex<Vec<Arc<LiveEntry>>>,
}

#[derive(Debug)]
struct LiveEntry {
    fixed: Mutex<ConnectionEntry>,
    up: AtomicU64,
    down: AtomicU64,
}

/// A handle to one entry, used to count bytes and to record a late verdict
/// (an SNI mismatch is only known after the tunnel opened).
#[derive(Debug, Clone)]
pub struct EntryHandle(Arc<LiveEntry>);

impl EntryHandle {
    pub fn add_up(&self, n: u64) {
        self.0.up.fetch_add(n, Ordering::Relaxed);
    }
    pub fn add_down(&self, n: u64) {
        self.0.down.fetch_add(n, Ordering::Relaxed);
    }
    /// The entry as it stands now, bytes included.
    pub fn snapshot(&self) -> ConnectionEntry {
        let mut e = self
            .0
            .fixed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        e.bytes_up = self.0.up.load(Ordering::Relaxed);
        e.bytes_down = self.0.down.load(Ordering::Relaxed);
        e
    }
    pub fn set_verdict(&self, decision: Decision, reason: Reason, detail: String) {
        if let Ok(mut e) = self.0.fixed.lock() {
            e.decision = decision;
            e.reason = reason;
            e.detail = detail;
        }
    }
}

/// What is known about a connection when it is decided.
#[derive(Debug, Clone)]
pub struct NewEntry {
    pub protocol: Protocol,
    pub host: String,
    pub port: u16,
    pub resolved: Option<String>,
    pub decision: Decision,
    pub reason: Reason,
    pub detail: String,
}

impl ConnectionLog {
    pub fn new(request_id: &str) -> ConnectionLog {
        ConnectionLog {
            inner: Arc::new(LogInner {
                request_id: request_id.to_string(),
                started: Instant::now(),
                entries: Mutex::new(Vec::new()),
            }),
        }
    }

    pub fn request_id(&self) -> &str {
        &self.inner.request_id
    }

    pub fn record(&self, new: NewEntry) -> EntryHandle {
        let mut entries = self.inner.entries.lock().unwrap_or_else(|e| e.into_inner());
        let entry = ConnectionEntry {
            request_id: self.inner.request_id.clone(),
            seq: entries.len() as u64,
            protocol: new.protocol,
            host: new.host,
            port: new.port,
            resolved: new.resolved,
            decision: new.decision,
            reason: new.reason,
            detail: new.detail,
            bytes_up: 0,
            bytes_down: 0,
            at_ms: self.inner.started.elapsed().as_millis() as u64,
        };
        let live = Arc::new(LiveEntry {
            fixed: Mutex::new(entry),
            up: AtomicU64::new(0),
            down: AtomicU64::new(0),
        });
        entries.push(live.clone());
        EntryHandle(live)
    }

    /// A request the proxy cannot act on at all (malformed, or a command or
    /// address type it does not serve), logged like any decision.
    pub fn refuse_bad_request(
        &self,
        protocol: Protocol,
        host: &str,
        port: u16,
        detail: &str,
    ) -> EntryHandle {
        self.record(NewEntry {
            protocol,
            host: host.to_string(),
            port,
            resolved: None,
            decision: Decision::Refused,
            reason: Reason::BadRequest,
            detail: detail.to_string(),
        })
    }

    pub fn snapshot(&self) -> Vec<ConnectionEntry> {
        let entries = self.inner.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .iter()
            .map(|live| EntryHandle(live.clone()).snapshot())
            .collect()
    }
}

/// The short text a model acts on: every refused or failed entry, `; `-joined,
/// identical refusals counted once with a repeat count.
pub fn blocked_summary(entries: &[ConnectionEntry]) -> String {
    let mut lines: Vec<(String, usize)> = Vec::new();
    for e in entries.iter().filter(|e| e.decision != Decision::Allowed) {
        let line = e.summary();
        match lines.iter_mut().find(|(l, _)| *l == line) {
            Some((_, n)) => *n += 1,
            None => lines.push((line, 1)),
        }
    }
    lines
        .into_iter()
        .map(|(l, n)| if n > 1 { format!("{l} x{n}") } else { l })
        .collect::<Vec<_>>()
        .join("; ")
}
