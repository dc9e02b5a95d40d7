//! What the WebAssembly backend enforces, boundary by boundary (pure: no
//! wasmtime needed, so the report exists even in a build without the backend).

use crate::capability::{Boundary, Support};
use crate::{NetworkSpec, SandboxSpec, WorkspaceMode};

/// The mechanisms that hold the sandbox's boundaries on the wasm backend.
pub const ENFORCES: &[&str] = &[
    "wasmtime: only the WASI functions it implements, no sockets",
    "fuel/epoch time limit and memory limit on the guest",
    "preopened overlay workspace (changes reported and applied as native)",
    "the guest's process: rlimits, landlock, no capabilities, seccomp",
];

fn ok(how: &str) -> Support {
    Support::Enforced(how.to_string())
}

fn no(why: &str) -> Support {
    Support::Missing(why.to_string())
}

pub fn support(b: Boundary, spec: &SandboxSpec) -> Support {
    match b {
        Boundary::Programs => match spec.argv.first() {
            None => ok("python3 code (CPython 3.12.0, WASI build) and WASI preview-1 modules (.wasm)"),
            Some(_) => match super::program::classify(&spec.argv) {
                Ok(p) => Support::Enforced(p.describe()),
                Err(why) => Support::Missing(why),
            },
        },
        Boundary::FilesystemView => ok(
            "WASI preopens only (the workspace at its own path, /tmp, filesystem.read/write); \
             the helper is also landlocked to them",
        ),
        Boundary::Workspace => ok(match spec.workspace.mode {
            WorkspaceMode::Overlay => {
                "overlayfs in the helper's private mount namespace, preopened; changes reported, applied on request"
            }
            WorkspaceMode::Ro => "preopened read-only",
            WorkspaceMode::Rw => {
                "overlayfs, every change applied back after the run except protected paths"
            }
        }),
        Boundary::ProtectedPaths => ok("never applied back (an attempt is reported as a violation)"),
        Boundary::ReadPaths => ok("preopened read-only at the same path"),
        Boundary::WritePaths => ok("preopened read-write at the same path; RLIMIT_FSIZE per file"),
        Boundary::HidePaths => ok("masked by mounts in the helper's private mount namespace"),
        Boundary::Network => ok(match spec.network {
            NetworkSpec::None => {
                "WASI preview 1 has no socket calls; wasmtime's socket grants are off; empty network namespace"
            }
            NetworkSpec::Proxy { .. } | NetworkSpec::Open => {
                "stricter than asked: WASI preview 1 has no socket calls, so no host is reachable (allowed ones neither)"
            }
        }),
        Boundary::Timeout => ok(
            "epoch interruption of the guest; a guest blocked in a host call is killed by the helper",
        ),
        Boundary::CpuTime => ok("the guest process's CPU clock, checked by a watchdog; RLIMIT_CPU behind it"),
        Boundary::Memory => ok(
            "wasmtime resource limiter on linear memory and tables (a refused growth ends the run as memory); \
             writes land on a tmpfs capped at 3/4 of it",
        ),
        Boundary::Pids => ok("WASI preview 1 has no processes or threads: one guest thread"),
        Boundary::Cpus if spec.limits.cpus >= 1.0 => ok("one guest thread: at most one CPU"),
        Boundary::Cpus => no(
            "the guest runs on one thread at full speed; a share below one CPU needs a CPU cgroup, \
             which the wasm backend does not create",
        ),
        Boundary::Output => ok("captured and capped; the guest is trapped at the cap"),
        Boundary::Tmp => ok("a size- and inode-capped tmpfs preopened as /tmp"),
        Boundary::FileSize => ok("RLIMIT_FSIZE on the guest's process"),
        Boundary::OpenFiles => ok("RLIMIT_NOFILE on the guest's process (plus the runtime's own few)"),
        Boundary::Environment => ok("the spec's variables are the guest's whole WASI environment"),
        Boundary::Privileges => ok(
            "the guest makes no system calls, only WASI calls; its process has no capabilities, \
             no_new_privs, the native seccomp filter and landlock",
        ),
    }
}
