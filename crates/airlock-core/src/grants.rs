//! Grants: a one-boundary loosening for one tenant's requests that match a
//! command prefix under one policy, bounded in time (always) and optionally in
//! uses, revocable. Never permanent, never global.

use crate::{Caller, TenantId};
use airlock_policy::{Decision, Loosening};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// No grant lives longer than this.
pub const MAX_TTL: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Network grants need the sandbox to enforce a host allowlist. The native
/// backend does, through the per-execution egress proxy (`crate::egress`,
/// network allowlist issue); if that is ever removed, set this to false and
/// network grants are refused again rather than promised.
pub const NETWORK_ALLOWLIST_ENFORCED: bool = true;

/// A network grant means something only under a policy in allowlist mode: with
/// `none` there is no proxy to add hosts to, with `open` nothing is filtered.
pub fn check_network_grant_policy(policy: &airlock_policy::Policy) -> Result<(), GrantError> {
    if !NETWORK_ALLOWLIST_ENFORCED {
        return Err(GrantError::NetworkUnenforceable);
    }
    match policy.network.mode {
        airlock_policy::NetworkMode::Allowlist => Ok(()),
        other => Err(GrantError::NetworkModeNotAllowlist {
            mode: format!("{other:?}").to_lowercase(),
            policy: policy.source.clone(),
        }),
    }
}

/// The one boundary a grant opens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Boundary {
    /// Extra hosts for a policy in `network.mode = "allowlist"`.
    Network { hosts: Vec<String> },
    /// Extra absolute host paths, writable.
    Write { paths: Vec<PathBuf> },
}

