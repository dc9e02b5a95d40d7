//! What a helper killed outright (SIGKILL, a crash, the machine's OOM killer)
//! leaves behind: its container and its stage. Both name their owner: the
//! boot and the pid namespace the helper ran in, its pid there and the start
//! time of that process (so that a reused pid is not mistaken for it). Every
//! helper removes those whose owner is provably gone before it starts its own
//! run: only owners of this boot and this pid namespace can be looked up, so a
//! container of another host or of another pid namespace sharing the daemon
//! (a CI container, a second machine, a remote podman service) is never
//! touched, nor is one whose owner cannot be read (an older airlock's).

use super::config::{LABEL_OWNER, LABEL_RUN};
pub use crate::oci::owner::owner_label;
use crate::oci::owner::{alive, stale, Here};
use crate::sys;
use bollard::query_parameters::ListContainersOptions;
use bollard::Docker;
use std::collections::HashMap;
use std::path::Path;

/// The file in a stage that names its owner.
pub const OWNER_FILE: &str = "owner";

/// Removes every airlock container whose owner is gone; returns notes.
pub async fn containers(docker: &Docker) -> Vec<String> {
    let mut filters = HashMap::new();
    filters.insert("label".to_string(), vec![LABEL_RUN.to_string()]);
    let opts = ListContainersOptions {
        all: true,
        filters: Some(filters),
        ..Default::default()
    };
    let Some(here) = Here::detect() else {
        return Vec::new();
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
        if !stale(&owner, &here, alive) {
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
    let Some(here) = Here::detect() else {
        return notes;
    };
    let Ok(entries) = std::fs::read_dir(base) else {
        return notes;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        // A stage being made has no owner file yet: never stale.
        let owner = std::fs::read_to_string(dir.join(OWNER_FILE)).unwrap_or_default();
        if !stale(&owner, &here, alive) {
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
