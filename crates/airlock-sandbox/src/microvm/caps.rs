//! What the microVM backend enforces, boundary by boundary.

use crate::capability::{Boundary, Support};
use crate::{NetworkSpec, SandboxSpec, WorkspaceMode};

/// The mechanisms that hold the sandbox's boundaries under the microvm backend.
pub const ENFORCES: &[&str] = &[
    "a guest kernel under QEMU -M microvm (KVM, or TCG emulation)",
    "overlay workspace staged by the helper, shared over virtio-9p",
    "system directories as read-only 9p shares; no network device",
    "allowlist mode: a guest relay on 127.0.0.1:3128/1080 multiplexed over one virtio-serial \
     port to the host's egress proxy",
    "limits by the guest's cgroup v2 and rlimits; command as uid 2000000000, no capabilities",
    "QEMU itself unprivileged (uid 2000000000) under its own seccomp sandbox",
];

pub fn support(b: Boundary, spec: &SandboxSpec) -> Support {
    let e = |s: &str| Support::Enforced(s.to_string());
    let m = |s: &str| Support::Missing(s.to_string());
    match b {
        Boundary::Programs => e(
            "host programs from the read-only system directories (and busybox when the host \
             shares none), run by a guest Linux kernel under QEMU",
        ),
        Boundary::FilesystemView => e(
            "a guest kernel with its own root (the initramfs), /proc, /dev and /tmp; of the \
             host only the view's read-only directories (system directories, read paths) and \
             the workspace, shared over virtio-9p by QEMU running as uid 2000000000",
        ),
        Boundary::Workspace => e(match spec.workspace.mode {
            WorkspaceMode::Overlay => {
                "overlayfs staged on the host as under the OCI backend (idmapped lower layer, \
                 per-run upper layer) and shared over virtio-9p; changes reported and applied \
                 as under the native backend"
            }
            WorkspaceMode::Ro => {
                "idmapped bind shared over virtio-9p, read-only in QEMU and in the guest"
            }
            WorkspaceMode::Rw => "idmapped bind shared over virtio-9p",
        }),
        Boundary::ProtectedPaths => match spec.workspace.mode {
            WorkspaceMode::Rw => m(
                "parts of a rw workspace cannot be kept read-only over virtio-9p \
                 (use overlay mode: protected paths are never applied back)",
            ),
            _ => e("never applied back"),
        },
        Boundary::ReadPaths => e("read-only virtio-9p shares (directories only)"),
        Boundary::WritePaths => m(
            "the guest shows no writable host path but the workspace (share the files \
             through the workspace, or use the native backend)",
        ),
        Boundary::HidePaths => e(
            "masked (an empty read-only tmpfs, or /dev/null) in the helper's private mount \
             namespace before QEMU shares the workspace and the read-only directories",
        ),
        Boundary::Network => match &spec.network {
            NetworkSpec::None => e("no network device in the VM at all (no -netdev, no vsock)"),
            NetworkSpec::Proxy { .. } => e(
                "no network device in the VM: the guest's relay on 127.0.0.1:3128 (HTTP) and \
                 :1080 (SOCKS5) carries each connection over one virtio-serial port to the \
                 host, which connects it to the egress proxy and nowhere else; the proxy judges \
                 and logs every request. A direct connection fails in the guest (its only \
                 interface is loopback) but is not logged as a violation: no seccomp user \
                 notification reaches through a guest kernel",
            ),
            NetworkSpec::Open => {
                m("the VM has no network device (use network mode none, or another backend)")
            }
        },
        Boundary::Timeout => e(
            "a watchdog in the guest's init kills the command's cgroup (cgroup.kill); \
             the host kills QEMU by PID when the guest overruns",
        ),
        Boundary::CpuTime => e("RLIMIT_CPU in the guest, and the guest cgroup's CPU account"),
        Boundary::Memory => e(
            "the guest's RAM (the limit plus 96 MiB for its kernel) and a cgroup v2 memory.max \
             in the guest (OOM kill reported as memory)",
        ),
        Boundary::Pids => e("cgroup v2 pids.max in the guest"),
        Boundary::Cpus => {
            e("virtual CPUs (the limit rounded up) and cgroup v2 cpu.max in the guest")
        }
        Boundary::Output => {
            e("captured in the guest up to the cap; the command's cgroup is killed at the cap")
        }
        Boundary::Tmp => e("size-capped tmpfs /tmp, /dev/shm and home in the guest"),
        Boundary::FileSize => e("RLIMIT_FSIZE in the guest"),
        Boundary::OpenFiles => e("RLIMIT_NOFILE in the guest"),
        Boundary::Environment => e(
            "the spec's environment only, passed in the control share; nothing else is inherited",
        ),
        Boundary::Privileges => e(
            "a non-root guest user (uid 2000000000) without capabilities, no_new_privs; behind it \
             the guest kernel, and QEMU as host uid 2000000000 under its own seccomp filter",
        ),
    }
}
