//! What the Docker-API backend enforces, boundary by boundary.

use crate::capability::{Boundary, Support};
use crate::{NetworkSpec, SandboxSpec, WorkspaceMode};

/// The mechanisms that hold the sandbox's boundaries under the docker backend.
pub const ENFORCES: &[&str] = &[
    "container from the shared view: read-only image root, masked paths",
    "overlay workspace staged by the helper in the host mount namespace",
    "the daemon's cgroups (memory, pids, cpu), read by airlock each tick",
    "every capability dropped, no-new-privileges, airlock's seccomp profile",
    "allowlist mode: airlock-relay as the container's first program, relaying 127.0.0.1:3128 \
     and :1080 to the egress proxy's socket (both bound read-only); NetworkMode none",
];

/// The support of `boundary` for `spec` in a container run through the
/// Docker Engine API.
pub fn support(b: Boundary, spec: &SandboxSpec) -> Support {
    let e = |s: &str| Support::Enforced(s.to_string());
    match b {
        Boundary::Programs => e(
            "the programs of the configured image (present locally, never pulled), not the host's",
        ),
        Boundary::FilesystemView => e(
            "the image as a read-only root; the daemon's /dev and /proc; an empty read-only \
             tmpfs over the daemon's /sys; no host directory but the workspace and the \
             policy's paths (no landlock second wall)",
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
            NetworkSpec::Proxy { .. } => e(
                "NetworkMode none (loopback only): the container's first program is the \
                 in-sandbox relay (airlock-relay, bound read-only at /run/airlock/relay), which \
                 listens on 127.0.0.1:3128 (HTTP) and :1080 (SOCKS5), copies each connection to \
                 the run's egress-proxy socket (bound read-only at /run/airlock/proxy.sock) and \
                 then executes the command; the proxy judges and logs every request. A direct \
                 connection fails (no route out of the container) but is not logged as a \
                 violation: the Docker Engine API offers no seccomp user notification",
            ),
            NetworkSpec::Open => e(
                "NetworkMode host (as the policy says), the native backend's open-mode socket \
                 families (no AF_PACKET or AF_VSOCK, netlink for NETLINK_ROUTE only); the \
                 host's abstract unix sockets, which live in that namespace, are scoped by \
                 landlock (ABI 6): the in-sandbox relay (airlock-relay scope) restricts \
                 itself, then becomes the command; without ABI 6 they stay reachable and the \
                 run's notes say so",
            ),
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
            "runs as uid 2000000000 (not root; no user namespace unless the daemon remaps), \
             CapDrop ALL, no-new-privileges, the OCI backend's seccomp deny list in place of \
             the daemon's default profile (no user notification)",
        ),
    }
}
