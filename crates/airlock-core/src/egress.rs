//! Network allowlist mode in the engine: one egress-proxy context per execution.
//!
//! For a policy with `network.mode = "allowlist"` the engine opens a context of
//! the host-side proxy (`airlock-netproxy`) named by the request id, with the
//! policy's `network.allow` / `network.deny` plus the hosts of the grants that
//! loosened this request, and points the spec at its socket (`NetworkSpec::Proxy`).
//! After the run the context is closed and every decision it made, allowed or
//! refused, joins the outcome's violations (and so the audit record):
//! `kind = "network"` for refusals, `kind = "network_connection"` for allowed
//! connections, `data` = the full connection entry (host, port, resolved
//! address, decision, reason, bytes up/down, request id).

use airlock_netproxy::{ConnectionEntry, ContextConfig, Decision, EgressProxy, ProxyContext};
use airlock_policy::{Loosening, NetworkMode, Policy};
use airlock_sandbox::{NetworkSpec, Outcome, SandboxSpec, Violation, ViolationKind};
use std::path::Path;
use std::sync::OnceLock;

#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    #[error("network allowlist pattern refused: {0}")]
    Pattern(#[from] airlock_netproxy::PatternError),
    #[error(transparent)]
    Proxy(#[from] airlock_netproxy::ProxyError),
    #[error("egress proxy could not start: {0}")]
    Start(String),
}

/// One proxy (one small tokio runtime) per process, started on first use.
fn proxy() -> Result<&'static EgressProxy, EgressError> {
    static PROXY: OnceLock<Result<EgressProxy, String>> = OnceLock::new();
    PROXY
        .get_or_init(|| EgressProxy::new().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| EgressError::Start(e.clone()))
}

/// The proxy rules of one execution: policy allow/deny plus grant-added hosts.
pub fn context_config(
    policy: &Policy,
    loosening: &Loosening,
) -> Result<ContextConfig, EgressError> {
    let mut config = ContextConfig::new(&policy.network.allow, &policy.network.deny)?;
    config.add_granted(&loosening.network_hosts)?;
    Ok(config)
}

/// Open this execution's context if the policy asks for allowlist mode, and
/// point the spec at it. `None` for the other modes.
pub fn open(
    policy: &Policy,
    loosening: &Loosening,
    spec: &mut SandboxSpec,
    state_dir: &Path,
) -> Result<Option<ProxyContext>, EgressError> {
    if policy.network.mode != NetworkMode::Allowlist {
        return Ok(None);
    }
    let config = context_config(policy, loosening)?;
    // The socket is root-owned 0600 in a 0700 directory; the sandbox reaches it
    // through an idmapped bind mount, nobody else reaches it at all.
    let ctx = proxy()?.open(&spec.request_id, config, &state_dir.join("proxy"), None)?;
    spec.network = NetworkSpec::Proxy {
        socket: ctx.socket_path().to_path_buf(),
    };
    Ok(Some(ctx))
}

/// Close the context and add its log to the outcome.
pub fn finish(ctx: Option<ProxyContext>, outcome: Option<&mut Outcome>) {
    let Some(ctx) = ctx else { return };
    let entries = ctx.close();
    if let Some(outcome) = outcome {
        outcome.violations.extend(entries.iter().map(violation));
    }
}

/// One connection entry as an outcome violation.
pub fn violation(entry: &ConnectionEntry) -> Violation {
    Violation {
        kind: if entry.decision == Decision::Allowed {
            ViolationKind::NetworkConnection
        } else {
            ViolationKind::Network
        },
        detail: entry.summary(),
        data: serde_json::to_value(entry).unwrap_or_default(),
    }
}

/// The short line a model acts on: every network refusal (proxy and netwatch),
/// `; `-joined, repeats counted.
pub fn blocked_summary(violations: &[Violation]) -> String {
    let mut lines: Vec<(String, u64)> = Vec::new();
    for v in violations
        .iter()
        .filter(|v| v.kind == ViolationKind::Network)
    {
        let n = v.data.get("count").and_then(|c| c.as_u64()).unwrap_or(1);
        match lines.iter_mut().find(|(l, _)| *l == v.detail) {
            Some((_, c)) => *c += n,
            None => lines.push((v.detail.clone(), n)),
        }
    }
    lines
        .into_iter()
        .map(|(l, n)| if n > 1 { format!("{l} x{n}") } else { l })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_netproxy::{Protocol, Reason};

    fn entry(host: &str, decision: Decision, reason: Reason) -> ConnectionEntry {
        ConnectionEntry {
            request_id: "r1".into(),
            seq: 0,
            protocol: Protocol::HttpConnect,
            host: host.into(),
            port: 443,
            resolved: None,
            decision,
            reason,
            detail: String::new(),
            bytes_up: 0,
            bytes_down: 0,
            at_ms: 0,
        }
    }

    #[test]
    fn summary_joins_proxy_and_netwatch_refusals() {
        let netwatch = Violation {
            kind: ViolationKind::Network,
            detail: "blocked: connect to 192.0.2.1:443 (not via proxy)".into(),
            data: serde_json::json!({"count": 2}),
        };
        let violations = vec![
            netwatch,
            violation(&entry(
                "evil.test",
                Decision::Refused,
                Reason::NotInAllowlist,
            )),
            violation(&entry("pypi.test", Decision::Allowed, Reason::Allowlisted)),
        ];
        assert_eq!(violations[2].kind, ViolationKind::NetworkConnection);
        assert_eq!(violations[1].data["reason"], "not_in_allowlist");
        assert_eq!(
            blocked_summary(&violations),
            "blocked: connect to 192.0.2.1:443 (not via proxy) x2; blocked: evil.test (not in allowlist)"
        );
    }
}
