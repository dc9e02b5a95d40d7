//! The native backend's probe: every layer built for real on this host by
//! its helper ([`crate::doctor`]), the backend available when every layer the
//! default policy needs was built.

use crate::doctor;
use crate::factory::OpenOptions;
use crate::probe::{Probe, RuntimeFound};
use crate::BackendKind;

/// What holds the boundaries on the native backend.
pub const ENFORCES: &[&str] = &[
    "namespaces (mount, pid, net, ipc, uts, cgroup, user)",
    "overlay workspace with an idmapped lower layer",
    "seccomp",
    "landlock",
    "cgroups (memory, pids, cpu) or rlimits when rootless",
    "no capabilities, no_new_privs",
];

pub fn probe(opts: &OpenOptions) -> Probe {
    let helper = match std::fs::read_link("/proc/self/exe") {
        Ok(p) => p,
        Err(e) => {
            return Probe::unavailable(
                BackendKind::Native,
                format!("cannot resolve /proc/self/exe, the sandbox helper: {e}"),
            )
        }
    };
    let layers = doctor::run(&helper, &opts.runs_dir());
    let found = RuntimeFound {
        name: "airlock-sandbox-helper".into(),
        path: Some(helper),
        version: env!("CARGO_PKG_VERSION").into(),
        platform: None,
    };
    let mut probe = if doctor::all_required_ok(&layers) {
        Probe::available(BackendKind::Native, found, ENFORCES.to_vec())
    } else {
        let failed: Vec<&str> = layers
            .iter()
            .filter(|c| c.required && !c.ok)
            .map(|c| c.layer)
            .collect();
        Probe::unavailable(
            BackendKind::Native,
            format!(
                "layers the default policy needs cannot be built here: {}; \
                 Hint: see each layer's line for what would allow it",
                failed.join(", ")
            ),
        )
    };
    probe.layers = layers;
    probe
}
