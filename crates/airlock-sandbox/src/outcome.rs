//! `Outcome`: what happened inside one sandbox.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The command's exit status, when it exited by itself.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    pub killed_by: Option<KillReason>,
    pub duration_ms: u64,
    pub cpu_ms: u64,
    pub peak_memory_bytes: u64,
    /// Captured stdout (lossy UTF-8), cut at the output limit with a marker.
    pub stdout: String,
    pub stderr: String,
    /// True when stdout or stderr was cut.
    pub truncated: bool,
    /// Workspace files added, modified or deleted (overlay and rw modes).
    pub changes: Vec<FileChange>,
    /// Whether `changes` were copied back to the workspace.
    #[serde(default)]
    pub applied: bool,
    pub violations: Vec<Violation>,
    /// Counts and a digest of the whole change set (`changes` holds only the
    /// first entries of a long one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_summary: Option<ChangeSummary>,
    /// What the caller's own stdin streamed into the command (`airlock run`
    /// with a pipe or a file on stdin), as of the command's end; `None` when
    /// the stdin came with the spec, or there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin_streamed: Option<crate::stdin_tap::StreamedStdin>,
}

/// A bounded account of a change set, whatever its length.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeSummary {
    /// Every change found, discarded ones included.
    pub total: u64,
    pub added: u64,
    pub modified: u64,
    pub deleted: u64,
    /// Dropped by `[changes] discard` (caches).
    pub discarded: u64,
    /// Refused by the change-set policy: never applied.
    pub denied: u64,
    /// Waiting for a person (`approval_required`): not applied.
    pub held: u64,
    /// Entries (files, dirs, links) and bytes of file data an apply would write.
    pub write_entries: u64,
    pub write_bytes: u64,
    /// Bytes actually written to the host by the apply (holes are not written).
    pub applied_bytes: u64,
    /// Entries listed in `changes` (the first ones, in path order).
    pub listed: u64,
    /// SHA-256 (hex) of the full list, one line per change:
    /// `kind disposition type mode escaped-path [-> escaped-target]`.
    pub sha256: String,
    /// The change set was not (fully) applied and is kept for a later
    /// `airlock changes RUN_ID` / `airlock apply RUN_ID`.
    #[serde(default)]
    pub kept: bool,
}

impl ChangeSummary {
    /// Changes the change-set policy lets through: all but the discarded and
    /// the denied (what an apply writes, held ones included once approved).
    pub fn allowed(&self) -> u64 {
        self.total
            .saturating_sub(self.discarded)
            .saturating_sub(self.denied)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KillReason {
    Timeout,
    Memory,
    Pids,
    Output,
    CpuTime,
    /// Its caller stopped waiting for it (a server's client went away).
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileChange {
    /// Absolute host path, escaped losslessly (`airlock_policy::changes::escape_path`:
    /// bytes that are not UTF-8 and control characters as `\xNN`, `\` doubled).
    pub path: String,
    pub kind: ChangeKind,
    /// `file`, `dir`, `symlink`, `fifo`, `socket`, `char_device` or `block_device`.
    pub file_type: airlock_policy::changes::EntryType,
    pub size: u64,
    /// Permission bits as applied (after normalisation), e.g. `0644`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// A symlink's target, escaped like `path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The type of the host entry this change puts another type in place of
    /// (a file where a directory was: the directory and everything below it
    /// go), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<airlock_policy::changes::EntryType>,
    /// What the change-set policy said: `allow`, `approval_required` or `deny`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disposition: Option<airlock_policy::changes::Disposition>,
    /// Why, for anything but `allow`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// Something the sandbox refused and saw: a blocked connection, a write to a
/// protected path during apply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    pub kind: ViolationKind,
    /// One line for a model: "blocked: connect to 93.184.216.34:443 (not via proxy)".
    pub detail: String,
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub data: serde_json::Value,
}

/// What a [`Violation`] is about; the names are the audit log's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViolationKind {
    /// A connection refused, by netwatch or by the egress proxy.
    Network,
    /// A connection the egress proxy let through, listed for the record.
    NetworkConnection,
    /// A workspace change refused or not kept.
    Filesystem,
}

impl ViolationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ViolationKind::Network => "network",
            ViolationKind::NetworkConnection => "network_connection",
            ViolationKind::Filesystem => "filesystem",
        }
    }
}
