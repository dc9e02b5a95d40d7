//! What a helper killed outright (SIGKILL, a crash, the machine's OOM killer)
//! leaves behind: its container and its stage. Both name their owner (the
//! helper's pid and the start time of that process, so a reused pid is not
//! mistaken for it); every helper removes those whose owner is gone before
//! it starts its own run.

use super::config::{LABEL_OWNER, LABEL_RUN};
use crate::sys;
use bollard::query_parameters::ListContainersOptions;
use bollard::Docker;
use std::collections::HashMap;
use std::path::Path;

/// The file in a stage that names its owner.
pub const OWNER_FILE: &str = "owner";

/// `PID:START` of a process, START being its start time in clock ticks since
/// boot (field 22 of /proc/PID/stat).
fn owner_of(pid: &str) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces: count from its closing ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    let start = after.split_whitespace().nth(19)?;
    Some(format!("{pid}:{start}"))
}

/// This process's owner label.
pub fn owner_label() -> String {
    owner_of(&std::process::id().to_string()).unwrap_or_default()
}

/// Whether the process named by an owner label is still the one that wrote it.
fn alive(label: &str) -> bool {
    match label.split_once(':') {
        Some((pid, _)) => owner_of(pid).is_some_and(|now| now == label),
        None => false,
    }
}

/// Removes every airlock container whose owner is gone; returns notes.
pub async fn containers(docker: &Docker) -> Vec<String> {
    let mut filters = HashMap::new();
    filters.insert("label".to_string(), vec![LABEL_RUN.to_string()]);
    let opts = ListContainersOptions {
        all: true,
        filters: Some(filters),
        ..Default::default()
    };
    let Ok(list) = docker.list_containers(Some(opts)).await else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    for c in list {
        let owner = c
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_OWNER))
            .cloned()
            .unwrap_or_default();
        if alive(&owner) {
            continue;
        }
        if let Some(id) = c.id {
            match super::helper::remove(docker, &id).await {
                Ok(()) => notes.push(format!("removed stale container {id} (owner {owner} gone)")),
                Err(e) => notes.push(e),
            }
        }
    }
    notes
}

/// Unmounts and removes every stage under `base` whose owner is gone.
pub fn stages(base: &Path) -> Vec<String> {
    let mut notes = Vec::new();
    let Ok(entries) = std::fs::read_dir(base) else {
        return notes;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        let owner = std::fs::read_to_string(dir.join(OWNER_FILE)).unwrap_or_default();
        if owner.is_empty() || alive(&owner) {
            // A stage being made has no owner file yet.
            continue;
        }
        // Only once the stage's tmpfs (and the workspace bound below it) is
        // detached may the directory go, and then only if it is empty.
        if sys::umount_detach(&dir).is_ok() {
            let _ = std::fs::remove_dir(&dir);
            notes.push(format!("removed stale stage {}", dir.display()));
        }
    }
    notes
}
