//! The microVM backend (`backend = "microvm"`): every run boots its own guest
//! kernel under QEMU's `microvm` machine, KVM where it works and software
//! emulation (TCG) where it does not, and destroys the VM afterwards.
//!
//! Process model, as for the OCI backend: the caller ([`backend`]) starts a
//! helper (this binary re-executed, [`helper`]) that, in a private mount
//! namespace, stages the workspace with the OCI backend's code (the native
//! layout: an idmapped lower layer and a size-capped upper layer the change
//! report is read from), writes the run's control files ([`control`]), starts
//! QEMU as the unprivileged sandbox uid under QEMU's own seccomp filter
//! ([`guest`]), watches the boot, the wall clock and the caller, kills QEMU by
//! PID on every path, reads the guest's result, reports and applies the
//! workspace's changes, and removes everything it staged.
//!
//! Inside, the guest's init (scripts/microvm/init, in the initramfs that
//! scripts/setup-microvm builds from Debian's packages) applies the limits
//! with the guest's own cgroup v2 and rlimits and runs the command as a
//! non-root user. The guest has no network device at all; in network
//! allowlist mode its only way out is the egress relay (the
//! `airlock-relay` crate): a listener in the guest whose connections travel
//! over one virtio-serial port to the helper, which hands each to the host's
//! egress proxy.

pub mod backend;
pub mod caps;
pub mod control;
pub mod guest;
pub mod helper;

pub use backend::{probe, MicrovmBackend};

use crate::Layer;
use crate::{ChangeSummary, FileChange, KillReason, SandboxError, SandboxSpec, Violation};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What the caller hands the helper (one JSON line on its stdin, which then
/// stays open as the caller's lifeline).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub spec: SandboxSpec,
    pub runs_dir: PathBuf,
    pub image: guest::Image,
}

/// What the helper reports to the caller (JSON on its stdout).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HelperReport {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub killed_by: Option<KillReason>,
    /// The command's own wall time, measured by the guest.
    pub duration_ms: u64,
    pub cpu_ms: u64,
    pub peak_memory_bytes: u64,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub changes: Vec<FileChange>,
    pub applied: bool,
    pub violations: Vec<Violation>,
    #[serde(default)]
    pub change_summary: Option<ChangeSummary>,
    /// QEMU's start to its exit, and the guest kernel's boot to init.
    pub vm_ms: u64,
    pub boot_ms: Option<u64>,
    /// Notes for the operator (accelerator, retried boots, teardown).
    #[serde(default)]
    pub notes: Vec<String>,
    /// The layer that could not be built, and why.
    pub failure: Option<(Layer, String)>,
}

impl HelperReport {
    fn failed(layer: Layer, detail: String) -> HelperReport {
        HelperReport {
            failure: Some((layer, detail)),
            ..Default::default()
        }
    }

    fn from_error(e: SandboxError) -> HelperReport {
        HelperReport {
            failure: Some(crate::failure::report(e, Layer::Microvm)),
            ..Default::default()
        }
    }

    fn into_error(self) -> SandboxError {
        crate::failure::error(self.failure, Layer::Microvm)
    }
}

/// Runs the microVM helper and never returns if this process was started as
/// one; otherwise returns at once. Binaries that embed the backend call this
/// first.
pub fn maybe_run_helper() {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == helper::HELPER_ARG)
    {
        helper::helper_main();
    }
}
