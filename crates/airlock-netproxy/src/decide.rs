//! From a requested target to an open upstream socket, or a logged refusal.
//!
//! Order: rules (deny wins, IP literals need an exact entry) → resolve once →
//! refuse if any resolved address is internal or assigned to this host →
//! connect to the resolved address.

use crate::addr::blocked_range;
use crate::config::ContextConfig;
use crate::log::{ConnectionLog, Decision, EntryHandle, NewEntry, Protocol, Reason};
use crate::pattern::{canonical_ip, RuleVerdict, Target, TargetHost};
use std::net::{IpAddr, SocketAddr};
use tokio::net::TcpStream;

/// A refusal as the client is told about it.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub decision: Decision,
    pub reason: Reason,
    /// The one-line summary also found in the log.
    pub summary: String,
}

/// An allowed, connected upstream.
pub struct Upstream {
    pub stream: TcpStream,
    pub addr: SocketAddr,
    pub entry: EntryHandle,
}

pub async fn open_upstream(
    config: &ContextConfig,
    log: &ConnectionLog,
    protocol: Protocol,
    target: &Target,
) -> Result<Upstream, Refusal> {
    let refuse = |decision: Decision, reason: Reason, resolved: Option<String>, detail: String| {
        let entry = log.record(NewEntry {
            protocol,
            host: target.host_string(),
            port: target.port,
            resolved,
            decision,
            reason,
            detail,
        });
        Refusal {
            decision,
            reason,
            summary: entry.snapshot().summary(),
        }
    };

    let pattern = match config.rules.judge(target) {
        RuleVerdict::Allowed(p) => p,
        RuleVerdict::Denied(p) => {
            return Err(refuse(
                Decision::Refused,
                Reason::DeniedByPolicy,
                None,
                format!("matches deny pattern `{p}`"),
            ))
        }
        RuleVerdict::IpLiteralNotListed => {
            return Err(refuse(
                Decision::Refused,
                Reason::IpLiteralNotAllowlisted,
                None,
                "IP-literal destinations need an exact allow entry".into(),
            ))
        }
        RuleVerdict::NotListed => {
            return Err(refuse(
                Decision::Refused,
                Reason::NotInAllowlist,
                None,
                "no allow pattern matches".into(),
            ))
        }
    };

    let addrs: Vec<IpAddr> = match &target.host {
        TargetHost::Ip(ip) => vec![*ip],
        TargetHost::Name(name) => match resolve(config, name, target.port).await {
            Ok(a) if !a.is_empty() => a,
            Ok(_) => {
                return Err(refuse(
                    Decision::Failed,
                    Reason::DnsFailed,
                    None,
                    "no addresses".into(),
                ))
            }
            Err(e) => return Err(refuse(Decision::Failed, Reason::DnsFailed, None, e)),
        },
    };

    // Every address must pass: a name that mixes a public and an internal address
    // is refused as a whole rather than trimmed.
    for ip in &addrs {
        let ip = canonical_ip(*ip);
        if let Some(range) = blocked_range(ip) {
            if !config
                .allow_private_for_tests
                .iter()
                .any(|t| canonical_ip(*t) == ip)
            {
                return Err(refuse(
                    Decision::Refused,
                    Reason::ResolvedToBlockedAddress,
                    Some(ip.to_string()),
                    format!(
                        "{} resolves to {ip} ({})",
                        target.host_string(),
                        range.as_str()
                    ),
                ));
            }
        }
    }

    // Any address on one of this host's interfaces, whatever its range: a public
    // address of the host reaches its services bound on 0.0.0.0. Read now, so
    // an address added since the last connection counts.
    let exempt = |ip: IpAddr| {
        config
            .allow_private_for_tests
            .iter()
            .any(|t| canonical_ip(*t) == ip)
    };
    match crate::host_addrs::read() {
        Ok(host) => {
            let host: Vec<IpAddr> = host.into_iter().map(canonical_ip).collect();
            for ip in &addrs {
                let ip = canonical_ip(*ip);
                if host.contains(&ip) && !exempt(ip) {
                    return Err(refuse(
                        Decision::Refused,
                        Reason::ResolvedToHostAddress,
                        Some(ip.to_string()),
                        format!(
                            "{} resolves to {ip}, an address of this host's interfaces",
                            target.host_string()
                        ),
                    ));
                }
            }
        }
        Err(e) => {
            return Err(refuse(
                Decision::Refused,
                Reason::HostAddressesUnreadable,
                addrs.first().map(|ip| canonical_ip(*ip).to_string()),
                format!("cannot read this host's interface addresses to rule them out: {e}"),
            ))
        }
    }

    let mut last_error = String::from("no address tried");
    for ip in &addrs {
        let addr = SocketAddr::new(canonical_ip(*ip), target.port);
        match tokio::time::timeout(config.connect_timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                let entry = log.record(NewEntry {
                    protocol,
                    host: target.host_string(),
                    port: target.port,
                    resolved: Some(addr.to_string()),
                    decision: Decision::Allowed,
                    reason: Reason::Allowlisted,
                    detail: format!("allowed by `{pattern}`"),
                });
                return Ok(Upstream {
                    stream,
                    addr,
                    entry,
                });
            }
            Ok(Err(e)) => last_error = format!("{addr}: {e}"),
            Err(_) => last_error = format!("{addr}: timed out"),
        }
    }
    let first = addrs
        .first()
        .map(|ip| SocketAddr::new(canonical_ip(*ip), target.port).to_string());
    Err(refuse(
        Decision::Failed,
        Reason::ConnectFailed,
        first,
        last_error,
    ))
}

async fn resolve(config: &ContextConfig, name: &str, port: u16) -> Result<Vec<IpAddr>, String> {
    if let Some(addrs) = config.hosts.get(name) {
        return Ok(addrs.clone());
    }
    if config.hosts_only {
        return Err(format!("{name} is not in this context's hosts map"));
    }
    let found = tokio::net::lookup_host((name, port))
        .await
        .map_err(|e| format!("{name}: {e}"))?;
    let mut addrs: Vec<IpAddr> = Vec::new();
    for sa in found {
        if !addrs.contains(&sa.ip()) {
            addrs.push(sa.ip());
        }
    }
    Ok(addrs)
}
