//! The validated, in-memory form of a policy file (DESIGN.md §3).
//!
//! These field names mirror the TOML keys, which are a contract: other tools and
//! tests write policies in that form. Add fields freely; do not rename.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A whole execution policy, after validation. Build one with the loader, never by
/// hand outside tests: the loader checks what the types cannot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    pub workspace: WorkspacePolicy,
    pub network: NetworkPolicy,
    pub commands: CommandsPolicy,
    pub limits: Limits,
    pub env: EnvPolicy,
    pub filesystem: FilesystemPolicy,
    /// `[toolchains] use`: presets that make a language's tools work inside
    /// (what each exposes is worked out on the host by `airlock-core`).
    #[serde(default)]
    pub toolchains: Vec<Toolchain>,
    /// Which isolation backend runs what the gate allows (`[sandbox]`).
    #[serde(default)]
    pub sandbox: SandboxPolicy,
    /// `[changes]`: what may flow back from a run to the host workspace.
    #[serde(default)]
    pub changes: crate::changes::ChangesPolicy,
    /// `[knowledge]`: the policy's additions to the program knowledge base
    /// (`programs.toml`); its entries win over built-in ones of the same name.
    #[serde(default)]
    pub knowledge: crate::knowledge::Extension,
    /// SHA-256 (hex) of the policy's source text, or of the built-in default.
    /// Approvals and audit records are tied to it.
    pub sha256: String,
    /// Where the policy came from (`<built-in default>` or a file path), for messages.
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspacePolicy {
    /// Absolute, resolved workspace root.
    pub root: PathBuf,
    pub mode: WorkspaceMode,
    /// Paths (relative to root) that stay read-only in `rw` mode and are never
    /// written back from an overlay.
    pub protect: Vec<PathBuf>,
    /// `auto` copies overlay changes back after a run; `manual` only reports them.
    pub apply: ApplyMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceMode {
    Overlay,
    Ro,
    Rw,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApplyMode {
    Manual,
    Auto,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkPolicy {
    pub mode: NetworkMode,
    /// Host patterns: exact hosts or `*.suffix`, each optionally `:port`.
    pub allow: Vec<String>,
    /// Host patterns that win over `allow`.
    pub deny: Vec<String>,
    /// Extra programs that touch the network, added to the built-in list.
    pub programs: Vec<String>,
    /// Extra argv prefixes (program + subcommand) that touch the network.
    pub subcommands: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkMode {
    None,
    Allowlist,
    Open,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandsPolicy {
    /// Every rule, from the plain lists and from `[[rule]]` tables, in file order.
    pub rules: Vec<Rule>,
    /// What an unanalysable construct gets: `Deny` or `ApprovalRequired`, never `Allow`.
    pub on_unknown: crate::Verdict,
    /// Commands longer than this many bytes are denied as "too long".
    pub max_command_bytes: usize,
}

/// One argv-prefix rule. `prefix[i]` lists the alternatives accepted at position i
/// (a plain `"git status"` becomes `[["git"], ["status"]]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// Stable name used in decisions: `commands.allow[3]` or `rule[2]` (or an explicit `name`).
    pub name: String,
    pub prefix: Vec<Vec<String>>,
    pub decision: crate::Verdict,
    pub reason: Option<String>,
}

/// A size in bytes.
pub type Bytes = u64;

/// A duration, kept in milliseconds so that it serialises plainly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Duration {
    pub ms: u64,
}

impl Duration {
    pub fn as_std(self) -> std::time::Duration {
        std::time::Duration::from_millis(self.ms)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Wall-clock limit for the whole run.
    pub timeout: Duration,
    /// CPU-time limit (RLIMIT_CPU and cgroup accounting); defaults to the timeout.
    pub cpu_time: Duration,
    pub memory: Bytes,
    pub pids: u32,
    /// CPU bandwidth, in CPUs (1.5 = one and a half cores).
    pub cpus: f64,
    /// Cap on captured stdout and on captured stderr, each.
    pub output: Bytes,
    /// Size of the `/tmp` tmpfs.
    pub tmp: Bytes,
    /// RLIMIT_FSIZE: the largest file the command may write.
    pub file_size: Bytes,
    /// RLIMIT_NOFILE.
    pub open_files: u32,
    /// What may enforce the memory, CPU and process limits. `cgroup` (the
    /// default) refuses a run on a host where no cgroup is available to this
    /// user (rootless mode without a delegated cgroup v2 subtree);
    /// `best_effort` accepts rlimits instead, each named in the capability report.
    #[serde(default)]
    pub enforcement: LimitEnforcement,
}

/// `[limits] enforcement`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitEnforcement {
    /// Limits are enforced by a cgroup, or the run is refused.
    #[default]
    Cgroup,
    /// Without a usable cgroup, per-process rlimits and the wall-clock timeout
    /// stand in, as `airlock doctor` and the capability report say.
    BestEffort,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvPolicy {
    /// Names or globs copied from the caller's environment; everything else is dropped.
    pub pass: Vec<String>,
    /// Variables set inside, in order.
    pub set: Vec<(String, String)>,
    /// Git configuration (`section.name` or `section.subsection.name` → value)
    /// written to the run's read-only global git config file, the only git
    /// configuration besides the repository's own (docs/sandbox.md, "Home and git").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub git_config: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilesystemPolicy {
    /// Extra absolute host paths visible read-only.
    pub read: Vec<PathBuf>,
    /// Extra absolute host paths visible read-write.
    pub write: Vec<PathBuf>,
    /// Paths masked even under a visible tree.
    pub hide: Vec<PathBuf>,
}

/// A toolchain preset named in `[toolchains] use`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Toolchain {
    Python,
    Node,
    Rust,
    Go,
}

impl Toolchain {
    pub const ALL: [Toolchain; 4] = [
        Toolchain::Python,
        Toolchain::Node,
        Toolchain::Rust,
        Toolchain::Go,
    ];

    /// The word `[toolchains] use` writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Toolchain::Python => "python",
            Toolchain::Node => "node",
            Toolchain::Rust => "rust",
            Toolchain::Go => "go",
        }
    }
}

/// `[sandbox]`: which backend runs the policy's commands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    pub backend: SandboxBackend,
}

/// The backends a policy can name (the sandbox crate's `BackendKind`, which
/// this pure crate cannot depend on; airlock-core maps one onto the other).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxBackend {
    #[default]
    Native,
    Gvisor,
    Oci,
    Docker,
    Microvm,
    Wasm,
}

impl SandboxBackend {
    pub const ALL: [(&'static str, SandboxBackend); 6] = [
        ("native", SandboxBackend::Native),
        ("gvisor", SandboxBackend::Gvisor),
        ("oci", SandboxBackend::Oci),
        ("docker", SandboxBackend::Docker),
        ("microvm", SandboxBackend::Microvm),
        ("wasm", SandboxBackend::Wasm),
    ];

    pub fn as_str(self) -> &'static str {
        SandboxBackend::ALL
            .iter()
            .find(|(_, b)| *b == self)
            .map(|(n, _)| *n)
            .unwrap_or("native")
    }
}
