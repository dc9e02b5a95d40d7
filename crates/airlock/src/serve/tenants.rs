//! Bearer tokens and the tenant each one names: a name (recorded in the audit log
//! as the caller) and its own policy. One tokens file, TOML:
//!
//! ```toml
//! [[token]]
//! name = "ci-agent"
//! sha256 = "9f86d0…"                # SHA-256 (hex) of the token; or, in a 0600 file:
//! # token = "a-long-random-secret"
//! policy = "policies/ci.toml"       # relative to this file; omit for the default policy
//! role = "agent"                    # or "approver": answers approvals, manages grants
//!
//! [[token]]
//! name = "alice"
//! token = "…"
//! role = "approver"
//! tenants = ["ci-agent"]            # whose approvals, grants and records it handles ("*": all)
//! ```

use airlock_core::{Caller, TenantId};
use airlock_policy::Policy;
use anyhow::{bail, Context};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Who is calling and under which policy.
#[derive(Debug)]
pub struct Tenant {
    /// Recorded in the audit log as the caller.
    pub name: String,
    /// How the audit log names this caller.
    pub caller: Caller,
    pub policy: Arc<Policy>,
    /// Whose approvals this tenant may see and answer, whose grants it may
    /// manage and whose records it may read, besides its own. Agents: nobody
    /// (an agent that approves its own request would make approvals meaningless).
    pub approves: Scope,
}

/// The tenants an approver answers for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// An agent: its own objects only, and it answers nothing.
    Nobody,
    /// These tenants (never itself: a token cannot answer its own approvals).
    Tenants(Vec<TenantId>),
    /// Every tenant, and airlock's own records (the local operator, `"*"`).
    Everyone,
}

impl Tenant {
    /// The tenant this caller acts for.
    pub fn id(&self) -> TenantId {
        self.caller.tenant()
    }

    /// May answer approvals and manage grants at all.
    pub fn is_approver(&self) -> bool {
        self.approves != Scope::Nobody
    }

    /// May answer for (and manage grants of) `tenant`.
    pub fn answers_for(&self, tenant: &TenantId) -> bool {
        match &self.approves {
            Scope::Nobody => false,
            Scope::Everyone => true,
            Scope::Tenants(list) => list.contains(tenant),
        }
    }

    /// May see objects of `tenant` (`None`: airlock's own records, which only
    /// an approver of everyone sees).
    pub fn sees(&self, tenant: Option<&TenantId>) -> bool {
        match tenant {
            Some(t) => *t == self.id() || self.answers_for(t),
            None => self.approves == Scope::Everyone,
        }
    }
}

struct TokenEntry {
    sha256: [u8; 32],
    tenant: Arc<Tenant>,
}

