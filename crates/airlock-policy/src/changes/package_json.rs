//! A `package.json`'s hook-manager keys. Hook managers install git hooks once
//! (`npx husky install`, `yorkie`'s and `simple-git-hooks`' postinstall) that
//! read the commands to run from `package.json` at every commit or push: a
//! change to those keys is a change to what host git runs. Other keys
//! (dependencies, scripts) run only when the user runs the project's tools,
//! and are left alone.

use super::View;
use std::path::Path;

/// The top-level keys whose values hook managers run: husky before v5
/// (`husky.hooks`), yorkie (`gitHooks`), simple-git-hooks, lint-staged (run
/// by the pre-commit hook), and the `pre-commit` and `pre-push` npm packages
/// (`pre-commit` also reads `precommit`).
pub(super) const HOOK_KEYS: &[&str] = &[
    "husky",
    "gitHooks",
    "simple-git-hooks",
    "lint-staged",
    "pre-commit",
    "precommit",
    "pre-push",
];

/// Most bytes of a `package.json` read to compare its hook keys.
pub(super) const MAX_BYTES: usize = 4 << 20;

/// The hook keys of a `package.json`'s text, with their values (a key
/// absent is `None`); `None` when it is not a JSON object.
fn hook_values(data: &[u8]) -> Option<Vec<Option<serde_json::Value>>> {
    let serde_json::Value::Object(map) = serde_json::from_slice(data).ok()? else {
        return None;
    };
    Some(HOOK_KEYS.iter().map(|k| map.get(*k).cloned()).collect())
}

/// Why the `package.json` at `rel`, as the change set leaves it, needs a
/// person: its hook keys differ from the host's (a host file that is
/// absent or cannot be read counts as having none), or it cannot be read
/// or parsed to compare them.
pub(super) fn hooks_changed(rel: &Path, view: &dyn View) -> Option<String> {
    let Some(new) = view.read(rel, MAX_BYTES) else {
        return Some(format!(
            "could not be read to compare its hook-manager keys ({}) with the host's (larger than {MAX_BYTES} bytes, or gone)",
            HOOK_KEYS.join(", ")
        ));
    };
    let Some(new) = hook_values(&new) else {
        return Some(format!(
            "is not a JSON object, so its hook-manager keys ({}) cannot be compared with the host's",
            HOOK_KEYS.join(", ")
        ));
    };
    let host = view
        .read_host(rel, MAX_BYTES)
        .and_then(|d| hook_values(&d))
        .unwrap_or_else(|| vec![None; HOOK_KEYS.len()]);
    let changed: Vec<String> = HOOK_KEYS
        .iter()
        .zip(new.iter().zip(&host))
        .filter(|(_, (n, h))| n != h)
        .map(|(k, _)| format!("`{k}`"))
        .collect();
    (!changed.is_empty()).then(|| {
        format!(
            "changes the hook-manager key(s) {} against the host's package.json",
            changed.join(", ")
        )
    })
}
