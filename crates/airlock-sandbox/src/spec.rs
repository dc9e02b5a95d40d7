//! `SandboxSpec`: everything a backend needs to build one sandbox.
//!
//! It is derived from the policy alone (plus the already-judged argv), never from
//! the agent's free text, and it is plain data so that it can cross the pipe to the
//! re-executed helper as JSON.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SandboxSpec {
    /// Correlates helper, cgroup, temp dirs and audit records.
    pub request_id: String,
    /// Program and arguments. argv[0] is looked up in the sandbox's PATH if it has no '/'.
    pub argv: Vec<String>,
    /// Absolute working directory (inside the workspace, at its real host path).
    pub cwd: PathBuf,
    /// The complete environment of the command; nothing else is inherited.
    pub env: Vec<(String, String)>,
    pub workspace: WorkspaceSpec,
    pub network: NetworkSpec,
    pub limits: Limits,
    /// Extra host paths visible read-only.
    pub read_paths: Vec<PathBuf>,
    /// Extra host paths visible read-write.
    pub write_paths: Vec<PathBuf>,
    /// Paths masked (empty dir / `/dev/null`) even under a visible tree.
    pub hide_paths: Vec<PathBuf>,
    /// Bytes fed to the command's stdin; `None` means `/dev/null`.
    #[serde(default)]
    pub stdin: Option<Vec<u8>>,
    /// What may stand in for a cgroup (the policy's `[limits] enforcement`).
    #[serde(default)]
    pub limit_enforcement: LimitEnforcement,
    /// The text of the run's global git configuration, shown read-only at
    /// [`GIT_CONFIG_FILE`] (the environment's `GIT_CONFIG_GLOBAL`).
    #[serde(default)]
    pub git_config: String,
}

/// Whether the memory, CPU and process limits need a cgroup.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitEnforcement {
    /// A cgroup enforces them, or the run is refused.
    #[default]
    Cgroup,
    /// Without a cgroup this user may manage (rootless mode on cgroup v1, or
    /// v2 without delegation), rlimits and the wall-clock timeout stand in.
    BestEffort,
}

/// The run's home directory: an empty tmpfs of its own for every run (not
/// `/tmp`, and never shared with another run), capped by `limits.tmp`.
pub const SANDBOX_HOME: &str = "/home/airlock";

/// The run's global git configuration file, written from
/// [`SandboxSpec::git_config`] into the read-only root: nothing inside can
/// change it, and `GIT_CONFIG_GLOBAL` naming it makes git ignore
/// `~/.gitconfig` and `$XDG_CONFIG_HOME/git/config`.
pub const GIT_CONFIG_FILE: &str = "/etc/airlock/gitconfig";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceSpec {
    /// Absolute host path; it appears at the same path inside.
    pub root: PathBuf,
    pub mode: WorkspaceMode,
    /// Paths relative to root that stay read-only (rw mode) and are never applied back.
    pub protect: Vec<PathBuf>,
    /// Copy overlay changes back to the workspace after the run.
    pub apply: bool,
    /// The change-set policy every change passes before it reaches the host.
    #[serde(default)]
    pub changes: airlock_policy::ChangesPolicy,
    /// Absolute paths airlock owns (the active policy file, the state
    /// directory, a tokens file): never written back, whatever the policy says.
    #[serde(default)]
    pub owned: Vec<PathBuf>,
    /// Where to keep the change set when it is not (fully) applied, so that a
    /// person can review it (`airlock changes RUN_ID`) and apply it later
    /// (`airlock apply RUN_ID`) without running the command again. The
    /// directory must not exist yet; `None`: the change set ends with the run.
    #[serde(default)]
    pub keep: Option<PathBuf>,
    /// Where to write the full list of a change set of more than
    /// [`crate::workspace::AUDIT_LISTED`] changes, one line per change (the
    /// lines `change_summary.sha256` covers), for the audit trail, whose
    /// records list only the first ones. Written and synced before the
    /// return path reports; `None`: not written.
    #[serde(default)]
    pub list: Option<PathBuf>,
    /// The home directory (`$HOME`) of the user airlock acts for: the
    /// change-set rules hold more of a workspace that is that directory
    /// (its `bin/`, on the login PATH). `None`: not known, not held.
    #[serde(default)]
    pub home: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceMode {
    Overlay,
    Ro,
    Rw,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum NetworkSpec {
    /// Empty network namespace: loopback only; sockets limited to AF_UNIX.
    None,
    /// Empty network namespace plus a relay to the host egress proxy's unix socket.
    Proxy {
        /// Host path of this execution's proxy socket, bound into the sandbox.
        socket: PathBuf,
    },
    /// The host network (no network namespace). Only when the policy says `open`.
    Open,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub timeout_ms: u64,
    pub cpu_time_ms: u64,
    pub memory_bytes: u64,
    pub pids: u32,
    pub cpus: f64,
    pub output_bytes: u64,
    pub tmp_bytes: u64,
    pub file_size_bytes: u64,
    pub open_files: u32,
}
