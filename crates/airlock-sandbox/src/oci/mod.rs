//! The OCI and gVisor backends: the sandbox's view ([`crate::view`])
//! translated into an OCI bundle ([`bundle`]) and run by an OCI runtime —
//! crun, runc or youki for `backend = "oci"`, gVisor's `runsc` for
//! `backend = "gvisor"`.
//!
//! Process model, as for the other backends: the caller ([`backend`]) never
//! runs the runtime itself. It starts a helper (this binary re-executed,
//! [`helper`]) that, in a private mount namespace, prepares the workspace with
//! the native backend's layout (an idmapped lower layer and a size-capped
//! upper layer the change report is read from), writes the bundle, starts the
//! runtime inside the run's own cgroup (airlock's cgroup code holds the
//! memory, pids and CPU limits, as under the native backend), watches the
//! wall clock, the cgroup and the caller, and always kills and deletes the
//! container before it reports.
//!
//! The gvisor backend also runs for an ordinary user ([`Privilege::Rootless`]):
//! the helper then enters a user namespace of its own mapping the caller to
//! root, binds plainly where root mode idmaps, and starts `runsc --rootless`;
//! without a cgroup it reaps runsc's processes itself (a child subreaper) and
//! samples their CPU time (docs/tiers.md, "gVisor without root").

pub mod backend;
pub mod bundle;
pub mod caps;
pub mod helper;
pub mod owner;
pub mod runtime;

pub use backend::OciBackend;
pub use runtime::Runtime;

use crate::Layer;
use crate::{KillReason, SandboxError, SandboxSpec, Violation};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What the caller hands the helper (on its stdin).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub spec: SandboxSpec,
    pub runs_dir: PathBuf,
    pub runtime: Runtime,
    /// The runtime's executable.
    pub runtime_exe: PathBuf,
    /// gVisor in network allowlist mode: the in-sandbox relay binary
    /// ([`crate::relay::relay_binary`], found by the caller, whose
    /// environment and executable the helper does not share).
    #[serde(default)]
    pub relay: Option<PathBuf>,
    /// Whether the helper runs with host root or for an ordinary user.
    #[serde(default)]
    pub privilege: Privilege,
}

/// How the helper holds the sandbox together.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Privilege {
    /// As host root: idmapped mounts (sandbox root is host uid 2000000000), the
    /// stage under [`helper::STAGE_BASE`], a cgroup of the run's own.
    #[default]
    Root,
    /// gVisor run by an ordinary user: the helper enters a user namespace of
    /// its own that maps the caller (and nothing else) to root, binds plainly
    /// (sandbox root is the caller, files keep their ownership), keeps the
    /// overlay's marks in `user.*` xattrs, stages under `stage_base` (in the
    /// caller's runtime directory) and starts `runsc --rootless`; limits come
    /// from a delegated cgroup v2 subtree or, accepted as best effort, from
    /// rlimits the Sentry applies.
    Rootless { stage_base: PathBuf },
}

impl Privilege {
    pub fn is_rootless(&self) -> bool {
        matches!(self, Privilege::Rootless { .. })
    }
}

/// What the helper reports to the caller (fd 3).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HelperReport {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub killed_by: Option<KillReason>,
    pub duration_ms: u64,
    pub cpu_ms: u64,
    pub peak_memory_bytes: u64,
    pub changes: Vec<crate::FileChange>,
    pub applied: bool,
    pub violations: Vec<Violation>,
    #[serde(default)]
    pub change_summary: Option<crate::ChangeSummary>,
    /// Notes for the operator (what the runtime said on teardown).
    #[serde(default)]
    pub notes: Vec<String>,
    /// The layer that could not be built, and why.
    pub failure: Option<(Layer, String)>,
}

impl HelperReport {
    pub(crate) fn failed(layer: Layer, detail: String) -> HelperReport {
        HelperReport {
            failure: Some((layer, detail)),
            ..Default::default()
        }
    }

    fn from_error(e: SandboxError) -> HelperReport {
        HelperReport::from_error_of(e, Layer::Oci)
    }

    /// The report of a helper of `backend` that failed with `e`.
    pub(crate) fn from_error_of(e: SandboxError, backend: Layer) -> HelperReport {
        HelperReport {
            failure: Some(crate::failure::report(e, backend)),
            ..Default::default()
        }
    }
}

/// Runs the OCI helper and never returns if this process was started as one;
/// otherwise returns at once. Binaries that embed the backend call this first.
pub fn maybe_run_helper() {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == helper::HELPER_ARG)
    {
        helper::helper_main();
    }
}
