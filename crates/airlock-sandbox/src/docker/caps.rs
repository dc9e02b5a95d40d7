//! What the Docker-API backend enforces, boundary by boundary.

use crate::capability::{Boundary, Support};
use crate::{NetworkSpec, SandboxSpec, WorkspaceMode};

/// The support of `boundary` for `spec` in a container run through the
/// Docker Engine API.
/// The mechanisms that hold the sandbox's boundaries under the docker backend.
pub const ENFORCES: &[&str] = &[
    "container from the shared view: read-only image root, masked paths",
    "overlay workspace staged by the helper in the host mount namespace",
    "the daemon's cgroups (memory, pids, cpu), read by airlock each tick",
    "every capability dropped, no-new-privileges, airlock's seccomp profile",
];

pub fn support(b: Boundary, spec: &SandboxSpec) -> Support {
    let e = |s: &str| Support::Enforced(s.to_string());
    match b {
        Boundary::Programs => e(
            "the programs of the configured image (present locally, never pulled), not the host's",
        ),
        Boundary::FilesystemView => e(
            "the image as a read-only root; the daemon's /dev and /proc; no host directory but \
             the workspace and the policy's paths (no landlock second wall)",
        ),
        Boundary::Workspace => e(match spec.workspace.mode {
            WorkspaceMode::Overlay => {
                "overlayfs staged by the helper in the host's mount namespace (idmapped lower \
                 layer, per-run upper layer); changes reported and applied as under the native \
                 backend"
            }
            WorkspaceMode::Ro => "read-only idmapped bind",
            WorkspaceMode::Rw => "idmapped bind, protected paths read-only",
        }),
        Boundary::ProtectedPaths => e(match spec.workspace.mode {
            WorkspaceMode::Rw => {
                "read-only binds, their parent directories pinned as mount points; never applied back"
            }
            _ => "never applied back",
        }),
        Boundary::ReadPaths => e("read-only binds"),
        Boundary::WritePaths => e("idmapped read-write binds"),
        Boundary::HidePaths => e("HostConfig.MaskedPaths (/dev/null or an empty read-only tmpfs)"),
        Boundary::Network => match &spec.network {
            NetworkSpec::None => e("NetworkMode none: a network namespace with loopback only"),
            NetworkSpec::Proxy { .. } => Support::Missing(
                "allowlist mode needs the in-sandbox relay to the egress proxy and seccomp user \
                 notification to log direct connections; neither exists for this backend \
                 (use network mode none or open, or the native backend)"
                    .into(),
            ),
            NetworkSpec::Open => e("NetworkMode host (as the policy says)"),
        },
        Boundary::Timeout => e(
            "wall-clock timer in the helper from the container's start; the container is killed \
             and removed",
        ),
        Boundary::CpuTime => e("RLIMIT_CPU (HostConfig.Ulimits cpu)"),
        Boundary::Memory => e("the container's memory cgroup, no swap (OOM kill reported as memory)"),
        Boundary::Pids => e("the container's pids cgroup (a refused fork ends the run as a pids kill)"),
        Boundary::Cpus => e("CPU bandwidth (HostConfig.NanoCpus)"),
        Boundary::Output => e("captured and capped by the caller; killed at the cap"),
        Boundary::Tmp => e("size- and inode-capped tmpfs /tmp, /dev/shm and home"),
        Boundary::FileSize => e("RLIMIT_FSIZE (HostConfig.Ulimits fsize)"),
        Boundary::OpenFiles => e("RLIMIT_NOFILE (HostConfig.Ulimits nofile)"),
        Boundary::Environment => {
            e("the container's Env is the spec's environment, nothing of airlock's or the \
               host's; the daemon adds the image's own ENV entries the spec does not set")
        }
        Boundary::Privileges => e(
            "runs as uid 100000 (not root; no user namespace unless the daemon remaps), \
             CapDrop ALL, no-new-privileges, the OCI backend's seccomp deny list in place of \
             the daemon's default profile (no user notification)",
        ),
    }
}
