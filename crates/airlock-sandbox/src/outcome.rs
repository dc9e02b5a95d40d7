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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KillReason {
    Timeout,
    Memory,
    Pids,
    Output,
    CpuTime,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileChange {
    /// Absolute host path.
    pub path: String,
    pub kind: ChangeKind,
    /// `file`, `dir`, `symlink` or `other`.
    pub file_type: String,
    pub size: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// Something the sandbox refused and saw: a blocked connection, a denied syscall,
/// a write to a protected path during apply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    /// `network`, `syscall`, `filesystem`, …
    pub kind: String,
    /// One line for a model: "blocked: connect to 93.184.216.34:443 (not via proxy)".
    pub detail: String,
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub data: serde_json::Value,
}
