//! What the OCI and gVisor backends enforce, boundary by boundary.

use crate::capability::{Boundary, Support};
use crate::{NetworkSpec, SandboxSpec, WorkspaceMode};

/// What to do instead when gVisor cannot run network allowlist mode here.
pub const GVISOR_ALLOWLIST_HINT: &str = "Hint: use a runsc that has `--host-uds` (2022 \
     and later), network mode none, the oci backend (crun, runc) or the native backend";

/// The mechanisms that hold the sandbox's boundaries under `kind`
/// (`rootless`: gVisor run by an ordinary user).
pub fn enforces(kind: crate::BackendKind, rootless: bool) -> &'static [&'static str] {
    const SHARED: &[&str] = &[
        "OCI bundle from the shared view: read-only root, masked paths",
        "overlay workspace staged by the helper (idmapped lower layer)",
        "cgroups held by airlock (memory, pids, cpu)",
        "every capability dropped, noNewPrivileges, seccomp profile",
    ];
    const GVISOR: &[&str] = &[
        "gVisor's Sentry answers the program's system calls",
        "OCI bundle from the shared view: read-only root",
        "overlay workspace staged by the helper (idmapped lower layer)",
        "cgroups held by airlock (memory, pids, cpu)",
        "every capability dropped, noNewPrivileges",
    ];
    const GVISOR_ROOTLESS: &[&str] = &[
        "gVisor's Sentry answers the program's system calls (runsc --rootless)",
        "rootless: the caller is root of a user namespace of the helper's own; no idmapped mounts",
        "OCI bundle from the shared view: read-only root",
        "overlay workspace staged by the helper (userxattr, files keep the caller's ownership)",
        "limits: a delegated cgroup v2 subtree, else rlimits in the Sentry (best effort only)",
        "every capability dropped, noNewPrivileges",
    ];
    if kind == crate::BackendKind::Gvisor && rootless {
        GVISOR_ROOTLESS
    } else if kind == crate::BackendKind::Gvisor {
        GVISOR
    } else {
        SHARED
    }
}