/// Every tenant the server knows; looked up by the presented token.
pub struct Tenants {
    entries: Vec<TokenEntry>,
    /// Used when no tokens file was given: unix-socket callers (the socket is
    /// 0600, so only its owner reaches it) act as this tenant.
    local: Option<Arc<Tenant>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokensFile {
    #[serde(default)]
    token: Vec<TokenSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenSpec {
    name: String,
    token: Option<String>,
    sha256: Option<String>,
    policy: Option<PathBuf>,
    role: Option<String>,
    /// For an approver: the token names whose approvals it answers, or `["*"]`.
    tenants: Option<Vec<String>>,
}

/// Shortest plain-text token accepted: guessing must not be an option.
const MIN_TOKEN_CHARS: usize = 16;

pub fn token_sha256(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Tenants {
    /// No tokens: only the local tenant (unix socket / stdio).
    pub fn local_only(policy: Arc<Policy>, name: &str) -> Tenants {
        Tenants {
            entries: vec![],
            // Only the socket's owner can reach it: that is the human operator.
            local: Some(Arc::new(Tenant {
                name: name.into(),
                caller: Caller::cli(),
                policy,
                approves: Scope::Everyone,
            })),
        }
    }

    /// Read a tokens file. `load_policy` turns a tenant's policy path (or `None`
    /// for the default) into a policy; every policy is loaded now, so that a
    /// broken one stops the server at start rather than failing a request later.
    pub fn load(
        path: &Path,
        load_policy: &dyn Fn(Option<&Path>) -> anyhow::Result<Policy>,
    ) -> anyhow::Result<Tenants> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read tokens file {}", path.display()))?;
        let file: TokensFile = toml::from_str(&text)
            .with_context(|| format!("invalid tokens file {}", path.display()))?;
        if file.token.is_empty() {
            bail!("tokens file {} defines no [[token]]", path.display());
        }
        let mode = std::fs::metadata(path)?.permissions().mode();
        let base = path.parent().unwrap_or(Path::new("."));
        let mut entries: Vec<TokenEntry> = Vec::new();
        let all_names: Vec<String> = file.token.iter().map(|t| t.name.clone()).collect();
        for (i, spec) in file.token.into_iter().enumerate() {
            let at = format!("{} token[{i}]", path.display());
            if spec.name.is_empty()
                || spec.name.len() > 64
                || !spec
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c))
            {
                bail!("{at}: name must be 1-64 characters of [A-Za-z0-9-_.@]");
            }
            let sha256 = match (&spec.token, &spec.sha256) {
                (Some(_), Some(_)) => {
                    bail!("{at} ({}): give `token` or `sha256`, not both", spec.name)
                }
                (None, None) => bail!("{at} ({}): needs `token` or `sha256`", spec.name),
                (Some(token), None) => {
                    if mode & 0o077 != 0 {
                        bail!(
                            "{}: holds plain-text tokens but is readable by others (mode {:o}); \
                             chmod 600 it or store `sha256` instead",
                            path.display(),
                            mode & 0o777
                        );
                    }
                    if token.chars().count() < MIN_TOKEN_CHARS {
                        bail!(
                            "{at} ({}): token must be at least {MIN_TOKEN_CHARS} characters",
                            spec.name
                        );
                    }
                    token_sha256(token)
                }
                (None, Some(hexed)) => {
                    let bytes = hex::decode(hexed.trim())
                        .ok()
                        .filter(|b| b.len() == 32)
                        .with_context(|| {
                            format!("{at} ({}): sha256 must be 64 hex digits", spec.name)
                        })?;
                    let mut out = [0u8; 32];
                    out.copy_from_slice(&bytes);
                    out
                }
            };
            if entries.iter().any(|e| e.tenant.name == spec.name) {
                bail!("{at}: duplicate name {:?}", spec.name);
            }
            if entries.iter().any(|e| e.sha256 == sha256) {
                bail!("{at} ({}): the same token is listed twice", spec.name);
            }
            let approves = match (spec.role.as_deref(), &spec.tenants) {
                (None | Some("agent"), None) => Scope::Nobody,
                (None | Some("agent"), Some(_)) => bail!(
                    "{at} ({}): `tenants` is for role = \"approver\"; an agent answers for nobody",
                    spec.name
                ),
                (Some("approver"), None) => bail!(
                    "{at} ({}): an approver needs `tenants = [\"name\", ...]`, the tokens whose \
                     approvals it answers (known: {}), or `tenants = [\"*\"]` for every tenant",
                    spec.name,
                    all_names.join(", ")
                ),
                (Some("approver"), Some(list)) => {
                    approver_scope(&at, &spec.name, list, &all_names)?
                }
                (Some(other), _) => bail!(
                    "{at} ({}): role {other:?} is not agent or approver",
                    spec.name
                ),
            };
            let policy_path = spec
                .policy
                .map(|p| if p.is_absolute() { p } else { base.join(p) });
            let policy = load_policy(policy_path.as_deref())
                .with_context(|| format!("{at} ({}): cannot load its policy", spec.name))?;
            entries.push(TokenEntry {
                sha256,
                tenant: Arc::new(Tenant {
                    caller: Caller::token(spec.name.clone()),
                    name: spec.name,
                    policy: Arc::new(policy),
                    approves,
                }),
            });
        }
        Ok(Tenants {
            entries,
            local: None,
        })
    }

    pub fn requires_tokens(&self) -> bool {
        self.local.is_none()
    }

    pub fn local(&self) -> Option<Arc<Tenant>> {
        self.local.clone()
    }

    /// Every tenant (the local one, or each token's).
    pub fn all(&self) -> Vec<Arc<Tenant>> {
        self.local
            .iter()
            .cloned()
            .chain(self.entries.iter().map(|e| e.tenant.clone()))
            .collect()
    }

    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.tenant.name.clone()).collect()
    }

    /// The tenant whose tenant id this is (a token's, or the local one).
    pub fn find(&self, id: &TenantId) -> Option<Arc<Tenant>> {
        self.all().into_iter().find(|t| t.id() == *id)
    }

    /// Find the tenant for a presented token. Every entry is compared, in
    /// constant time, so timing does not tell which prefix matched.
    pub fn authenticate(&self, presented: &str) -> Option<Arc<Tenant>> {
        let digest = token_sha256(presented);
        let mut found = None;
        for entry in &self.entries {
            let mut diff = 0u8;
            for (a, b) in entry.sha256.iter().zip(digest.iter()) {
                diff |= a ^ b;
            }
            if diff == 0 {
                found = Some(entry.tenant.clone());
            }
        }
        found
    }
}

