//! Backend selection: the policy's `[sandbox] backend`, an interface's request
//! for another one (never a weaker tier than the policy's), the backend
//! factory, and the capability check every run passes before it starts.

use airlock_policy::model::SandboxBackend;
use airlock_policy::{Policy, Request};
use airlock_sandbox::capability::{self, CapabilityReport};
use airlock_sandbox::native::NativeBackend;
use airlock_sandbox::{Backend, BackendKind, Outcome, OutputSink, SandboxError, SandboxSpec};
use std::path::Path;

/// The sandbox crate's name for a policy's backend.
pub fn kind_of(b: SandboxBackend) -> BackendKind {
    match b {
        SandboxBackend::Native => BackendKind::Native,
        SandboxBackend::Gvisor => BackendKind::Gvisor,
        SandboxBackend::Oci => BackendKind::Oci,
        SandboxBackend::Docker => BackendKind::Docker,
        SandboxBackend::Microvm => BackendKind::Microvm,
        SandboxBackend::Wasm => BackendKind::Wasm,
    }
}

/// Why a requested backend was refused.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    #[error(
        "backend `{asked}` ({asked_tier}) is a weaker tier than this policy's backend `{policy_backend}` \
         ({policy_tier}, set in {origin}): refused. Hint: run on `{policy_backend}` or a stronger tier \
         (the ladder: native, oci, docker < gvisor, wasm < microvm), or have a person change \
         `[sandbox] backend` in the policy"
    )]
    Looser {
        asked: BackendKind,
        asked_tier: &'static str,
        policy_backend: BackendKind,
        policy_tier: &'static str,
        origin: String,
    },
    #[error("unknown backend `{0}`; expected one of: native, gvisor, oci, docker, microvm, wasm")]
    Unknown(String),
}

/// Parses a backend name as given on a command line.
pub fn parse(name: &str) -> Result<BackendKind, SelectError> {
    BackendKind::parse(name).ok_or_else(|| SelectError::Unknown(name.to_string()))
}

/// The backend a run uses: the policy's, or `asked` when that is not a weaker tier.
pub fn choose(policy: &Policy, asked: Option<BackendKind>) -> Result<BackendKind, SelectError> {
    let policy_backend = kind_of(policy.sandbox.backend);
    match asked {
        None => Ok(policy_backend),
        Some(asked) if asked.is_looser_than(policy_backend) => Err(SelectError::Looser {
            asked,
            asked_tier: asked.tier().as_str(),
            policy_backend,
            policy_tier: policy_backend.tier().as_str(),
            origin: policy.source.clone(),
        }),
        Some(asked) => Ok(asked),
    }
}

/// Whether `kind` can run on this host at all (its own probe; the native
/// backend's layers are checked in full by `airlock doctor`).
pub fn available(kind: BackendKind) -> Result<String, String> {
    if !kind.built() {
        return Err(kind.not_built_reason());
    }
    match kind {
        BackendKind::Native => Ok(
            "namespaces, seccomp, landlock, cgroups (each layer checked by `airlock doctor`)"
                .into(),
        ),
        #[cfg(feature = "wasm")]
        BackendKind::Wasm => airlock_sandbox::wasm::WasmBackend::probe(),
        BackendKind::Oci | BackendKind::Gvisor => airlock_sandbox::oci::OciBackend::probe(kind),
        other => Err(other.not_built_reason()),
    }
}

/// The one backend factory: what the CLI, `serve` and `mcp` run on.
pub fn open(kind: BackendKind, state_dir: &Path) -> Result<Box<dyn Backend>, SandboxError> {
    if !kind.built() {
        return Err(SandboxError::Layer {
            layer: "backend",
            detail: kind.not_built_reason(),
        });
    }
    match kind {
        BackendKind::Native => {
            let mut backend = NativeBackend::current_exe()?;
            backend.runs_dir = state_dir.join("runs");
            Ok(Box::new(backend))
        }
        #[cfg(feature = "wasm")]
        BackendKind::Wasm => Ok(Box::new(airlock_sandbox::wasm::WasmBackend::current_exe(
            state_dir,
        )?)),
        BackendKind::Oci | BackendKind::Gvisor => Ok(Box::new(
            airlock_sandbox::oci::OciBackend::current_exe(kind, state_dir)?,
        )),
        other => Err(SandboxError::Layer {
            layer: "backend",
            detail: other.not_built_reason(),
        }),
    }
}

/// The capability report of `kind` for what `request` would run under `policy`.
pub fn report(policy: &Policy, request: &Request, kind: BackendKind) -> CapabilityReport {
    let spec = crate::spec::derive(policy, request, "capability-report");
    capability::report(kind, &spec, available(kind))
}

/// Runs `spec` on `backend` if the backend is not a weaker tier than the
/// policy's and enforces every boundary the spec sets; otherwise refuses,
/// naming what would allow the run.
pub fn check_then_run(
    policy: &Policy,
    backend: &dyn Backend,
    spec: &SandboxSpec,
    sink: &mut dyn OutputSink,
    gate: &mut dyn FnMut() -> Result<(), SandboxError>,
) -> Result<Outcome, SandboxError> {
    if let Some(kind) = BackendKind::parse(backend.name()) {
        // An engine opened on one backend (serve, mcp) never runs a policy
        // that asks for a stronger one.
        choose(policy, Some(kind)).map_err(|e| SandboxError::Layer {
            layer: "backend",
            detail: e.to_string(),
        })?;
        // The backend's own run reports a host that lacks it; here only what
        // it cannot enforce by design is checked.
        let report = capability::report(kind, spec, Ok(String::new()));
        if let Some(why) = report.refusal() {
            return Err(SandboxError::Layer {
                layer: "capability",
                detail: why,
            });
        }
    }
    backend.run_gated(spec, sink, gate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_weaker_tier_than_the_policy_is_refused_with_a_hint() {
        let mut policy = airlock_policy::load::builtin_default(Path::new("/tmp"));
        policy.sandbox.backend = SandboxBackend::Wasm;
        let e = choose(&policy, Some(BackendKind::Native))
            .unwrap_err()
            .to_string();
        assert!(e.contains("weaker tier") && e.contains("Hint:"), "{e}");
        assert_eq!(
            choose(&policy, Some(BackendKind::Microvm)).unwrap(),
            BackendKind::Microvm
        );
        assert_eq!(choose(&policy, None).unwrap(), BackendKind::Wasm);
        policy.sandbox.backend = SandboxBackend::Native;
        assert_eq!(
            choose(&policy, Some(BackendKind::Wasm)).unwrap(),
            BackendKind::Wasm
        );
    }
}
