//! The WebAssembly backend: `python3` code (the CPython WASI build) and WASI
//! preview-1 modules run in wasmtime, embedded.
//!
//! Process model, as for the native backend: the caller never runs the guest
//! itself, and does not even link wasmtime (its code and relocations slowed
//! every `airlock` start, whatever the backend). wasmtime lives in
//! `airlock-wasm`, installed beside `airlock`. The caller makes sure the module
//! is precompiled ([`cache`]; `airlock-wasm` compiles a missing one), then
//! starts a helper (`airlock-wasm`, [`helper`]) that builds the view in private
//! namespaces ([`scratch`]) and forks the guest's process ([`guest`]), which
//! walls itself in (rlimits, landlock, no capabilities, seccomp) and runs the
//! module under wasmtime's limits. The helper reads the change report from the
//! overlay's upper layer with the native backend's code, so changes and
//! `--apply` mean the same under both.

#[cfg(feature = "wasm")]
mod backend;
#[cfg(feature = "wasm")]
pub mod cache;
pub mod caps;
#[cfg(feature = "wasm")]
mod engine;
#[cfg(feature = "wasm")]
mod guest;
#[cfg(feature = "wasm")]
pub mod helper;
#[cfg(feature = "wasm")]
mod limits;
#[cfg(feature = "wasm")]
mod output;
pub mod program;
#[cfg(feature = "wasm")]
pub mod runtime;
#[cfg(feature = "wasm")]
mod scratch;

#[cfg(feature = "wasm")]
pub use backend::WasmBackend;

#[cfg(feature = "wasm")]
use crate::{KillReason, Layer, SandboxError, SandboxSpec, Violation};
#[cfg(feature = "wasm")]
use serde::{Deserialize, Serialize};
#[cfg(feature = "wasm")]
use std::path::PathBuf;

/// Runs the wasm helper (or its precompile step) and never returns if this
/// process was started as one; otherwise returns at once. Only the binaries
/// that embed wasmtime call this (`airlock-wasm`, the crate's test helper):
/// `airlock` itself does not link it, and starts faster for it.
pub fn maybe_run_helper() {
    #[cfg(feature = "wasm")]
    match std::env::args_os().nth(1) {
        Some(a) if a == helper::HELPER_ARG => helper::helper_main(),
        Some(a) if a == helper::PRECOMPILE_ARG => helper::precompile_main(),
        _ => {}
    }
}

/// What the caller hands the helper.
#[cfg(feature = "wasm")]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub spec: SandboxSpec,
    pub runs_dir: PathBuf,
    /// The precompiled module to run.
    pub cwasm: PathBuf,
    /// The guest's argv (argv[0] is the program's name inside).
    pub guest_argv: Vec<String>,
}

/// What the guest's process reports to the helper.
#[cfg(feature = "wasm")]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GuestResult {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub killed_by: Option<KillReason>,
    pub cpu_ms: u64,
    pub peak_memory_bytes: u64,
    /// A wasm trap that ended the guest (it crashed).
    pub trap: Option<String>,
}

#[cfg(feature = "wasm")]
impl GuestResult {
    fn killed(reason: KillReason) -> GuestResult {
        GuestResult {
            exit_code: None,
            signal: Some(libc::SIGKILL),
            killed_by: Some(reason),
            cpu_ms: 0,
            peak_memory_bytes: 0,
            trap: None,
        }
    }
}

/// What the helper reports to the caller (fd 3).
#[cfg(feature = "wasm")]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HelperReport {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub killed_by: Option<KillReason>,
    pub duration_ms: u64,
    pub cpu_ms: u64,
    pub peak_memory_bytes: u64,
    pub trap: Option<String>,
    pub changes: Vec<crate::FileChange>,
    pub applied: bool,
    pub violations: Vec<Violation>,
    #[serde(default)]
    pub change_summary: Option<crate::ChangeSummary>,
    /// The layer that could not be built, and why.
    pub failure: Option<(Layer, String)>,
}

#[cfg(feature = "wasm")]
impl HelperReport {
    fn failed(layer: Layer, detail: String) -> HelperReport {
        HelperReport {
            failure: Some((layer, detail)),
            ..Default::default()
        }
    }

    fn from_error(e: SandboxError) -> HelperReport {
        HelperReport {
            failure: Some(crate::failure::report(e, Layer::Wasm)),
            ..Default::default()
        }
    }

    fn into_error(self) -> SandboxError {
        crate::failure::error(self.failure, Layer::Wasm)
    }

    fn ran(g: GuestResult, duration_ms: u64) -> HelperReport {
        HelperReport {
            exit_code: g.exit_code,
            signal: g.signal,
            killed_by: g.killed_by,
            duration_ms,
            cpu_ms: g.cpu_ms,
            peak_memory_bytes: g.peak_memory_bytes,
            trap: g.trap,
            ..Default::default()
        }
    }
}
