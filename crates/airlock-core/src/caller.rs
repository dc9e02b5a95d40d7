//! Who asked: a person at the CLI, or an API token's name; and the tenant that
//! owns what they asked for.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallerKind {
    /// A local user at the command line (name is the login name or `uid:N`).
    Cli,
    /// An HTTP/MCP client authenticated by a bearer token (name is the token's name).
    Token,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    pub name: String,
    pub kind: CallerKind,
    /// The real uid of a local user (`Cli`), which is what makes them a tenant;
    /// the name is only for people reading the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
}

/// Whose objects these are: every approval, grant, run and audit record belongs
/// to one tenant, and only that tenant (and approvers configured for it) sees or
/// uses them. A tenant is an API token (by its name in the tokens file) or a
/// local user (by uid: the CLI, and the owner-only socket without tokens).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TenantId {
    Local { uid: u32 },
    Token { name: String },
}

impl TenantId {
    /// The tenant of objects written before tenancy existed, or of a caller
    /// without one: it matches no real caller, so such objects are used by nobody
    /// (they stay visible to approvers of every tenant and to the CLI).
    pub const UNKNOWN: TenantId = TenantId::Local { uid: u32::MAX };

    pub fn token(name: impl Into<String>) -> TenantId {
        TenantId::Token { name: name.into() }
    }

    pub fn is_unknown(&self) -> bool {
        *self == TenantId::UNKNOWN
    }
}

impl Default for TenantId {
    fn default() -> Self {
        TenantId::UNKNOWN
    }
}

impl std::fmt::Display for TenantId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            _ if self.is_unknown() => write!(f, "unknown"),
            TenantId::Local { uid } => write!(f, "local uid {uid}"),
            TenantId::Token { name } => write!(f, "token {name}"),
        }
    }
}

impl Caller {
    pub fn token(name: impl Into<String>) -> Caller {
        Caller {
            name: name.into(),
            kind: CallerKind::Token,
            uid: None,
        }
    }

    /// The local user running this process: `$USER (uid N)`, or `uid:N` when
    /// `$USER` is unset. The uid is the real one; the name is for the record,
    /// not for authorisation.
    pub fn cli() -> Caller {
        let uid = rustix::process::getuid().as_raw();
        let name = std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty() && u.chars().all(|c| c.is_ascii_graphic()))
            .map(|u| format!("{u} (uid {uid})"))
            .unwrap_or_else(|| format!("uid:{uid}"));
        Caller {
            name,
            kind: CallerKind::Cli,
            uid: Some(uid),
        }
    }

    /// airlock itself (an approval expiring): no tenant.
    pub fn airlock() -> Caller {
        Caller {
            name: "airlock".into(),
            kind: CallerKind::Cli,
            uid: None,
        }
    }

    /// The tenant this caller acts for.
    pub fn tenant(&self) -> TenantId {
        match (self.kind, self.uid) {
            (CallerKind::Token, _) => TenantId::token(self.name.clone()),
            (CallerKind::Cli, Some(uid)) => TenantId::Local { uid },
            (CallerKind::Cli, None) => TenantId::UNKNOWN,
        }
    }
}

impl std::fmt::Display for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            CallerKind::Cli => write!(f, "cli:{}", self.name),
            CallerKind::Token => write!(f, "token:{}", self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_of_callers() {
        assert_eq!(Caller::token("a").tenant(), TenantId::token("a"));
        let me = Caller::cli();
        assert_eq!(
            me.tenant(),
            TenantId::Local {
                uid: rustix::process::getuid().as_raw()
            }
        );
        assert!(Caller::airlock().tenant().is_unknown());
        // Old records and documents without a tenant belong to nobody.
        let legacy: TenantId = serde_json::from_str::<Option<TenantId>>("null")
            .unwrap()
            .unwrap_or_default();
        assert!(legacy.is_unknown());
        assert_eq!(
            serde_json::to_string(&TenantId::token("ci")).unwrap(),
            r#"{"kind":"token","name":"ci"}"#
        );
    }
}
