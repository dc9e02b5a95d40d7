//! A helper's failure as it crosses the pipe to its caller: the [`Layer`] that
//! could not be built, and why. Every backend's helper (native, wasm, oci) reports it
//! the same way, so the caller's error names the same layers whatever the tier.

use crate::SandboxError;
use serde::{Deserialize, Serialize};

macro_rules! layers {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// A layer of the sandbox, by the name errors, helpers' reports and
        /// `airlock run`'s hints use. A name from the pipe that is none of
        /// these fails to parse: a report cannot invent a layer.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum Layer {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        impl Layer {
            pub const ALL: &'static [Layer] = &[$(Layer::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Layer::$variant => $name,)*
                }
            }
        }
    };
}

layers! {
    Namespaces = "namespaces",
    UserNamespace = "user_namespace",
    Mounts = "mounts",
    Filesystem = "filesystem",
    Proc = "proc",
    Dev = "dev",
    Workspace = "workspace",
    Network = "network",
    Netwatch = "netwatch",
    Seccomp = "seccomp",
    Landlock = "landlock",
    Cgroup = "cgroup",
    Rlimits = "rlimits",
    Capabilities = "capabilities",
    NoNewPrivs = "no_new_privs",
    Privileges = "privileges",
    Session = "session",
    Exec = "exec",
    StateDir = "state_dir",
    Helper = "helper",
    Runtime = "runtime",
    Bundle = "bundle",
    Oci = "oci",
    Wasm = "wasm",
    Docker = "docker",
    Image = "image",
    Microvm = "microvm",
    Guest = "guest",
    /// The backend asked for is not built or not usable here (caller side).
    Backend = "backend",
    /// The backend cannot enforce a boundary of the policy (caller side).
    Capability = "capability",
    /// The audit record could not be written before the run (caller side).
    Audit = "audit",
    /// On the pipe only: the request itself was refused ([`SandboxError::Spec`]).
    Spec = "spec",
}

impl Layer {
    /// The layer named `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Layer> {
        Layer::ALL.iter().copied().find(|l| l.as_str() == name)
    }
}

impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a helper sends for an error: `(layer, detail)`; errors that name no
/// layer are charged to `backend`.
pub(crate) fn report(e: SandboxError, backend: Layer) -> (Layer, String) {
    match e {
        SandboxError::Layer { layer, detail } => (layer, detail),
        SandboxError::Spec(d) => (Layer::Spec, d),
        other => (backend, other.to_string()),
    }
}

/// The caller's error for a helper's `(layer, detail)`; no failure at all is
/// charged to `backend`.
pub(crate) fn error(failure: Option<(Layer, String)>, backend: Layer) -> SandboxError {
    match failure.unwrap_or((backend, String::new())) {
        (Layer::Spec, detail) => SandboxError::Spec(detail),
        (layer, detail) => SandboxError::Layer { layer, detail },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_on_the_pipe_are_the_display_names() {
        for l in Layer::ALL {
            assert_eq!(serde_json::to_string(l).unwrap(), format!("\"{l}\""));
            assert_eq!(Layer::from_name(l.as_str()), Some(*l));
        }
        assert_eq!(Layer::from_name("kernel"), None);
    }

    #[test]
    fn an_unknown_layer_from_a_helper_is_an_error_naming_it() {
        let e = serde_json::from_str::<(Layer, String)>(r#"["kernel","x"]"#).unwrap_err();
        assert!(e.to_string().contains("unknown variant `kernel`"), "{e}");
    }
}
