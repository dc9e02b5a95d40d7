//! Kept change sets in the state directory (`<state>/kept/<run id>/`): the
//! change set of an overlay run that was not applied, kept so that a person
//! can review it (`airlock changes RUN_ID`) and apply it later (`airlock apply
//! RUN_ID`) without running the command again. The sandbox crate writes and
//! applies them ([`airlock_sandbox::workspace::kept`]); this module names them,
//! records who made them, and bounds their age and total size.

use crate::audit::record::RequestRecord;
use crate::{Caller, TenantId};
use airlock_policy::ChangesPolicy;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The folder of kept change sets in the state directory.
pub const DIR: &str = "kept";
/// Who made a kept set, next to its manifest.
pub const RUN_FILE: &str = "run.json";
/// A kept set without a manifest this old is an unfinished copy (a run that
/// died while keeping): removed. Younger ones may still be being written.
const UNFINISHED_AFTER_MS: u64 = 3600 * 1000;

/// Who made a kept set and with what command.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    pub run_id: String,
    pub who: Caller,
    pub tenant: TenantId,
    pub request: RequestRecord,
    pub policy_sha256: String,
    /// The policy file the run was judged under (absent: the built-in
    /// default). A later apply, under whatever policy, never writes it: a
    /// run could otherwise rewrite the rules of its own next run by waiting
    /// for an apply judged under another policy.
    #[serde(default)]
    pub policy_file: Option<PathBuf>,
}

/// The folder of all kept sets.
pub fn root(state_dir: &Path) -> PathBuf {
    state_dir.join(DIR)
}

/// The folder of one run's kept set. A run id is what airlock made
/// (`r` and hex digits and dashes); anything else is refused before it
/// names a path.
pub fn run_dir(state_dir: &Path, run_id: &str) -> Result<PathBuf, String> {
    let ok = run_id.len() <= 64
        && run_id.starts_with('r')
        && run_id[1..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit() || b == b'-');
    if !ok || run_id.len() < 2 {
        return Err(format!(
            "`{}` is not a run id (they look like r0193a7c2e4f1b-0042a-0001, the request_id of `airlock run --json`)",
            crate::terminal::escape_text(run_id)
        ));
    }
    Ok(root(state_dir).join(run_id))
}

/// Records who made the kept set in `dir`.
pub fn write_info(dir: &Path, info: &RunInfo) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(info).map_err(std::io::Error::other)?;
    crate::state::write_atomic(&dir.join(RUN_FILE), &bytes)
}

/// Who made the kept set in `dir`.
pub fn read_info(dir: &Path) -> Result<RunInfo, String> {
    let text = std::fs::read(dir.join(RUN_FILE)).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "no kept change set by that run id (it was applied, discarded or expired, or the run kept nothing)".to_string(),
        _ => format!("cannot read the kept change set: {e}"),
    })?;
    serde_json::from_slice(&text)
        .map_err(|e| format!("the kept change set's run record is damaged ({e})"))
}

/// The age and total-size bounds of `[changes]`.
pub fn bounds(changes: &ChangesPolicy) -> (u64, u64) {
    (
        changes
            .keep_for_ms
            .unwrap_or(airlock_policy::changes::DEFAULT_KEEP_FOR_MS),
        changes
            .keep_bytes
            .unwrap_or(airlock_policy::changes::DEFAULT_KEEP_BYTES),
    )
}

/// Removes kept sets older than `keep_for_ms`, unfinished ones, and then the
/// oldest until all together take no more than `keep_bytes`. Returns the run
/// ids removed. Errors are skipped: pruning never stops a run.
pub fn prune(state_dir: &Path, keep_for_ms: u64, keep_bytes: u64, now_ms: u64) -> Vec<String> {
    use airlock_sandbox::workspace::kept as sk;
    let Ok(rd) = std::fs::read_dir(root(state_dir)) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    let mut live: Vec<(u64, u64, PathBuf, String)> = Vec::new();
    for e in rd.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        let made = sk::stamp(&path);
        let created = match made {
            Some((created, _)) => created,
            None => e
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
        };
        let age = now_ms.saturating_sub(created);
        let expired = match made {
            Some(_) => age >= keep_for_ms,
            None => age >= UNFINISHED_AFTER_MS.min(keep_for_ms),
        };
        if expired {
            if sk::remove(&path).is_ok() {
                removed.push(name);
            }
            continue;
        }
        if let Some((_, bytes)) = made {
            live.push((created, bytes.max(1), path, name));
        }
    }
    live.sort();
    let mut total: u64 = live.iter().map(|l| l.1).sum();
    for (_, bytes, path, name) in live {
        if total <= keep_bytes {
            break;
        }
        if sk::remove(&path).is_ok() {
            total -= bytes;
            removed.push(name);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_checked_before_they_name_a_path() {
        let s = Path::new("/state");
        assert!(run_dir(s, "r0193a7c2e4f1b-0042a-0001").is_ok());
        for bad in [
            "",
            "r",
            "../x",
            "r/../../etc",
            "x123",
            "r12 3",
            "r..",
            "r1\n",
        ] {
            assert!(run_dir(s, bad).is_err(), "{bad:?}");
        }
    }
}
