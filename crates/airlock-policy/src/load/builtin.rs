//! The built-in default policy as it was when airlock was built.
//!
//! Every airlock process that finds no policy file (`airlock run`, `check`,
//! `mcp` in a plain directory) needs the built-in default on its cold path,
//! and loading its TOML text was about a quarter of `airlock check`'s
//! instructions even with the warning-only checks skipped. So the loader's
//! result is kept as data in `builtin_policy_generated.rs` (written by the
//! real loader and `generate.rs`, a test module, never by hand, as the
//! knowledge base's `builtin_generated.rs` is), and [`policy`] turns that data
//! into a [`Policy`] with no parsing: only the allocations of the value.
//!
//! Two guards keep the data equal to what the loader makes of the text:
//! - the data records the SHA-256 of the `default_policy.toml` it was made
//!   from, and the crate does not compile when that is not
//!   [`DEFAULT_POLICY_SHA256`], the compiler's own hash of the text;
//! - the tests `default_policy_generated_*` (`cargo nextest run -p
//!   airlock-policy`) compare the value with the fully checked load's, and the
//!   checked-in file with a fresh rendering, byte by byte, so a change of the
//!   loader's semantics (a default, a rule's name) is caught too; and
//!   `load::tests::builtin_default_loads_without_warnings` proves the text
//!   clean with every check on.

use super::builtin_policy_generated::{policy_data, SOURCE_SHA256};
use super::DEFAULT_POLICY_SHA256;
use crate::model::Rule;
use crate::{Policy, Verdict};
use std::path::{Path, PathBuf};

/// The command that rewrites `builtin_policy_generated.rs` from
/// `default_policy.toml` (a macro, so that the compile-time check's message
/// can include it).
macro_rules! regenerate_command {
    () => {
        "AIRLOCK_REGENERATE=1 cargo nextest run -p airlock-policy -E 'test(default_policy_generated)'"
    };
}
#[cfg(test)]
pub(super) use regenerate_command;

// A `default_policy.toml` edit without the data following does not build: the
// tests catch it too, but a build whose tests were not run would ship it.
// `option_env!` is tracked by cargo, so setting or unsetting the variable
// rebuilds the crate.
const _: () = assert!(
    option_env!("AIRLOCK_REGENERATE").is_some() || str_eq(SOURCE_SHA256, DEFAULT_POLICY_SHA256),
    "{}",
    concat!(
        "crates/airlock-policy/src/default_policy.toml changed after builtin_policy_generated.rs ",
        "was made from it; regenerate it with: ",
        regenerate_command!()
    )
);

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The built-in default rooted at `root` (already absolute and lexically normal).
pub(super) fn policy(root: &Path) -> Policy {
    policy_data(root.to_path_buf())
}

/// A [`Rule`] as static data.
pub(super) struct StaticRule {
    pub name: &'static str,
    pub prefix: &'static [&'static [&'static str]],
    pub decision: Verdict,
    pub reason: Option<&'static str>,
}

pub(super) fn rules(table: &[StaticRule]) -> Vec<Rule> {
    table
        .iter()
        .map(|r| Rule {
            name: r.name.to_string(),
            prefix: r.prefix.iter().map(|alts| strings(alts)).collect(),
            decision: r.decision,
            reason: r.reason.map(str::to_string),
        })
        .collect()
}

pub(super) fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

pub(super) fn paths(v: &[&str]) -> Vec<PathBuf> {
    v.iter().map(PathBuf::from).collect()
}

pub(super) fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}