/// The support of `boundary` for `spec` under OCI runtimes (`gvisor` false)
/// or gVisor's runsc (`gvisor` true).
pub fn support(b: Boundary, spec: &SandboxSpec, gvisor: bool) -> Support {
    let e = |s: &str| Support::Enforced(s.to_string());
    match b {
        Boundary::Programs if gvisor => e(
            "host programs under gVisor's Sentry (a user-space kernel answers their system calls; \
             some calls are missing or partial in the installed runsc, see docs/tiers.md)",
        ),
        Boundary::Programs => e("any host program, run by the OCI runtime in its own namespaces"),
        Boundary::FilesystemView => e(
            "OCI bundle translated from the same view as the native backend: read-only root, \
             read-only binds of the system directories; no landlock second wall (no OCI equivalent; \
             the mount namespace is the boundary)",
        ),
        Boundary::Workspace => e(match spec.workspace.mode {
            WorkspaceMode::Overlay => {
                "overlayfs staged by the helper (idmapped lower layer, per-run upper layer); \
                 changes reported and applied as under the native backend"
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
        Boundary::HidePaths if gvisor => e(
            "an empty read-only tmpfs over each hidden directory (this runsc ignores \
             linux.maskedPaths); a hidden file cannot be covered, so such a run is refused",
        ),
        Boundary::HidePaths => e("linux.maskedPaths (/dev/null or an empty read-only directory)"),
        Boundary::Network => match &spec.network {
            NetworkSpec::None if gvisor => {
                e("runsc --network=none: gVisor's own network stack with loopback only")
            }
            NetworkSpec::None => e("new network namespace with loopback only"),
            NetworkSpec::Proxy { .. } if gvisor => e(
                "runsc --network=none: gVisor's own network stack, loopback only. The in-sandbox \
                 relay (airlock-relay, bound read-only) listens on the guest's 127.0.0.1:3128 \
                 (HTTP) and :1080 (SOCKS5) and copies each connection to the egress proxy's \
                 socket, bound read-only and idmapped (runsc gets --host-uds=open in this mode \
                 only, so that its gofer may connect to it); the proxy judges and logs every \
                 request. A direct connection fails in the guest (no route: its only interface \
                 is loopback) but is not logged as a violation: gVisor has no seccomp user \
                 notification. As under the oci backend, other host unix sockets the view \
                 shows (in the workspace, say) can be connected to in this mode",
            ),
            NetworkSpec::Proxy { .. } => e(
                "an empty network namespace made by the helper and joined by the container (whose \
                 user namespace holds no capability over it); the helper's relay listens on \
                 127.0.0.1:3128 and :1080 there and hands each connection to the egress proxy; \
                 direct attempts (connect, sendto, sendmsg, raw and packet sockets) are refused \
                 and recorded by netwatch through seccomp user notification \
                 (linux.seccomp.listenerPath)",
            ),
            NetworkSpec::Open if gvisor => e("host network (as the policy says)"),
            NetworkSpec::Open => e(
                "host network (as the policy says), the native backend's open-mode socket \
                 families (no AF_PACKET or AF_VSOCK, netlink for NETLINK_ROUTE only); the \
                 host's abstract unix sockets, which live in that namespace, are scoped by a \
                 landlock domain the runtime is started in and the container inherits \
                 (ABI 6; without it they stay reachable and the run's notes say so)",
            ),
        },
        Boundary::Timeout => e(
            "wall-clock timer in the helper from the runtime's start; the runtime kills the \
             container and the run's cgroup is killed",
        ),
        Boundary::CpuTime => e("RLIMIT_CPU and cgroup CPU accounting"),
        Boundary::Memory if gvisor => {
            e("memory cgroup around runsc (the Sentry's and the guest's memory together)")
        }
        Boundary::Memory => e("memory cgroup (OOM kill reported as memory)"),
        Boundary::Pids if gvisor => e(
            "RLIMIT_NPROC as gVisor's Sentry applies it to the guest's processes, and the pids \
             cgroup around runsc (limits.pids plus 512 for the Sentry's and gofer's host threads); \
             a pids kill is named when the host threads reach the cgroup's limit, while a fork \
             the Sentry refuses fails with EAGAIN in the guest, unseen by the host",
        ),
        Boundary::Pids => e("pids cgroup and RLIMIT_NPROC"),
        Boundary::Cpus => e("cgroup CPU bandwidth"),
        Boundary::Output => e("captured and capped by the caller; killed at the cap"),
        Boundary::Tmp if gvisor => e(
            "size-capped tmpfs /tmp and /dev/shm in the Sentry; this runsc ignores nr_inodes, so \
             their file count is bounded by limits.memory (the Sentry's memory cgroup), not by an \
             inode cap",
        ),
        Boundary::Tmp => e("size- and inode-capped tmpfs /tmp and /dev/shm"),
        Boundary::FileSize => e("RLIMIT_FSIZE (process.rlimits)"),
        Boundary::OpenFiles => e("RLIMIT_NOFILE (process.rlimits)"),
        Boundary::Environment => {
            e("the bundle's process.env is the spec's environment; nothing else is inherited")
        }
        Boundary::Privileges if gvisor => e(
            "gVisor sandbox: root inside is the Sentry's bookkeeping; on the host the Sentry runs \
             as nobody in a user namespace of its own and the gofer as uid 2000000000, both with \
             noNewPrivileges under runsc's own seccomp filters; no capabilities inside; nice and \
             oom_score_adj inside do not reach the host",
        ),
        Boundary::Privileges => e(
            "user namespace (root inside is host uid 2000000000), no capabilities, noNewPrivileges, \
             an OCI seccomp deny list (not airlock's native allowlist; user notification only for netwatch in allowlist mode)",
        ),
    }
}

/// The support of `boundary` under gVisor's rootless mode (an ordinary user:
/// the helper is root of a user namespace that maps only the caller, and
/// `runsc --rootless`), with the limits as `limits` lets this user hold them.
/// What root mode enforces the same way falls through to [`support`].
pub fn support_rootless_gvisor(
    b: Boundary,
    spec: &SandboxSpec,
    limits: &crate::capability::NativeLimits,
) -> Support {
    use crate::capability::NativeLimits;
    let e = |s: &str| Support::Enforced(s.to_string());
    let delegated = matches!(limits, NativeLimits::Delegated(_));
    let best_effort = spec.limit_enforcement == crate::spec::LimitEnforcement::BestEffort;
    // Without a cgroup: what the Sentry applies to the guest's processes
    // stands in, only where the policy accepts it.
    let stand_in = |how: &str, missing: &str| {
        if delegated {
            e("the delegated cgroup v2 subtree around runsc (the Sentry's and the guest's usage together)")
        } else if best_effort {
            Support::BestEffort(format!(
                "best effort (limits.enforcement = \"best_effort\"): {how}"
            ))
        } else {
            Support::Missing(missing.to_string())
        }
    };
    match b {
        Boundary::Memory => stand_in(
            "RLIMIT_AS per guest process, applied by gVisor's Sentry (allocations past it fail \
             with ENOMEM; a tree of N processes may use N times it; not reported as a memory \
             kill); the Sentry's own memory (page cache, tmpfs contents, its Go heap) is not \
             bounded",
            "needs a memory cgroup, and this user has none",
        ),
        Boundary::Cpus => stand_in(
            "not enforced: no CPU bandwidth control without a cgroup (the wall-clock timeout \
             and the CPU-time ceiling still bound the run)",
            "needs a cpu cgroup, and this user has none",
        ),
        Boundary::CpuTime => e(if delegated {
            "the delegated cgroup v2 subtree's CPU accounting around runsc, watched by the helper"
        } else {
            "the CPU time of runsc's whole process tree (the Sentry, the gofer, the guest's \
             stubs), summed from /proc by the helper every 100 ms and killed past the limit \
             (reported as cpu_time); it counts the Sentry's own work too. This runsc does not \
             apply RLIMIT_CPU to the guest"
        }),
        Boundary::Pids => e(if delegated {
            "RLIMIT_NPROC as gVisor's Sentry applies it to the guest's processes, and the \
             delegated pids cgroup around runsc"
        } else {
            "RLIMIT_NPROC as gVisor's Sentry applies it to the guest's processes (fork fails \
             with EAGAIN past it); the Sentry's and the gofer's own host threads are not \
             bounded by a cgroup"
        }),
        Boundary::Workspace => e(match spec.workspace.mode {
            WorkspaceMode::Overlay => {
                "overlayfs staged by the helper in its own user namespace (userxattr, per-run \
                 upper layer); files keep the caller's ownership; changes reported and applied \
                 as under the native backend"
            }
            WorkspaceMode::Ro => "read-only bind (files keep the caller's ownership)",
            WorkspaceMode::Rw => {
                "bind, protected paths read-only (files keep the caller's ownership)"
            }
        }),
        Boundary::WritePaths => e("read-write binds (files keep the caller's ownership)"),
        Boundary::Timeout => e(
            "wall-clock timer in the helper from the runtime's start; the runtime kills the \
             container, then the helper (a child subreaper, to which runsc's orphans fall) kills \
             and reaps every process runsc left",
        ),
        Boundary::Privileges => e(
            "gVisor sandbox, rootless: root inside is the Sentry's bookkeeping; on the host the \
             helper is root only of a user namespace mapping the caller (no capability on the \
             host), the Sentry runs as nobody in a user namespace nested in it and the gofer as \
             the caller, both with noNewPrivileges under runsc's own seccomp filters; no \
             capabilities inside; the caller's supplementary groups stay on the gofer (an \
             unprivileged user namespace cannot drop them)",
        ),
        // Root mode bounds /tmp's file count with the memory cgroup around
        // the Sentry (runsc ignores nr_inodes); without one, nothing does.
        Boundary::Tmp => stand_in(
            "size-capped tmpfs /tmp and /dev/shm in the Sentry; their file count is not \
             bounded (this runsc ignores nr_inodes, and nothing bounds the Sentry's memory)",
            "this runsc ignores nr_inodes, so /tmp's file count is bounded only by a memory \
             cgroup around the Sentry, and this user has none",
        ),
        other => support(other, spec, true),
    }
}
