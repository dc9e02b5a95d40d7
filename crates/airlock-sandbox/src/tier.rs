//! Which backend runs a sandbox, and how strong a wall each one is.
//!
//! The backends form a ladder ordered by what a program that breaks out of its
//! own process still has between it and the host: the shared kernel (native,
//! OCI, Docker), a runtime or user-space kernel that answers its system calls
//! (WebAssembly, gVisor), or a guest kernel under a hypervisor (microVM). A
//! backend is *looser* than another when its rung is lower; same-rung moves
//! are not looser (what each backend cannot enforce is refused separately, by
//! the capability report).

use serde::{Deserialize, Serialize};
use std::fmt;

/// Every backend a policy can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    Native,
    Gvisor,
    Oci,
    Docker,
    Microvm,
    Wasm,
}

/// The rungs of the ladder, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// The program's system calls reach the host kernel (filtered).
    SharedKernel = 1,
    /// The program's system calls are answered by something other than the
    /// host kernel: gVisor's Sentry, or a WebAssembly runtime whose guest can
    /// only call the WASI functions the runtime implements.
    Intercepted = 2,
    /// A guest kernel under hardware virtualisation (or its emulation).
    GuestKernel = 3,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::SharedKernel => "shared kernel",
            Tier::Intercepted => "intercepted system calls",
            Tier::GuestKernel => "guest kernel",
        }
    }
}

impl BackendKind {
    pub const ALL: [BackendKind; 6] = [
        BackendKind::Native,
        BackendKind::Gvisor,
        BackendKind::Oci,
        BackendKind::Docker,
        BackendKind::Microvm,
        BackendKind::Wasm,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Native => "native",
            BackendKind::Gvisor => "gvisor",
            BackendKind::Oci => "oci",
            BackendKind::Docker => "docker",
            BackendKind::Microvm => "microvm",
            BackendKind::Wasm => "wasm",
        }
    }

    pub fn parse(name: &str) -> Option<BackendKind> {
        BackendKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    pub fn tier(self) -> Tier {
        match self {
            BackendKind::Native | BackendKind::Oci | BackendKind::Docker => Tier::SharedKernel,
            BackendKind::Gvisor | BackendKind::Wasm => Tier::Intercepted,
            BackendKind::Microvm => Tier::GuestKernel,
        }
    }

    /// True when running under `self` instead of `than` lowers the wall.
    pub fn is_looser_than(self, than: BackendKind) -> bool {
        self.tier() < than.tier()
    }

    /// Whether the backend streams the caller's stdin to the command while it
    /// runs; the others take a command's stdin only whole, with its spec.
    pub fn streams_stdin(self) -> bool {
        match self {
            BackendKind::Native | BackendKind::Gvisor | BackendKind::Oci | BackendKind::Docker => {
                true
            }
            BackendKind::Microvm | BackendKind::Wasm => false,
        }
    }

    /// Whether this build of airlock can run the backend at all.
    pub fn built(self) -> bool {
        match self {
            BackendKind::Native => true,
            BackendKind::Wasm => cfg!(feature = "wasm"),
            BackendKind::Gvisor | BackendKind::Oci | BackendKind::Microvm => true,
            BackendKind::Docker => cfg!(feature = "docker"),
        }
    }

    /// Why [`BackendKind::built`] is false, with what would allow it.
    pub fn not_built_reason(self) -> String {
        match self {
            BackendKind::Wasm => "the wasm backend is not built into this airlock binary; \
                Hint: build it with `cargo build -p airlock --features wasm` (on by default)"
                .to_string(),
            BackendKind::Docker => "the docker backend is not built into this airlock binary; \
                Hint: build it with `cargo build -p airlock --features docker` (on by default)"
                .to_string(),
            other => format!(
                "the {} backend is not built in this version of airlock; \
                 Hint: use a backend that is (native, oci, gvisor, wasm, microvm) in `[sandbox] backend` or `--backend`",
                other.as_str()
            ),
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_the_ladder_orders_tiers() {
        for k in BackendKind::ALL {
            assert_eq!(BackendKind::parse(k.as_str()), Some(k));
        }
        assert!(BackendKind::Native.is_looser_than(BackendKind::Wasm));
        assert!(BackendKind::Docker.is_looser_than(BackendKind::Gvisor));
        assert!(BackendKind::Wasm.is_looser_than(BackendKind::Microvm));
        assert!(!BackendKind::Wasm.is_looser_than(BackendKind::Gvisor));
        assert!(!BackendKind::Oci.is_looser_than(BackendKind::Native));
        assert!(!BackendKind::Microvm.is_looser_than(BackendKind::Native));
    }
}
