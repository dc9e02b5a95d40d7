//! Loading a policy: where it comes from, and turning its TOML text into a
//! validated [`Policy`] with errors that point at a line and column.

mod builtin;
// Generated (see builtin.rs); rustfmt would make it differ from what the
// generator writes, which a test compares byte for byte.
#[rustfmt::skip]
mod builtin_policy_generated;
mod const_sha256;
#[cfg(test)]
mod generate;
mod units;
mod walk;

pub use units::{parse_duration, parse_size};
pub(crate) use walk::is_normal_absolute;
pub use walk::{absolute_lexical, check_host_pattern, display_prefix, knowledge_from_str};

use crate::Policy;
use sha2::{Digest, Sha256};
use std::fmt;
use std::path::{Path, PathBuf};

/// The built-in default policy's text (commented TOML, parsed by the same loader).
pub const DEFAULT_POLICY_TOML: &str = include_str!("../default_policy.toml");

/// [`sha256_hex`] of [`DEFAULT_POLICY_TOML`], computed by the compiler: every
/// process that falls back to the default records it, and hashing the text
/// there cost a tenth of `airlock check`'s instructions.
pub const DEFAULT_POLICY_SHA256: &str = {
    const HEX: [u8; 64] = const_sha256::hex(const_sha256::sha256(DEFAULT_POLICY_TOML.as_bytes()));
    match std::str::from_utf8(&HEX) {
        Ok(s) => s,
        Err(_) => panic!("hex digits are ASCII"),
    }
};

/// The name used for the built-in default in messages and in `Policy::source`.
pub const BUILTIN_ORIGIN: &str = "<built-in default>";

/// The environment variable naming a policy file.
pub const POLICY_ENV: &str = "AIRLOCK_POLICY";

/// The file looked for in the current directory.
pub const POLICY_FILE_NAME: &str = "airlock.toml";

/// A policy that loaded, with what the loader wants a human to know.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub policy: Policy,
    pub warnings: Vec<PolicyWarning>,
}

/// A place in a policy file (1-based line and column, in characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub origin: String,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.origin, self.line, self.column)
    }
}

/// Something wrong with a policy file, at a place in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub location: Location,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

/// Something legal but probably not what the author meant.
pub type PolicyWarning = Diagnostic;

/// Why a policy could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("{origin}: cannot read the policy file: {source}")]
    Read {
        origin: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}: the policy file is not valid UTF-8 (byte {offset})")]
    NotUtf8 { origin: String, offset: usize },
    #[error("{}", render(.diagnostics))]
    Invalid { diagnostics: Vec<Diagnostic> },
}

impl PolicyError {
    /// The located problems, if this is a validation error.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            PolicyError::Invalid { diagnostics } => diagnostics,
            _ => &[],
        }
    }
}

fn render(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The built-in default policy, with its workspace rooted at `workspace_root`.
///
/// It is the loader's result for [`DEFAULT_POLICY_TOML`], compiled in
/// (`builtin.rs`): no parsing on the cold path. Equal to the fully checked
/// load of the text, which has no warnings (both tested).
pub fn builtin_default(workspace_root: &Path) -> Policy {
    builtin::policy(&walk::absolute_lexical(workspace_root))
}

/// Load a policy file. `workspace.root` is relative to the file's folder.
pub fn from_file(path: &Path) -> Result<Loaded, PolicyError> {
    let origin = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| PolicyError::Read {
        origin: origin.clone(),
        source,
    })?;
    let text = String::from_utf8(bytes).map_err(|e| PolicyError::NotUtf8 {
        origin: origin.clone(),
        offset: e.utf8_error().valid_up_to(),
    })?;
    let base = path
        .parent()
        .map(|p| {
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            }
        })
        .unwrap_or(Path::new("."));
    let base = absolute(base);
    from_str(&text, &origin, &base)
}

/// Load a policy from text. `origin` names it in messages; `base_dir` is what a
/// relative `workspace.root` is relative to.
pub fn from_str(text: &str, origin: &str, base_dir: &Path) -> Result<Loaded, PolicyError> {
    walk::load_text_with_base(text, origin, base_dir)
}

/// Find and load the policy that applies: `explicit` (`--policy FILE`), then
/// `$AIRLOCK_POLICY`, then `./airlock.toml` in `cwd`, then the built-in default
/// rooted at `cwd`.
pub fn resolve(explicit: Option<&Path>, cwd: &Path) -> Result<Loaded, PolicyError> {
    if let Some(path) = explicit {
        return from_file(&cwd.join(path));
    }
    if let Some(value) = std::env::var_os(POLICY_ENV) {
        if !value.is_empty() {
            return from_file(&cwd.join(PathBuf::from(value)));
        }
    }
    let local = cwd.join(POLICY_FILE_NAME);
    if local.is_file() {
        return from_file(&local);
    }
    Ok(Loaded {
        policy: builtin_default(cwd),
        warnings: Vec::new(),
    })
}

/// SHA-256 (hex) of a policy's source text.
pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_default_loads_without_warnings() {
        let root = std::env::temp_dir();
        let loaded = walk::load_text(DEFAULT_POLICY_TOML, BUILTIN_ORIGIN, Some(&root))
            .unwrap_or_else(|e| panic!("default policy must load: {e}"));
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert_eq!(loaded.policy.source, BUILTIN_ORIGIN);
        assert!(loaded.policy.commands.rules.len() > 100);
    }

    /// What `builtin_default` gives is the fully checked load's value, for
    /// roots in any form (the generated data's own tests use normal ones).
    #[test]
    fn builtin_default_is_the_fully_checked_load() {
        for root in [
            std::env::temp_dir(),
            PathBuf::from("/w/./x/.."),
            PathBuf::from("rel/../x"),
        ] {
            let full = walk::load_text(DEFAULT_POLICY_TOML, BUILTIN_ORIGIN, Some(&root))
                .unwrap_or_else(|e| panic!("default policy must load: {e}"));
            assert_eq!(
                builtin_default(&root),
                full.policy,
                "root {}",
                root.display()
            );
        }
    }

    #[test]
    fn the_compiled_in_default_hash_is_the_texts() {
        assert_eq!(DEFAULT_POLICY_SHA256, sha256_hex(DEFAULT_POLICY_TOML));
    }
}
