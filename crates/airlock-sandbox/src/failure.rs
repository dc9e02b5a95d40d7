//! A helper's failure as it crosses the pipe to its caller: the layer that could
//! not be built, and why. Every backend's helper (native, wasm, oci) reports it
//! the same way, so the caller's error names the same layers whatever the tier.

use crate::SandboxError;

/// Every layer a helper may name. Text from the pipe maps back to one of these
/// (the error type holds a static name); anything else becomes the caller's
/// fallback, so a corrupted report cannot invent a layer.
const KNOWN: &[&str] = &[
    "namespaces",
    "user_namespace",
    "mounts",
    "filesystem",
    "proc",
    "dev",
    "workspace",
    "network",
    "seccomp",
    "landlock",
    "cgroup",
    "rlimits",
    "capabilities",
    "no_new_privs",
    "privileges",
    "session",
    "exec",
    "state_dir",
    "helper",
    "runtime",
    "bundle",
    "oci",
    "wasm",
    "docker",
    "image",
    "microvm",
    "guest",
];

/// Maps a layer name that crossed the pipe back to a static one.
pub fn layer_name(name: &str, fallback: &'static str) -> &'static str {
    KNOWN
        .iter()
        .find(|k| **k == name)
        .copied()
        .unwrap_or(fallback)
}

/// What a helper sends for an error: `(layer, detail)`; errors that name no
/// layer are charged to `backend`.
pub(crate) fn report(e: SandboxError, backend: &'static str) -> (String, String) {
    match e {
        SandboxError::Layer { layer, detail } => (layer.to_string(), detail),
        SandboxError::Spec(d) => ("spec".to_string(), d),
        other => (backend.to_string(), other.to_string()),
    }
}

/// The caller's error for a helper's `(layer, detail)`.
pub(crate) fn error(failure: Option<(String, String)>, backend: &'static str) -> SandboxError {
    let (layer, detail) = failure.unwrap_or_default();
    match layer.as_str() {
        "spec" => SandboxError::Spec(detail),
        _ => SandboxError::Layer {
            layer: layer_name(&layer, backend),
            detail,
        },
    }
}
