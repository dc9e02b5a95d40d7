//! Toolchain presets (`[toolchains] use = ["python", "rust", "node", "go"]`):
//! what each language's own tools need inside the sandbox, worked out on this
//! host and written into the policy as ordinary entries, so that the gate and
//! the sandbox see the same thing and `airlock policy explain` shows it.
//!
//! A preset only adds: read-only paths (`filesystem.read`), variables and PATH
//! entries (`env.set`, where the policy's own values win), and allow rules
//! named `toolchains.<name>[i]` for the tool's build and test commands (a deny
//! or approval rule of the policy still wins), and hidden paths
//! (`filesystem.hide`) for the credentials inside what it shows. It never makes
//! a host path writable: caches a tool must write go to the run's own `/tmp`,
//! fresh each run.

mod go;
mod host;
mod node;
mod python;
pub mod registries;
mod rust;

pub use host::Host;

use airlock_policy::{Loaded, NetworkMode, Policy, PolicyError, Rule, Toolchain, Verdict};
use std::path::{Path, PathBuf};

/// What one preset adds to a policy.
#[derive(Debug, Default, PartialEq)]
pub struct Exposure {
    /// Host directories shown read-only (only those that exist are kept).
    pub read: Vec<PathBuf>,
    /// Paths under those masked in the view (`filesystem.hide`).
    pub hide: Vec<PathBuf>,
    /// Directories put first on PATH, in this order.
    pub path: Vec<PathBuf>,
    /// Variables set inside unless the policy sets them itself.
    pub env: Vec<(String, String)>,
    /// Allow rules: each an argv prefix, one word per position.
    pub allow: Vec<Vec<&'static str>>,
    /// Registry hosts for `network.allow` (allowlist mode only).
    pub hosts: Vec<String>,
}

impl Exposure {
    fn read_if_dir(&mut self, p: &Path) {
        if p.is_dir() {
            let p = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            if !self.read.contains(&p) {
                self.read.push(p);
            }
        }
    }

    fn set(&mut self, k: &str, v: impl Into<String>) {
        self.env.push((k.to_string(), v.into()));
    }
}

/// What `toolchain` needs on this host, for `policy`.
pub fn exposure(toolchain: Toolchain, policy: &Policy, host: &Host) -> Exposure {
    let offline = policy.network.mode == NetworkMode::None;
    let mut e = match toolchain {
        Toolchain::Python => python::exposure(&policy.workspace.root, host),
        Toolchain::Rust => rust::exposure(host, offline),
        Toolchain::Node => node::exposure(&policy.workspace.root, host),
        Toolchain::Go => go::exposure(host, offline),
    };
    if policy.network.mode == NetworkMode::Allowlist {
        e.hosts = registries::hosts(toolchain, host);
    }
    e
}

/// Write every preset the policy names into it.
pub fn apply(policy: &mut Policy, host: &Host) {
    for toolchain in policy.toolchains.clone() {
        let e = exposure(toolchain, policy, host);
        merge(policy, toolchain, e);
    }
}

/// [`airlock_policy::load::resolve`] with the presets applied, for this process's host.
pub fn resolve(explicit: Option<&Path>, cwd: &Path) -> Result<Loaded, PolicyError> {
    let mut loaded = airlock_policy::load::resolve(explicit, cwd)?;
    apply(&mut loaded.policy, &Host::from_process());
    Ok(loaded)
}

/// [`airlock_policy::load::from_file`] with the presets applied.
pub fn from_file(path: &Path) -> Result<Loaded, PolicyError> {
    let mut loaded = airlock_policy::load::from_file(path)?;
    apply(&mut loaded.policy, &Host::from_process());
    Ok(loaded)
}

fn merge(policy: &mut Policy, toolchain: Toolchain, e: Exposure) {
    let name = toolchain.as_str();
    for p in e.read {
        if !policy.filesystem.read.contains(&p) {
            policy.filesystem.read.push(p);
        }
    }
    for p in e.hide {
        if !policy.filesystem.hide.contains(&p) {
            policy.filesystem.hide.push(p);
        }
    }
    let set = &mut policy.env.set;
    for (k, v) in e.env {
        if !set.iter().any(|(n, _)| *n == k) {
            set.push((k, v));
        }
    }
    if !e.path.is_empty() {
        let current = match set.iter().position(|(n, _)| n == "PATH") {
            Some(i) => set.remove(i).1,
            None => crate::spec::SANDBOX_PATH.to_string(),
        };
        let mut dirs: Vec<String> = e.path.iter().map(|p| p.display().to_string()).collect();
        dirs.extend(current.split(':').map(str::to_string));
        let mut seen = Vec::new();
        dirs.retain(|d| {
            !d.is_empty() && !seen.contains(d) && {
                seen.push(d.clone());
                true
            }
        });
        set.push(("PATH".into(), dirs.join(":")));
    }
    for h in e.hosts {
        // The same check as a host written in the file: never a wildcard.
        let fine = airlock_policy::load::check_host_pattern(&h, true).is_ok();
        if fine && !policy.network.allow.contains(&h) {
            policy.network.allow.push(h);
        }
    }
    let rules = &mut policy.commands.rules;
    for (i, prefix) in e.allow.into_iter().enumerate() {
        rules.push(Rule {
            name: format!("toolchains.{name}[{i}]"),
            prefix: prefix
                .into_iter()
                .map(|w| w.split('|').map(str::to_string).collect())
                .collect(),
            decision: Verdict::Allow,
            reason: Some(format!("the `{name}` toolchain preset allows it")),
        });
    }
}

/// What `airlock policy init` finds in a project folder: the presets it needs.
pub fn detect(dir: &Path) -> Vec<Toolchain> {
    let has = |name: &str| dir.join(name).exists();
    let mut found = Vec::new();
    if has("pyproject.toml")
        || has("requirements.txt")
        || has("setup.py")
        || has("setup.cfg")
        || python::workspace_venvs(dir).next().is_some()
    {
        found.push(Toolchain::Python);
    }
    if has("package.json") {
        found.push(Toolchain::Node);
    }
    if has("Cargo.toml") {
        found.push(Toolchain::Rust);
    }
    if has("go.mod") {
        found.push(Toolchain::Go);
    }
    found
}

#[cfg(test)]
mod tests;
