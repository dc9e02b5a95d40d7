//! Who asked: a person at the CLI, or an API token's name.

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
}

impl Caller {
    pub fn token(name: impl Into<String>) -> Caller {
        Caller {
            name: name.into(),
            kind: CallerKind::Token,
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
