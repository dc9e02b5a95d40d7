//! A backend's probe: whether it can run on this host, what it found (runtime,
//! version, platform), and what it enforces. `airlock doctor --backend X`
//! prints it; the capability report takes its availability from it.

use crate::doctor::LayerCheck;
use crate::BackendKind;
use serde::Serialize;
use std::path::PathBuf;

/// The runtime a backend found on this host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuntimeFound {
    /// What runs the sandbox: `crun`, `runsc`, `wasmtime`, `airlock` (native).
    pub name: String,
    /// Its executable or file, when it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    pub version: String,
    /// The platform it runs on (gVisor's `ptrace` or `systrap`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
    pub backend: BackendKind,
    pub tier: &'static str,
    pub available: bool,
    /// What was found, or why the backend cannot run here with what would
    /// allow it (a `Hint:`).
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeFound>,
    /// The mechanisms that hold the sandbox's boundaries on this backend.
    pub enforces: Vec<&'static str>,
    /// Each layer checked on this host (the native backend's layers, built
    /// once by its helper); empty for backends that check only their runtime.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<LayerCheck>,
}

impl Probe {
    pub fn unavailable(backend: BackendKind, why: String) -> Probe {
        Probe {
            backend,
            tier: backend.tier().as_str(),
            available: false,
            detail: why,
            runtime: None,
            enforces: Vec::new(),
            layers: Vec::new(),
        }
    }

    pub fn available(
        backend: BackendKind,
        runtime: RuntimeFound,
        enforces: Vec<&'static str>,
    ) -> Probe {
        let mut detail = runtime.name.clone();
        if let Some(p) = &runtime.path {
            detail.push_str(&format!(" at {}", p.display()));
        }
        detail.push_str(&format!(" ({})", runtime.version));
        if let Some(p) = &runtime.platform {
            detail.push_str(&format!(", platform {p}"));
        }
        Probe {
            backend,
            tier: backend.tier().as_str(),
            available: true,
            detail,
            runtime: Some(runtime),
            enforces,
            layers: Vec::new(),
        }
    }

    /// `Ok(what was found)` or `Err(why not)`, as the capability report takes it.
    pub fn into_result(self) -> Result<String, String> {
        if self.available {
            Ok(self.detail)
        } else {
            Err(self.detail)
        }
    }
}