fn approver_scope(
    at: &str,
    name: &str,
    list: &[String],
    all_names: &[String],
) -> anyhow::Result<Scope> {
    if list.iter().any(|t| t == "*") {
        if list.len() > 1 {
            bail!("{at} ({name}): `tenants = [\"*\"]` stands alone");
        }
        return Ok(Scope::Everyone);
    }
    if list.is_empty() {
        bail!("{at} ({name}): `tenants` is empty; an approver answers for at least one tenant");
    }
    let mut ids = Vec::new();
    for t in list {
        if t == name {
            bail!("{at} ({name}): an approver cannot answer for itself (a token never answers its own approvals)");
        }
        if !all_names.contains(t) {
            bail!(
                "{at} ({name}): `tenants` names {t:?}, which is no token in this file (known: {})",
                all_names.join(", ")
            );
        }
        ids.push(TenantId::token(t.clone()));
    }
    Ok(Scope::Tenants(ids))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_policy(_: Option<&Path>) -> anyhow::Result<Policy> {
        crate::serve::service::load_policy(None)
    }

    #[test]
    fn tokens_file_plain_and_hashed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.toml");
        let hashed = hex::encode(token_sha256("second-token-0123456789"));
        std::fs::write(
            &file,
            format!(
                "[[token]]\nname = \"a\"\ntoken = \"first-token-0123456789\"\n\n\
                 [[token]]\nname = \"b\"\nsha256 = \"{hashed}\"\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let tenants = Tenants::load(&file, &fake_policy).unwrap();
        assert_eq!(
            tenants.authenticate("first-token-0123456789").unwrap().name,
            "a"
        );
        assert_eq!(
            tenants
                .authenticate("second-token-0123456789")
                .unwrap()
                .name,
            "b"
        );
        assert!(tenants.authenticate("first-token-012345678").is_none());
        assert!(tenants.authenticate("").is_none());
        assert!(tenants.requires_tokens());

        // Plain-text tokens in a world-readable file are refused.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = Tenants::load(&file, &fake_policy).err().unwrap();
        assert!(format!("{err:#}").contains("readable by others"), "{err:#}");
    }

    #[test]
    fn bad_tokens_files_are_refused_with_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.toml");
        for (text, expect) in [
            ("[[token]]\nname = \"a\"\ntoken = \"short\"\n", "at least 16"),
            ("[[token]]\nname = \"a b\"\ntoken = \"0123456789abcdef0\"\n", "name must be"),
            ("[[token]]\nname = \"a\"\nsha256 = \"zz\"\n", "64 hex"),
            ("[[token]]\nname = \"a\"\n", "needs `token` or `sha256`"),
            ("[[token]]\nname = \"a\"\ntokn = \"x\"\n", "unknown field"),
            ("", "no [[token]]"),
            (
                "[[token]]\nname = \"a\"\ntoken = \"0123456789abcdef0\"\n[[token]]\nname = \"a\"\ntoken = \"0123456789abcdef1\"\n",
                "duplicate name",
            ),
            (
                "[[token]]\nname = \"h\"\ntoken = \"0123456789abcdef0\"\nrole = \"approver\"\n",
                "needs `tenants",
            ),
            (
                "[[token]]\nname = \"h\"\ntoken = \"0123456789abcdef0\"\nrole = \"approver\"\ntenants = [\"ghost\"]\n",
                "no token in this file",
            ),
            (
                "[[token]]\nname = \"h\"\ntoken = \"0123456789abcdef0\"\nrole = \"approver\"\ntenants = [\"h\"]\n",
                "cannot answer for itself",
            ),
            (
                "[[token]]\nname = \"a\"\ntoken = \"0123456789abcdef0\"\ntenants = [\"*\"]\n",
                "an agent answers for nobody",
            ),
        ] {
            std::fs::write(&file, text).unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
            let err = Tenants::load(&file, &fake_policy).err().expect(text);
            assert!(format!("{err:#}").contains(expect), "{text:?}: {err:#}");
        }
    }

    #[test]
    fn approvers_answer_only_for_their_tenants() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.toml");
        std::fs::write(
            &file,
            "[[token]]\nname = \"a\"\ntoken = \"aaaaaaaaaaaaaaaa0\"\n\
             [[token]]\nname = \"b\"\ntoken = \"bbbbbbbbbbbbbbbb0\"\n\
             [[token]]\nname = \"h\"\ntoken = \"hhhhhhhhhhhhhhhh0\"\nrole = \"approver\"\ntenants = [\"a\"]\n\
             [[token]]\nname = \"root\"\ntoken = \"rrrrrrrrrrrrrrrr0\"\nrole = \"approver\"\ntenants = [\"*\"]\n",
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let tenants = Tenants::load(&file, &fake_policy).unwrap();
        let a = tenants.authenticate("aaaaaaaaaaaaaaaa0").unwrap();
        let h = tenants.authenticate("hhhhhhhhhhhhhhhh0").unwrap();
        let root = tenants.authenticate("rrrrrrrrrrrrrrrr0").unwrap();
        let (ta, tb) = (TenantId::token("a"), TenantId::token("b"));
        assert!(!a.is_approver() && a.sees(Some(&ta)) && !a.sees(Some(&tb)) && !a.sees(None));
        assert!(h.answers_for(&ta) && !h.answers_for(&tb) && !h.answers_for(&h.id()));
        assert!(h.sees(Some(&h.id())) && !h.sees(Some(&tb)) && !h.sees(None));
        assert!(root.answers_for(&tb) && root.sees(None));
        assert_eq!(tenants.find(&tb).unwrap().name, "b");
    }
}
