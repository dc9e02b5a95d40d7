//! What crosses the pipes between the caller, the helper and the sandbox's init.
//!
//! Caller -> helper: one [`HelperRequest`] as JSON on fd [`FD_REQUEST`], then EOF.
//! Caller -> helper: control bytes on fd [`FD_CONTROL`]; EOF means the caller is
//! gone and everything must die.
//! Helper -> caller: one [`HelperReport`] as JSON on fd [`FD_REPORT`], then EOF.
//! Init -> helper: [`InitMsg`] lines of JSON.

use crate::{FileChange, KillReason, SandboxSpec, Violation};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The hidden first argument that turns the airlock binary into the helper.
pub const HELPER_ARG: &str = "__sandbox-helper";

pub const FD_REQUEST: i32 = 3;
pub const FD_REPORT: i32 = 4;
pub const FD_CONTROL: i32 = 5;

/// Control byte: the output cap was exceeded; kill with reason `output`.
pub const CONTROL_KILL_OUTPUT: u8 = b'o';
/// Control byte: the command may start (only with [`HelperRequest::gated`]).
pub const CONTROL_GO: u8 = b'g';

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HelperRequest {
    pub spec: SandboxSpec,
    /// Directory holding one subdirectory per run (upper layers, lock files).
    pub runs_dir: PathBuf,
    /// Rootless mode only: the caller's private runtime directory for airlock
    /// (`$XDG_RUNTIME_DIR/airlock`, else beside the runs directory), which
    /// holds the shared mount points instead of `/run/airlock/mnt`.
    #[serde(default)]
    pub runtime_dir: Option<PathBuf>,
    /// The command starts only after [`CONTROL_GO`] arrives on the control
    /// pipe (the caller's audit record is durable by then); the sandbox is
    /// built meanwhile.
    #[serde(default)]
    pub gated: bool,
}

/// A layer that failed, by name, with the kernel's words.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LayerFailure {
    pub layer: String,
    pub detail: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HelperReport {
    /// Set when the sandbox could not be built: nothing ran.
    pub failure: Option<LayerFailure>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub killed_by: Option<KillReason>,
    pub duration_ms: u64,
    pub cpu_ms: u64,
    pub peak_memory_bytes: u64,
    pub changes: Vec<FileChange>,
    pub applied: bool,
    pub violations: Vec<Violation>,
    #[serde(default)]
    pub change_summary: Option<crate::ChangeSummary>,
    /// Setup time from helper start to the command's exec, for profiling.
    pub setup_us: u64,
    /// Microseconds since helper start at each step, for profiling the setup path.
    #[serde(default)]
    pub timings: Vec<(String, u64)>,
    /// Non-fatal notes for the caller (cleanup trouble, skipped paths).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum InitMsg {
    /// The command was exec'd.
    Started {
        /// Microseconds since helper start at each of init's setup steps, for
        /// profiling (`AIRLOCK_PROFILE=1`).
        #[serde(default)]
        timings: Vec<(String, u64)>,
    },
    /// Building the sandbox failed; nothing ran.
    Failed { layer: String, detail: String },
    /// The command ended (all other processes were killed after it).
    Exited {
        code: Option<i32>,
        signal: Option<i32>,
        /// What PID 1 saw and refused (netwatch in proxy mode).
        #[serde(default)]
        violations: Vec<Violation>,
    },
}