impl Boundary {
    pub fn describe(&self) -> String {
        match self {
            Boundary::Network { hosts } => format!("network: {}", hosts.join(",")),
            Boundary::Write { paths } => format!(
                "write: {}",
                paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Revocation {
    pub by: Caller,
    pub at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grant {
    pub id: String,
    pub boundary: Boundary,
    /// The only tenant whose requests it loosens (a grant from before tenancy
    /// has the unknown tenant and loosens nothing).
    #[serde(default)]
    pub tenant: TenantId,
    /// The only policy (SHA-256 of its text) under which it loosens: another
    /// policy, or this one edited, is not what the person granted for.
    #[serde(default)]
    pub policy_sha256: String,
    /// Argv prefix, as typed (`pip install`): every simple command of a request
    /// must start with these words for the grant to apply.
    pub for_prefix: String,
    pub created_by: Caller,
    pub created_at: String,
    pub expires_at: String,
    pub expires_at_ms: u64,
    /// `None`: any number of uses until expiry.
    pub max_uses: Option<u32>,
    pub uses: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked: Option<Revocation>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantState {
    Active,
    Expired,
    UsedUp,
    Revoked,
}

impl GrantState {
    pub fn as_str(self) -> &'static str {
        match self {
            GrantState::Active => "active",
            GrantState::Expired => "expired",
            GrantState::UsedUp => "used_up",
            GrantState::Revoked => "revoked",
        }
    }
}

impl Grant {
    pub fn state(&self, now_ms: u64) -> GrantState {
        if self.revoked.is_some() {
            GrantState::Revoked
        } else if now_ms >= self.expires_at_ms {
            GrantState::Expired
        } else if self.max_uses.is_some_and(|max| self.uses >= max) {
            GrantState::UsedUp
        } else {
            GrantState::Active
        }
    }

    /// Whether the grant covers this tenant's decision under this policy: same
    /// tenant, same policy text, and every judged simple command starts with the
    /// grant's words. A request the gate could not split into known commands is
    /// never covered.
    pub fn covers(&self, tenant: &TenantId, policy_sha256: &str, decision: &Decision) -> bool {
        let prefix: Vec<&str> = self.for_prefix.split_whitespace().collect();
        self.tenant == *tenant
            && !tenant.is_unknown()
            && !self.policy_sha256.is_empty()
            && self.policy_sha256 == policy_sha256
            && !prefix.is_empty()
            && !decision.segments.is_empty()
            && decision.segments.iter().all(|seg| {
                seg.argv.len() >= prefix.len() && seg.argv.iter().zip(&prefix).all(|(a, p)| a == p)
            })
    }

    /// Add this grant's boundary to a loosening.
    pub fn loosen(&self, loosening: &mut Loosening) {
        loosening.grant_ids.push(self.id.clone());
        match &self.boundary {
            Boundary::Network { hosts } => loosening.network_hosts.extend(hosts.iter().cloned()),
            Boundary::Write { paths } => loosening.write_paths.extend(paths.iter().cloned()),
        }
    }
}

/// What a person asks for with `airlock grant`.
#[derive(Debug, Clone, PartialEq)]
pub struct GrantRequest {
    pub boundary: Boundary,
    /// Whose requests it loosens.
    pub tenant: TenantId,
    /// Under which policy (SHA-256 of the policy text the tenant runs under).
    pub policy_sha256: String,
    pub for_prefix: String,
    pub ttl: std::time::Duration,
    pub max_uses: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    #[error("a network grant cannot be enforced yet: the sandbox has no network allowlist mode (network.mode = \"allowlist\" is not implemented), so airlock refuses rather than pretend the hosts are reachable and nothing else is")]
    NetworkUnenforceable,
    #[error("a network grant adds hosts to the network allowlist, but the policy {policy} has network.mode = \"{mode}\"; it would have no effect, so it is refused (use a policy with network.mode = \"allowlist\")")]
    NetworkModeNotAllowlist { mode: String, policy: String },
    #[error(
        "the grant's ttl must be between 1s and {}",
        crate::clock::format_duration(MAX_TTL)
    )]
    BadTtl,
    #[error("--uses must be at least 1")]
    BadUses,
    #[error("--for needs a command prefix (for example 'pip install')")]
    EmptyPrefix,
    #[error("the grant names no {0}")]
    Empty(&'static str),
    #[error("`{0}` is too broad for a grant")]
    TooBroad(String),
    #[error("`{0}` is not a host name (letters, digits, dots, dashes, an optional leading `*.` and `:port`)")]
    BadHost(String),
    #[error("`{0}` must be an absolute path")]
    RelativePath(String),
    #[error("grant {id} is {state}")]
    NotActive { id: String, state: &'static str },
    #[error("a grant needs the tenant it is for and the SHA-256 of that tenant's policy")]
    NoScope,
}

impl GrantRequest {
    pub fn validate(&self) -> Result<(), GrantError> {
        if self.ttl.as_secs() < 1 || self.ttl > MAX_TTL {
            return Err(GrantError::BadTtl);
        }
        if self.max_uses == Some(0) {
            return Err(GrantError::BadUses);
        }
        if self.for_prefix.split_whitespace().next().is_none() {
            return Err(GrantError::EmptyPrefix);
        }
        let hex_sha = self.policy_sha256.len() == 64
            && self.policy_sha256.bytes().all(|b| b.is_ascii_hexdigit());
        if self.tenant.is_unknown() || !hex_sha {
            return Err(GrantError::NoScope);
        }
        match &self.boundary {
            Boundary::Network { hosts } => {
                if !NETWORK_ALLOWLIST_ENFORCED {
                    return Err(GrantError::NetworkUnenforceable);
                }
                if hosts.is_empty() {
                    return Err(GrantError::Empty("host"));
                }
                for host in hosts {
                    check_host(host)?;
                }
            }
            Boundary::Write { paths } => {
                if paths.is_empty() {
                    return Err(GrantError::Empty("path"));
                }
                for path in paths {
                    if !path.is_absolute() {
                        return Err(GrantError::RelativePath(path.display().to_string()));
                    }
                    if path.parent().is_none() {
                        return Err(GrantError::TooBroad(path.display().to_string()));
                    }
                }
            }
        }
        Ok(())
    }
}

fn check_host(host: &str) -> Result<(), GrantError> {
    let bare =
        host.rsplit_once(':').map_or(
            host,
            |(h, port)| {
                if port.parse::<u16>().is_ok() {
                    h
                } else {
                    host
                }
            },
        );
    let name = bare.strip_prefix("*.").unwrap_or(bare);
    if name.is_empty() || name == "*" || !name.contains('.') && bare.starts_with("*.") {
        return Err(GrantError::TooBroad(host.to_string()));
    }
    let ok = name.split('.').all(|label| {
        !label.is_empty()
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    if ok {
        Ok(())
    } else {
        Err(GrantError::BadHost(host.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_policy::{SegmentDecision, Step, Verdict};

    fn decision(segments: &[&[&str]]) -> Decision {
        Decision {
            decision: Verdict::Deny,
            reason: String::new(),
            rule: None,
            step: Step::Workspace,
            segments: segments
                .iter()
                .map(|argv| SegmentDecision {
                    argv: argv.iter().map(|s| s.to_string()).collect(),
                    normalized: vec![],
                    decision: Verdict::Deny,
                    reason: String::new(),
                    rule: None,
                    step: Step::Workspace,
                })
                .collect(),
            policy_sha256: String::new(),
            loosened_by: vec![],
        }
    }

    fn grant(prefix: &str) -> Grant {
        Grant {
            id: "gr-000000000000".into(),
            boundary: Boundary::Write {
                paths: vec!["/srv/data".into()],
            },
            tenant: TenantId::token("t"),
            policy_sha256: "p".repeat(64),
            for_prefix: prefix.into(),
            created_by: Caller::token("t"),
            created_at: String::new(),
            expires_at: String::new(),
            expires_at_ms: 1000,
            max_uses: Some(2),
            uses: 0,
            revoked: None,
        }
    }

    #[test]
    fn covers_only_when_every_segment_matches() {
        let g = grant("python3 etl.py");
        let (t, p) = (TenantId::token("t"), "p".repeat(64));
        assert!(g.covers(&t, &p, &decision(&[&["python3", "etl.py", "--out", "x"]])));
        assert!(!g.covers(
            &t,
            &p,
            &decision(&[&["python3", "etl.py"], &["rm", "-rf", "/"]])
        ));
        assert!(!g.covers(&t, &p, &decision(&[&["python3"]])));
        assert!(!g.covers(&t, &p, &decision(&[])));
    }

    /// Finding 2: a grant is for one tenant under one policy.
    #[test]
    fn covers_only_its_own_tenant_and_policy() {
        let g = grant("python3");
        let d = decision(&[&["python3", "x.py"]]);
        let p = "p".repeat(64);
        assert!(g.covers(&TenantId::token("t"), &p, &d));
        assert!(!g.covers(&TenantId::token("other"), &p, &d));
        assert!(!g.covers(&TenantId::Local { uid: 0 }, &p, &d));
        assert!(!g.covers(&TenantId::token("t"), &"q".repeat(64), &d));
        let mut legacy = grant("python3");
        legacy.tenant = TenantId::UNKNOWN;
        legacy.policy_sha256 = String::new();
        assert!(!legacy.covers(&TenantId::UNKNOWN, "", &d));
    }

    #[test]
    fn state_follows_time_uses_and_revocation() {
        let mut g = grant("x");
        assert_eq!(g.state(999), GrantState::Active);
        assert_eq!(g.state(1000), GrantState::Expired);
        g.uses = 2;
        assert_eq!(g.state(0), GrantState::UsedUp);
        g.revoked = Some(Revocation {
            by: Caller::token("t"),
            at: String::new(),
        });
        assert_eq!(g.state(0), GrantState::Revoked);
    }

    #[test]
    fn requests_are_validated() {
        let ok = GrantRequest {
            boundary: Boundary::Write {
                paths: vec!["/srv/data".into()],
            },
            tenant: TenantId::token("t"),
            policy_sha256: "a".repeat(64),
            for_prefix: "python3 etl.py".into(),
            ttl: std::time::Duration::from_secs(3600),
            max_uses: None,
        };
        assert_eq!(ok.validate(), Ok(()));
        let mut bad = ok.clone();
        bad.tenant = TenantId::UNKNOWN;
        assert_eq!(bad.validate(), Err(GrantError::NoScope));
        let mut bad = ok.clone();
        bad.policy_sha256 = "x".into();
        assert_eq!(bad.validate(), Err(GrantError::NoScope));
        let mut bad = ok.clone();
        bad.ttl = MAX_TTL + std::time::Duration::from_secs(1);
        assert_eq!(bad.validate(), Err(GrantError::BadTtl));
        let mut bad = ok.clone();
        bad.boundary = Boundary::Write {
            paths: vec!["/".into()],
        };
        assert_eq!(bad.validate(), Err(GrantError::TooBroad("/".into())));
        let mut bad = ok.clone();
        bad.boundary = Boundary::Write {
            paths: vec!["rel".into()],
        };
        assert_eq!(bad.validate(), Err(GrantError::RelativePath("rel".into())));
        let mut net = ok.clone();
        net.boundary = Boundary::Network {
            hosts: vec!["files.example.com".into()],
        };
        assert_eq!(net.validate().is_ok(), NETWORK_ALLOWLIST_ENFORCED);
        assert_eq!(check_host("*"), Err(GrantError::TooBroad("*".into())));
        assert!(check_host("*.files.example.com:443").is_ok());
        assert!(check_host("bad host").is_err());
    }
}
