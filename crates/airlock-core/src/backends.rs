//! Backend selection: the policy's `[sandbox] backend`, an interface's request
//! for another one (never a weaker tier than the policy's), the backend
//! factory, and the capability check every run passes before it starts.

use airlock_policy::model::SandboxBackend;
use airlock_policy::{Policy, Request};
use airlock_sandbox::capability::{self, CapabilityReport};
use airlock_sandbox::{
    Backend, BackendKind, OpenOptions, Outcome, OutputSink, SandboxError, SandboxSpec,
};
use std::collections::HashMap;
#[cfg(test)]
use std::path::Path;
use std::sync::{Arc, Mutex};

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

/// Whether `kind` can run on this host at all (its own probe). The native
/// backend's layers are built for real only by `airlock doctor`, which is too
/// slow for every `policy explain`; here it is taken as available.
pub fn available(kind: BackendKind) -> Result<String, String> {
    if !kind.built() {
        return Err(kind.not_built_reason());
    }
    if kind == BackendKind::Native {
        return Ok(
            "namespaces, seccomp, landlock, cgroups (each layer checked by `airlock doctor`)"
                .into(),
        );
    }
    let opts = OpenOptions::new(crate::resolve_state_dir().unwrap_or_default());
    airlock_sandbox::probe(kind, &opts).into_result()
}

/// Where an engine's runs get their backend.
pub enum Backends {
    /// One backend, chosen before the engine opened (`airlock run`: the
    /// policy's, or `--backend` when that is not a weaker tier). A policy
    /// asking for a stronger tier than it is refused.
    Fixed(Arc<dyn Backend>),
    /// Each run on the backend its own policy names (`serve`, `mcp`: tenants'
    /// policies may name different ones), opened by the factory on first use
    /// and kept. A backend that cannot be opened fails that run, naming why.
    PerPolicy {
        opts: OpenOptions,
        opened: Mutex<HashMap<BackendKind, Arc<dyn Backend>>>,
    },
}

impl Backends {
    pub fn fixed(backend: Box<dyn Backend>) -> Backends {
        Backends::Fixed(Arc::from(backend))
    }

    pub fn per_policy(opts: OpenOptions) -> Backends {
        Backends::PerPolicy {
            opts,
            opened: Mutex::new(HashMap::new()),
        }
    }

    /// [`Backends::per_policy`] with `kind` already opened as `backend` (serve's
    /// warm pool stands in for the native backend).
    pub fn per_policy_with(
        opts: OpenOptions,
        kind: BackendKind,
        backend: Box<dyn Backend>,
    ) -> Backends {
        let mut opened: HashMap<BackendKind, Arc<dyn Backend>> = HashMap::new();
        opened.insert(kind, Arc::from(backend));
        Backends::PerPolicy {
            opts,
            opened: Mutex::new(opened),
        }
    }

    /// The name of the backend a run under `policy` uses (for its record,
    /// also when the backend could not be opened).
    pub fn name_for(&self, policy: &Policy) -> &'static str {
        match self {
            Backends::Fixed(b) => b.name(),
            Backends::PerPolicy { .. } => kind_of(policy.sandbox.backend).as_str(),
        }
    }

    /// The backend a run under `policy` uses.
    pub fn for_policy(&self, policy: &Policy) -> Result<Arc<dyn Backend>, SandboxError> {
        match self {
            Backends::Fixed(b) => Ok(b.clone()),
            Backends::PerPolicy { opts, opened } => {
                let kind = kind_of(policy.sandbox.backend);
                // A poisoned map only lost an insert: the backends in it are whole.
                let mut opened = opened.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(b) = opened.get(&kind) {
                    return Ok(b.clone());
                }
                let b: Arc<dyn Backend> = Arc::from(airlock_sandbox::open(kind, opts)?);
                opened.insert(kind, b.clone());
                Ok(b)
            }
        }
    }
}

/// The capability report of `kind` for what `request` would run under `policy`.
pub fn report(policy: &Policy, request: &Request, kind: BackendKind) -> CapabilityReport {
    report_probed(policy, request, kind, available(kind))
}

/// [`report`] with the backend's availability already probed (`airlock doctor`).
pub fn report_probed(
    policy: &Policy,
    request: &Request,
    kind: BackendKind,
    available: Result<String, String>,
) -> CapabilityReport {
    let mut spec = crate::spec::derive(policy, request, "capability-report");
    // The derived spec reads allowlist mode as an empty namespace until the
    // engine opens the run's egress proxy; a report made without running
    // (`policy explain`, `doctor`) must judge the mode the run will have, or
    // it would call a backend that cannot carry the relay fit for the policy.
    // Only the mode is read: no socket exists yet.
    if policy.network.mode == airlock_policy::NetworkMode::Allowlist {
        spec.network = airlock_sandbox::NetworkSpec::Proxy {
            socket: "/nonexistent/egress-proxy-of-the-run".into(),
        };
    }
    capability::report(kind, &spec, available)
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
        // An engine opened on one backend (`airlock run`) never runs a
        // policy that asks for a stronger one.
        choose(policy, Some(kind)).map_err(|e| SandboxError::Layer {
            layer: airlock_sandbox::Layer::Backend,
            detail: e.to_string(),
        })?;
        // The backend's own run reports a host that lacks it; here only what
        // it cannot enforce by design is checked.
        let report = capability::report(kind, spec, Ok(String::new()));
        if let Some(why) = report.refusal() {
            return Err(SandboxError::Layer {
                layer: airlock_sandbox::Layer::Capability,
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

    #[test]
    fn a_report_without_running_judges_allowlist_mode_as_the_run_will() {
        let mut policy = airlock_policy::load::builtin_default(Path::new("/tmp"));
        policy.network.mode = airlock_policy::NetworkMode::Allowlist;
        let request = Request {
            command: airlock_policy::Command::Shell {
                command: "true".into(),
            },
            cwd: "/tmp".into(),
            loosening: Default::default(),
        };
        let report = report_probed(&policy, &request, BackendKind::Oci, Ok(String::new()));
        let text = serde_json::to_string(&report).unwrap();
        assert!(
            text.contains("allowlist (through the egress proxy)"),
            "{text}"
        );
        // The mechanism named is the allowlist's, not network none's.
        let docker = report_probed(&policy, &request, BackendKind::Docker, Ok(String::new()));
        let text = serde_json::to_string(&docker).unwrap();
        assert!(text.contains("in-sandbox relay"), "{text}");
    }

    #[test]
    fn a_per_policy_engine_opens_the_policys_backend_or_names_why_not() {
        let mut policy = airlock_policy::load::builtin_default(Path::new("/tmp"));
        let backends = Backends::per_policy(OpenOptions::new("/nonexistent".into()));
        // A backend this build lacks is an error naming it, never another one.
        let unbuilt = SandboxBackend::ALL
            .into_iter()
            .map(|(_, b)| b)
            .find(|b| !kind_of(*b).built());
        if let Some(b) = unbuilt {
            policy.sandbox.backend = b;
            let name = kind_of(b).as_str();
            assert_eq!(backends.name_for(&policy), name);
            let e = match backends.for_policy(&policy) {
                Ok(opened) => panic!("opened {} for a policy naming {name}", opened.name()),
                Err(e) => e.to_string(),
            };
            assert!(e.contains(name) && e.contains("Hint:"), "{e}");
        }
        policy.sandbox.backend = SandboxBackend::Native;
        let native = backends.for_policy(&policy).unwrap();
        assert_eq!(native.name(), "native");
        assert!(Arc::ptr_eq(&native, &backends.for_policy(&policy).unwrap()));
    }
}
