//! The one backend factory: every interface (the CLI's `run`, `serve`, `mcp`,
//! `changes`/`apply`) opens its backend here, by kind.
//!
//! A backend that is not built into this binary, or whose runtime is missing
//! on this host, is an error naming it with a hint (install what it needs, or
//! choose another backend): never a silent fallback to another tier.
//!
//! Adding a backend: its module, one arm in [`open`], one in [`probe`].

use crate::probe::Probe;
use crate::Layer;
use crate::{Backend, BackendKind, SandboxError};
use std::path::PathBuf;

/// Overrides where precompiled wasm modules are kept.
pub const WASM_CACHE_ENV: &str = "AIRLOCK_WASM_CACHE";

/// How to open a backend. Built with [`OpenOptions::new`], which reads the
/// environment's runtime selection once, so every backend opened from the
/// same options sees the same choice.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// airlock's state directory: per-run directories live under `runs/`,
    /// caches (precompiled wasm modules) beside it.
    pub state_dir: PathBuf,
    /// Stream this process's own stdin to the command when a spec brings no
    /// bytes of its own (`airlock run` with piped input). Servers leave it off.
    pub stdin_from_caller: bool,
    /// Native backend: the run's helper is forked in advance, instead of the
    /// airlock binary re-executed when the run starts (native::prefork): the
    /// one `native::prefork::fork_early` made, else one forked when the
    /// backend opens. For a one-shot caller that is still single-threaded
    /// (`airlock run`); where it is not, this does nothing.
    pub prefork_helper: bool,
    /// Native backend: helpers are forked by one long-lived forker process
    /// (native::forker) instead of spawned per run. For a multi-threaded,
    /// long-lived caller (`airlock serve`, `airlock mcp`); the forker starts
    /// with the first run.
    pub fork_helpers: bool,
    /// The OCI runtime `backend = "oci"` must use (crun, runc, youki); `None`
    /// takes the first installed. From [`crate::oci::runtime::RUNTIME_ENV`].
    pub oci_runtime: Option<String>,
    /// Where precompiled wasm modules are kept; `None` is `state_dir/wasm-cache`.
    /// From [`WASM_CACHE_ENV`].
    pub wasm_cache: Option<PathBuf>,
}

impl OpenOptions {
    pub fn new(state_dir: PathBuf) -> OpenOptions {
        let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        OpenOptions {
            state_dir,
            stdin_from_caller: false,
            prefork_helper: false,
            fork_helpers: false,
            oci_runtime: env(crate::oci::runtime::RUNTIME_ENV)
                .map(|v| v.to_string_lossy().into_owned()),
            wasm_cache: env(WASM_CACHE_ENV).map(PathBuf::from),
        }
    }

    pub fn runs_dir(&self) -> PathBuf {
        self.state_dir.join("runs")
    }
}

/// The backend of `kind`, ready to run specs.
pub fn open(kind: BackendKind, opts: &OpenOptions) -> Result<Box<dyn Backend>, SandboxError> {
    let unavailable = |detail: String| SandboxError::Layer {
        layer: Layer::Backend,
        detail,
    };
    if !kind.built() {
        return Err(unavailable(kind.not_built_reason()));
    }
    if kind != BackendKind::Native {
        crate::native::prefork::discard_early();
    }
    match kind {
        BackendKind::Native => {
            let mut backend = crate::native::NativeBackend::current_exe()?;
            backend.runs_dir = opts.runs_dir();
            backend.stdin_from_caller = opts.stdin_from_caller;
            if opts.prefork_helper {
                backend.prefork_helper();
            } else if opts.fork_helpers {
                backend.use_forker();
            }
            Ok(Box::new(backend))
        }
        #[cfg(feature = "wasm")]
        BackendKind::Wasm => Ok(Box::new(crate::wasm::WasmBackend::open(opts)?)),
        BackendKind::Oci | BackendKind::Gvisor => {
            Ok(Box::new(crate::oci::OciBackend::open(kind, opts)?))
        }
        #[cfg(feature = "docker")]
        BackendKind::Docker => {
            let mut backend = crate::docker::DockerBackend::current_exe(&opts.state_dir)?;
            backend.stdin_from_caller = opts.stdin_from_caller;
            Ok(Box::new(backend))
        }
        BackendKind::Microvm => Ok(Box::new(crate::microvm::MicrovmBackend::current_exe(
            &opts.state_dir,
        )?)),
        // Reached when a backend's cargo feature (wasm, docker) is off.
        #[allow(unreachable_patterns)]
        other => Err(unavailable(other.not_built_reason())),
    }
}

/// Whether `kind` can run on this host, with what, and what it enforces.
pub fn probe(kind: BackendKind, opts: &OpenOptions) -> Probe {
    if !kind.built() {
        return Probe::unavailable(kind, kind.not_built_reason());
    }
    match kind {
        BackendKind::Native => crate::native::probe(opts),
        #[cfg(feature = "wasm")]
        BackendKind::Wasm => crate::wasm::WasmBackend::probe(),
        BackendKind::Oci | BackendKind::Gvisor => crate::oci::OciBackend::probe(kind, opts),
        #[cfg(feature = "docker")]
        BackendKind::Docker => crate::docker::probe(),
        BackendKind::Microvm => crate::microvm::probe(),
        // Reached when a backend's cargo feature (wasm, docker) is off.
        #[allow(unreachable_patterns)]
        other => Probe::unavailable(other, other.not_built_reason()),
    }
}
