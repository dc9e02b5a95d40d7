//! The view translated into an OCI bundle: `config.json` and the few files
//! and symlinks of the (read-only) root filesystem. Pure: the helper writes
//! what this returns, so the translation is unit-tested without root.
//!
//! | view operation        | OCI                                                        |
//! |-----------------------|------------------------------------------------------------|
//! | `Symlink`, `WriteFile`| made in `rootfs/` (`root.readonly`); under `/dev` the runtime makes them |
//! | `BindRo`              | bind mount `rbind,ro,nosuid,nodev`                         |
//! | `BindRw`              | bind mount of the helper's idmapped copy, `nosuid,nodev`   |
//! | `Tmpfs`               | tmpfs mount with `mode`, `size`, `nr_inodes`               |
//! | `Device`              | the runtime's default devices (a superset of the view's)   |
//! | `Devpts`, `Proc`      | devpts / proc mounts                                       |
//! | `ReadOnly`            | `linux.readonlyPaths`                                      |
//! | `Mask`, `Hide`        | `linux.maskedPaths`                                        |
//! | `Workspace`           | bind of the helper's overlay (or idmapped tree); `rw` mode pins the protected paths' parents and binds the protected paths read-only |
//! | `ProxySocket`         | OCI runtimes: nothing inside, the container joins the helper's network namespace, where the helper's relay listens ([`Egress::HostRelay`]); gVisor: the proxy socket and the relay binary bound read-only, the relay started before the command ([`Egress::GuestRelay`]) |

use super::runtime::Runtime;
use crate::native::rlimits::RlimitSpec;
use crate::relay;
use crate::view::ViewOp;
use crate::{NetworkSpec, SandboxSpec, WorkspaceMode};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The host uid and gid sandbox root maps to (as under the native backend).
pub const HOST_ID: u32 = crate::native::namespaces::SANDBOX_HOST_UID;

/// What the helper prepared on the host for the bundle to bind.
#[derive(Debug, Clone)]
pub struct Staged {
    /// What appears at the workspace's path: the overlay's merged directory,
    /// or the idmapped tree (ro and rw modes).
    pub workspace: PathBuf,
    /// Idmapped copies of the write paths: (path inside, host source).
    pub write_paths: Vec<(PathBuf, PathBuf)>,
    /// Read-only sources the runtime could not reach from the container's
    /// user namespace (a parent directory closed to others, such as
    /// `/root`), bound into the stage: (path inside, host source).
    pub read_paths: Vec<(PathBuf, PathBuf)>,
    /// Network allowlist mode: how the relay reaches the proxy.
    pub egress: Option<Egress>,
    /// The uid and gid sandbox root maps to, seen from the helper: [`HOST_ID`]
    /// as host root; 0 in gVisor's rootless mode, where the helper is root of
    /// a user namespace that maps only the caller (so sandbox root is the
    /// caller, and the files it stages keep their owner).
    pub root_host_id: u32,
}

/// What the helper prepared for network allowlist mode.
#[derive(Debug, Clone)]
pub enum Egress {
    /// crun, runc, youki: the helper's relay serves the container from the
    /// host, in a network namespace the container joins.
    HostRelay {
        /// The empty network namespace the helper made and its relay listens
        /// in; the container joins it (its own user namespace holds no
        /// capability over it, so it cannot reconfigure it).
        netns: PathBuf,
        /// Where the helper waits for the seccomp listener of the container's
        /// watching rules (`linux.seccomp.listenerPath`).
        seccomp_listener: PathBuf,
    },
    /// gVisor: the Sentry's network stack has a loopback of its own that no
    /// host-side listener can serve, so the relay runs inside (`airlock-relay
    /// exec`, started before the command) and copies each connection to the
    /// proxy's socket, which runsc's gofer connects to on the host.
    GuestRelay {
        /// The proxy's socket, idmapped into the stage (sandbox root owns it).
        socket: PathBuf,
        /// The relay binary, bound into the stage.
        relay: PathBuf,
    },
}

/// An entry of the root filesystem directory.
#[derive(Debug, Clone, PartialEq)]
pub enum RootfsEntry {
    Symlink { link: PathBuf, target: PathBuf },
    File { path: PathBuf, content: Vec<u8> },
}

#[derive(Debug, Clone)]
pub struct Bundle {
    pub config: Value,
    pub rootfs: Vec<RootfsEntry>,
}

/// System calls the OCI seccomp profile refuses with EPERM: kernel
/// configuration, modules, other namespaces, mounts, keyrings, BPF, perf,
/// userfaultfd, io_uring, handles that open files by inode, process memory of
/// others. The rest is allowed (a deny list, not airlock's native allowlist).
pub const SECCOMP_DENY: &[&str] = &[
    "acct",
    "add_key",
    "bpf",
    "clock_adjtime",
    "clock_settime",
    "create_module",
    "delete_module",
    "finit_module",
    "fsconfig",
    "fsmount",
    "fsopen",
    "fspick",
    "get_kernel_syms",
    "init_module",
    "ioperm",
    "iopl",
    "kcmp",
    "kexec_file_load",
    "kexec_load",
    "keyctl",
    "lookup_dcookie",
    "mount",
    "mount_setattr",
    "move_mount",
    "move_pages",
    "name_to_handle_at",
    "nfsservctl",
    "open_by_handle_at",
    "open_tree",
    "perf_event_open",
    "pivot_root",
    "process_vm_readv",
    "process_vm_writev",
    "ptrace",
    "query_module",
    "quotactl",
    "reboot",
    "request_key",
    "setns",
    "settimeofday",
    "swapoff",
    "swapon",
    "syslog",
    "umount",
    "umount2",
    "unshare",
    "uselib",
    "userfaultfd",
    "ustat",
    "vhangup",
];

/// Namespace flags `clone` may not ask for (CLONE_NEWTIME, NEWNS,
/// NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET).
const CLONE_NEW_FLAGS: [u64; 8] = [
    0x0000_0080,
    0x0002_0000,
    0x0200_0000,
    0x0400_0000,
    0x0800_0000,
    0x1000_0000,
    0x2000_0000,
    0x4000_0000,
];

/// The rules that turn direct network attempts into seccomp user
/// notifications for the helper's netwatch supervisor, the same calls the
/// native backend's netwatch filter watches: `connect`, `sendmsg`, `sendmmsg`,
/// `sendto` with a destination, and packet or raw sockets.
pub(crate) fn watch_rules() -> Vec<Value> {
    vec![
        json!({"names": ["connect", "sendmsg", "sendmmsg"], "action": "SCMP_ACT_NOTIFY"}),
        json!({"names": ["sendto"], "action": "SCMP_ACT_NOTIFY",
               "args": [{"index": 4, "value": 0, "op": "SCMP_CMP_NE"}]}),
        json!({"names": ["socket"], "action": "SCMP_ACT_NOTIFY",
               "args": [{"index": 0, "value": libc::AF_PACKET, "op": "SCMP_CMP_EQ"}]}),
        // value is the mask, valueTwo the datum (libseccomp's order).
        json!({"names": ["socket"], "action": "SCMP_ACT_NOTIFY",
               "args": [{"index": 1, "value": 0xf, "valueTwo": libc::SOCK_RAW, "op": "SCMP_CMP_MASKED_EQ"}]}),
    ]
}

/// The obsolete socket type (libc deprecates the constant, not the kernel
/// the type).
const SOCK_PACKET: i32 = 10;

/// Socket families one past the highest the kernel knows (AF_MCTP is 45);
/// everything from here up is refused by one rule.
const FAMILY_CEILING: i32 = 64;

/// Allowlist mode's sockets where the relay runs inside the sandbox (gVisor,
/// the Docker-API backend) and no netwatch listener can refuse them: the
/// native backend's filter (`SocketRule::UnixAndInet`) as profile rules.
/// AF_UNIX, AF_INET and AF_INET6 (the relay's ports are on loopback), netlink
/// for NETLINK_ROUTE only; every other family answers EAFNOSUPPORT, as does
/// inet's obsolete SOCK_PACKET. Raw inet sockets and ICMP datagram ("ping")
/// sockets are refused with EACCES, what the kernel answers by default:
/// dockerd opens ping sockets to every group (`net.ipv4.ping_group_range`),
/// and gVisor lets the sandbox's root make raw ones. What all of it keeps from
/// the command is the code behind those families; none of them has a route
/// out of the sandbox's own loopback. (The installed runsc answers every such
/// rule with EPERM, whatever errnoRet says.)
pub fn relay_socket_rules() -> Vec<serde_json::Value> {
    use serde_json::json;
    let mut rules = family_rules(&[
        libc::AF_UNIX,
        libc::AF_INET,
        libc::AF_INET6,
        libc::AF_NETLINK,
    ]);
    for (family, proto) in [
        (libc::AF_INET, libc::IPPROTO_ICMP),
        (libc::AF_INET6, libc::IPPROTO_ICMPV6),
    ] {
        rules.push(refuse_socket(
            json!([{"index": 0, "value": family, "op": "SCMP_CMP_EQ"},
                   {"index": 1, "value": 0xf, "valueTwo": libc::SOCK_RAW, "op": "SCMP_CMP_MASKED_EQ"}]),
            libc::EACCES,
        ));
        rules.push(refuse_socket(
            json!([{"index": 0, "value": family, "op": "SCMP_CMP_EQ"},
                   {"index": 2, "value": proto, "op": "SCMP_CMP_EQ"}]),
            libc::EACCES,
        ));
    }
    rules
}

/// Allowlist mode under crun and runc, where netwatch answers the watched
/// calls ([`watch_rules`]): the native backend's `SocketRule::UnixAndInet`
/// with AF_PACKET let through to netwatch, which refuses and logs it (an
/// ERRNO rule would win over its notification), as natively. The container
/// is in the helper's empty network namespace, but netlink families other
/// than NETLINK_ROUTE, and every other family, are code of the host's kernel
/// the native backend keeps from the command too.
pub fn netwatch_socket_rules() -> Vec<serde_json::Value> {
    family_rules(&[
        libc::AF_UNIX,
        libc::AF_INET,
        libc::AF_INET6,
        libc::AF_NETLINK,
        libc::AF_PACKET,
    ])
}

/// Network mode open under crun, runc and the Docker-API backend: the native
/// backend's `SocketRule::Any`. Every family but AF_PACKET (AF_VSOCK is
/// refused in every mode by [`seccomp_profile`]), netlink for NETLINK_ROUTE
/// only (no NETLINK_XFRM, audit or uevent on the host's namespace), no
/// inet SOCK_PACKET. A filter sees no socket address, so the host's abstract
/// unix sockets (the container shares the host's network namespace) are
/// left to landlock: on oci the runtime starts in a domain that scopes them
/// (`helper::run_container`); on docker they stay reachable, and the
/// capability report says so.
pub fn open_socket_rules() -> Vec<serde_json::Value> {
    use serde_json::json;
    let mut rules = vec![refuse_socket(
        json!([{"index": 0, "value": libc::AF_PACKET, "op": "SCMP_CMP_EQ"}]),
        libc::EAFNOSUPPORT,
    )];
    rules.extend(netlink_and_packet_rules());
    rules
}

/// One rule refusing `socket` and `socketpair` with `errno` where `args` hold.
fn refuse_socket(args: serde_json::Value, errno: i32) -> serde_json::Value {
    serde_json::json!({"names": ["socket", "socketpair"], "action": "SCMP_ACT_ERRNO",
                       "errnoRet": errno, "args": args})
}

/// Every socket family but `allowed` refused (EAFNOSUPPORT, as natively),
/// with [`netlink_and_packet_rules`].
fn family_rules(allowed: &[i32]) -> Vec<serde_json::Value> {
    use serde_json::json;
    // One rule per family: a rule's conditions are all required, so "none of
    // these" cannot be one rule.
    let mut rules: Vec<serde_json::Value> = (0..FAMILY_CEILING)
        .filter(|f| !allowed.contains(f))
        .map(|f| {
            refuse_socket(
                json!([{"index": 0, "value": f, "op": "SCMP_CMP_EQ"}]),
                libc::EAFNOSUPPORT,
            )
        })
        .collect();
    rules.push(refuse_socket(
        json!([{"index": 0, "value": FAMILY_CEILING, "op": "SCMP_CMP_GE"}]),
        libc::EAFNOSUPPORT,
    ));
    rules.extend(netlink_and_packet_rules());
    rules
}

/// Netlink for NETLINK_ROUTE only, and no inet SOCK_PACKET, in every mode
/// that has more than AF_UNIX (the native filter's own two exceptions).
fn netlink_and_packet_rules() -> Vec<serde_json::Value> {
    use serde_json::json;
    vec![
        refuse_socket(
            json!([{"index": 0, "value": libc::AF_NETLINK, "op": "SCMP_CMP_EQ"},
                   {"index": 2, "value": libc::NETLINK_ROUTE, "op": "SCMP_CMP_NE"}]),
            libc::EAFNOSUPPORT,
        ),
        // The kernel rewrites AF_INET + SOCK_PACKET into AF_PACKET.
        // value is the mask, valueTwo the datum (libseccomp's order).
        refuse_socket(
            json!([{"index": 0, "value": libc::AF_INET, "op": "SCMP_CMP_EQ"},
                   {"index": 1, "value": 0xf, "valueTwo": SOCK_PACKET, "op": "SCMP_CMP_MASKED_EQ"}]),
            libc::EAFNOSUPPORT,
        ),
    ]
}

/// The OCI seccomp profile; `unix_only` (network none) refuses every socket
/// family but AF_UNIX, as the native backend does.
pub(crate) fn seccomp_profile(unix_only: bool, runtime: Runtime) -> Value {
    let mut rules = vec![
        json!({"names": SECCOMP_DENY, "action": "SCMP_ACT_ERRNO", "errnoRet": libc::EPERM}),
        // As under the native backend: io_uring does not exist.
        json!({"names": ["io_uring_setup", "io_uring_enter", "io_uring_register"],
               "action": "SCMP_ACT_ERRNO", "errnoRet": libc::ENOSYS}),
    ];
    if unix_only {
        rules.push(json!({
            "names": ["socket"], "action": "SCMP_ACT_ERRNO", "errnoRet": libc::EAFNOSUPPORT,
            "args": [{"index": 0, "value": libc::AF_UNIX, "op": "SCMP_CMP_NE"}]
        }));
    } else {
        // AF_VSOCK reaches the host whatever the network namespace.
        rules.push(json!({
            "names": ["socket"], "action": "SCMP_ACT_ERRNO", "errnoRet": libc::EAFNOSUPPORT,
            "args": [{"index": 0, "value": libc::AF_VSOCK, "op": "SCMP_CMP_EQ"}]
        }));
    }
    // clone with any new-namespace flag (one rule per flag: the conditions
    // of one rule are all required); clone3 cannot be inspected, so it
    // reports ENOSYS and libc falls back to clone.
    for flag in CLONE_NEW_FLAGS {
        rules.push(json!({
            "names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": libc::EPERM,
            "args": [{"index": 0, "value": flag, "valueTwo": flag, "op": "SCMP_CMP_MASKED_EQ"}]
        }));
    }
    // The installed runsc answers every SCMP_ACT_ERRNO rule with EPERM
    // (errnoRet is ignored), and glibc falls back from clone3 to clone only on
    // ENOSYS, so a clone3 rule would break every thread. Its Sentry has no
    // clone3 and answers ENOSYS itself (escape case priv_userns_nested
    // asserts that answer, so a runsc that gains clone3 is caught there).
    if !runtime.is_gvisor() {
        rules.push(
            json!({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": libc::ENOSYS}),
        );
    }
    json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        // Only the native ABI: i386 (int 0x80) and x32 calls meet the
        // runtime's bad-architecture action.
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": rules
    })
}

fn bind(src: &Path, dst: &Path, ro: bool) -> Value {
    let mut options = vec!["rbind", "nosuid", "nodev"];
    if ro {
        options.push("ro");
    }
    json!({"destination": dst, "type": "bind", "source": src, "options": options})
}

fn fail(detail: impl Into<String>) -> String {
    detail.into()
}

/// A hidden path under gVisor: an empty read-only tmpfs over a directory.
/// (runsc ignores `linux.maskedPaths`.) A hidden file, or a path missing from
/// what the workspace shows, is refused: there is no empty file to bind.
fn gvisor_hide(path: &Path, spec: &SandboxSpec, staged: &Staged) -> Result<Value, String> {
    let shown = path
        .strip_prefix(&spec.workspace.root)
        .map(|rel| staged.workspace.join(rel))
        .unwrap_or_else(|_| path.to_path_buf());
    let is_dir = std::fs::symlink_metadata(&shown)
        .map(|m| m.is_dir())
        .unwrap_or(false);
    if !is_dir {
        return Err(fail(format!(
            "hidden path {} cannot be hidden under gVisor: this runsc does not apply \
             linux.maskedPaths, and only a directory can be covered with an empty mount; \
             Hint: hide its directory instead, or use another backend",
            path.display()
        )));
    }
    Ok(
        json!({"destination": path, "type": "tmpfs", "source": "tmpfs",
              "options": ["ro", "nosuid", "nodev", "noexec", "mode=000", "size=4096"]}),
    )
}

/// The mounts of the workspace at `root` from `staged` (see the module docs).
pub(crate) fn workspace_mounts(
    root: &Path,
    mode: WorkspaceMode,
    protect: &[PathBuf],
    staged: &Path,
    mounts: &mut Vec<Value>,
) -> Result<(), String> {
    mounts.push(bind(staged, root, mode == WorkspaceMode::Ro));
    if mode != WorkspaceMode::Rw {
        return Ok(());
    }
    // rw: every directory between the root and a protected path becomes a
    // mount point of its own (the kernel refuses to rename a mount point, so
    // `.git` cannot be moved aside and rebuilt), then the protected paths are
    // bound read-only.
    let mut pinned: Vec<PathBuf> = Vec::new();
    for p in protect {
        let Some(rel) = crate::view::relative_inside(p) else {
            return Err(fail(format!(
                "protected path {}: must stay inside the workspace",
                p.display()
            )));
        };
        let ancestors: Vec<&Path> = rel
            .ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty())
            .collect();
        for a in ancestors.into_iter().rev() {
            let host = staged.join(a);
            let is_dir = std::fs::symlink_metadata(&host)
                .map(|m| m.is_dir())
                .unwrap_or(false);
            if !is_dir {
                break;
            }
            if !pinned.iter().any(|x| x == a) {
                mounts.push(bind(&host, &root.join(a), false));
                pinned.push(a.to_path_buf());
            }
        }
        let host = staged.join(&rel);
        match std::fs::symlink_metadata(&host) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(fail(format!(
                    "protected path {} is a symlink; Hint: use the overlay mode",
                    rel.display()
                )))
            }
            Ok(_) => mounts.push(bind(&host, &root.join(&rel), true)),
            Err(_) => {
                let parent = rel.parent().unwrap_or(Path::new(""));
                if !parent.as_os_str().is_empty() && staged.join(parent).is_dir() {
                    return Err(fail(format!(
                        "protected path {}: does not exist, so a read-only mount cannot keep it \
                         from being created in rw mode (create it, or use the overlay mode)",
                        rel.display()
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The bundle for `spec`'s view (`ops`), with the helper's `staged` sources.
pub fn translate(
    spec: &SandboxSpec,
    ops: &[ViewOp],
    staged: &Staged,
    runtime: Runtime,
) -> Result<Bundle, String> {
    let mut rootfs = Vec::new();
    let mut mounts: Vec<Value> = Vec::new();
    let mut masked: Vec<PathBuf> = Vec::new();
    let mut readonly: Vec<PathBuf> = Vec::new();
    let dev = Path::new("/dev");
    for op in ops {
        match op {
            // The runtime makes /dev's links (fd, stdin, stdout, stderr, ptmx).
            ViewOp::Symlink { link, .. } if link.starts_with(dev) => {}
            ViewOp::Symlink { link, target } => rootfs.push(RootfsEntry::Symlink {
                link: link.clone(),
                target: target.clone(),
            }),
            ViewOp::WriteFile { path, content } => rootfs.push(RootfsEntry::File {
                path: path.clone(),
                content: content.clone(),
            }),
            ViewOp::BindRo { src, dst } => {
                let src = staged
                    .read_paths
                    .iter()
                    .find(|(d, _)| d == dst)
                    .map_or(src, |(_, s)| s);
                mounts.push(bind(src, dst, true));
            }
            ViewOp::Prepared { src, dst } => mounts.push(bind(src, dst, true)),
            ViewOp::BindRw { dst, .. } => {
                let src = staged
                    .write_paths
                    .iter()
                    .find(|(d, _)| d == dst)
                    .map(|(_, s)| s)
                    .ok_or_else(|| fail(format!("write path {} was not staged", dst.display())))?;
                mounts.push(bind(src, dst, false));
            }
            ViewOp::Tmpfs {
                path,
                mode,
                size_bytes,
                inodes,
                flags,
                owner: _,
            } => {
                // In the container's user namespace the mounter is sandbox
                // root, so every tmpfs (the home too) already belongs to it.
                let mut options = vec!["nosuid".to_string()];
                if flags.nodev {
                    options.push("nodev".into());
                }
                if flags.noexec {
                    options.push("noexec".into());
                }
                options.push(format!("mode={mode:o}"));
                options.push(format!("size={size_bytes}"));
                if let Some(n) = inodes {
                    options.push(format!("nr_inodes={n}"));
                }
                mounts.push(json!({"destination": path, "type": "tmpfs", "source": "tmpfs", "options": options}));
            }
            // null, zero, full, random, urandom (and tty) are the runtime's
            // default devices.
            ViewOp::Device { .. } => {}
            ViewOp::Devpts { path } => mounts.push(json!({
                "destination": path, "type": "devpts", "source": "devpts",
                "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]
            })),
            ViewOp::Proc { path } => mounts.push(json!({
                "destination": path, "type": "proc", "source": "proc",
                "options": ["nosuid", "nodev", "noexec"]
            })),
            ViewOp::ReadOnly { path } => readonly.push(path.clone()),
            // The installed runsc (2022) does not apply maskedPaths to the
            // guest, so a hidden path becomes a mount of its own.
            ViewOp::Hide { path } if runtime.is_gvisor() => {
                mounts.push(gvisor_hide(path, spec, staged)?)
            }
            ViewOp::Mask { path } | ViewOp::Hide { path } => masked.push(path.clone()),
            ViewOp::Workspace {
                root,
                mode,
                protect,
            } => workspace_mounts(root, *mode, protect, &staged.workspace, &mut mounts)?,
            // OCI runtimes: the proxy socket stays on the host, and the
            // helper's relay serves the container's network namespace from
            // outside. gVisor: the socket and the relay are bound inside.
            ViewOp::ProxySocket { dst, .. } => {
                if let Some(Egress::GuestRelay { socket, relay }) = &staged.egress {
                    mounts.push(bind(socket, dst, true));
                    mounts.push(bind(relay, Path::new(relay::BINARY_IN_SANDBOX), true));
                }
            }
        }
    }
    let mut namespaces = vec![
        json!({"type": "pid"}),
        json!({"type": "ipc"}),
        json!({"type": "uts"}),
        json!({"type": "mount"}),
        json!({"type": "user"}),
        json!({"type": "cgroup"}),
    ];
    let egress = match (&spec.network, &staged.egress) {
        (NetworkSpec::Proxy { .. }, Some(e)) => Some(e),
        (NetworkSpec::Proxy { .. }, None) => {
            return Err(fail(
                "network allowlist mode needs the helper's relay, which was not prepared",
            ))
        }
        _ => None,
    };
    // Each runtime gets the relay that can serve it, never the other.
    match (egress, runtime.is_gvisor()) {
        (Some(Egress::HostRelay { .. }), true) | (Some(Egress::GuestRelay { .. }), false) => {
            return Err(fail(format!(
                "network allowlist mode: the relay prepared does not fit {}",
                runtime.exe_name()
            )))
        }
        _ => {}
    }
    match egress {
        Some(Egress::HostRelay { netns, .. }) => {
            namespaces.push(json!({"type": "network", "path": netns}))
        }
        _ if crate::view::isolated_network(spec) => namespaces.push(json!({"type": "network"})),
        _ => {}
    }
    let rl = RlimitSpec::from_limits(&spec.limits);
    let mut rlimits: Vec<Value> = rl
        .entries()
        .iter()
        .map(|(_, soft, hard, name)| json!({"type": name, "soft": soft, "hard": hard}))
        .collect();
    // Processes of sandbox root in its own user namespace (gVisor's Sentry
    // applies it to the guest's processes, which no host cgroup sees).
    let nproc = u64::from(spec.limits.pids);
    rlimits.push(json!({"type": "RLIMIT_NPROC", "soft": nproc, "hard": nproc}));
    let mut env_pairs = spec.env.clone();
    if egress.is_some() {
        for (k, v) in relay::proxy_env(relay::HTTP_PORT, relay::SOCKS_PORT) {
            env_pairs.retain(|(n, _)| *n != k);
            env_pairs.push((k, v));
        }
    }
    let env: Vec<String> = env_pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let no_caps: Vec<&str> = Vec::new();
    let mut linux = json!({
        "namespaces": namespaces,
        "uidMappings": [{"containerID": 0, "hostID": staged.root_host_id, "size": 1}],
        "gidMappings": [{"containerID": 0, "hostID": staged.root_host_id, "size": 1}],
        "maskedPaths": masked,
        "readonlyPaths": readonly,
        "seccomp": seccomp_profile(matches!(spec.network, NetworkSpec::None), runtime),
    });
    // gVisor has no seccomp user notification: direct attempts there fail
    // for want of a route and are not watched; what netwatch would refuse
    // besides is refused outright.
    match egress {
        Some(Egress::HostRelay {
            seccomp_listener, ..
        }) => {
            let seccomp = &mut linux["seccomp"];
            if let Some(rules) = seccomp["syscalls"].as_array_mut() {
                rules.extend(watch_rules());
                rules.extend(netwatch_socket_rules());
            }
            seccomp["listenerPath"] = json!(seccomp_listener);
        }
        Some(Egress::GuestRelay { .. }) => {
            if let Some(rules) = linux["seccomp"]["syscalls"].as_array_mut() {
                rules.extend(relay_socket_rules());
            }
        }
        // Open mode under crun and runc: the native backend's families.
        // (runsc has its own network stack; its rules are left as they were.)
        None if matches!(spec.network, NetworkSpec::Open) && !runtime.is_gvisor() => {
            if let Some(rules) = linux["seccomp"]["syscalls"].as_array_mut() {
                rules.extend(open_socket_rules());
            }
        }
        None => {}
    }
    let args = match egress {
        // The relay binds the guest's loopback ports, then runs the command.
        Some(Egress::GuestRelay { .. }) => relay::exec_args(&spec.argv),
        _ => spec.argv.clone(),
    };
    if matches!(runtime, Runtime::Runc | Runtime::Youki) {
        // Relative: below the run cgroup the runtime is started in.
        linux["cgroupsPath"] = json!(format!("airlock-{}", spec.request_id));
    }
    if runtime == Runtime::Youki {
        // youki 0.7 reads a relative cgroupsPath from the hierarchy's root,
        // not from the cgroup it starts in: the container leaves the run's
        // cgroup and its limits. youki applies them itself to the cgroup it
        // makes (airlock's peak memory, CPU time and pids-limit reports then
        // miss the container).
        let l = &spec.limits;
        linux["resources"] = json!({
            "memory": {"limit": l.memory_bytes},
            "pids": {"limit": l.pids},
            "cpu": {"quota": (l.cpus * 100_000.0) as i64, "period": 100_000u64},
        });
    }
    let config = json!({
        "ociVersion": "1.0.2",
        "process": {
            "terminal": false,
            "user": {"uid": 0, "gid": 0},
            "args": args,
            "env": env,
            "cwd": spec.cwd,
            "capabilities": {
                "bounding": no_caps, "effective": no_caps, "inheritable": no_caps,
                "permitted": no_caps, "ambient": no_caps
            },
            "rlimits": rlimits,
            "noNewPrivileges": true,
        },
        "root": {"path": "rootfs", "readonly": true},
        "hostname": "airlock",
        "mounts": mounts,
        "linux": linux,
    });
    Ok(Bundle { config, rootfs })
}

/// Adds (or tightens) `name` in the bundle's `process.rlimits`, soft and hard.
pub(crate) fn add_rlimit(config: &mut Value, name: &str, value: u64) {
    let Some(list) = config["process"]["rlimits"].as_array_mut() else {
        return;
    };
    list.retain(|r| r["type"] != name);
    list.push(json!({"type": name, "soft": value, "hard": value}));
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::view::{self, ViewInput};
    use crate::GIT_CONFIG_FILE;

    fn spec(ws: &Path) -> SandboxSpec {
        SandboxSpec {
            request_id: "r1".into(),
            argv: vec!["sh".into(), "-c".into(), "true".into()],
            cwd: ws.to_path_buf(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            workspace: crate::WorkspaceSpec {
                root: ws.to_path_buf(),
                mode: WorkspaceMode::Overlay,
                protect: vec![".git/hooks".into()],
                apply: false,
                changes: Default::default(),
                owned: vec![],
                keep: None,
                list: None,
                home: None,
            },
            network: NetworkSpec::None,
            limits: crate::Limits {
                timeout_ms: 1000,
                cpu_time_ms: 2500,
                memory_bytes: 256 << 20,
                pids: 64,
                cpus: 1.0,
                output_bytes: 1 << 20,
                tmp_bytes: 32 << 20,
                file_size_bytes: 1 << 20,
                open_files: 256,
            },
            read_paths: vec![],
            write_paths: vec![],
            hide_paths: vec![ws.join("secret")],
            stdin: None,
            limit_enforcement: Default::default(),
            git_config: String::new(),
        }
    }

    fn bundle_of(spec: &SandboxSpec, staged: &Path, runtime: Runtime) -> Result<Bundle, String> {
        bundle_with(spec, staged, runtime, None)
    }

    fn bundle_with(
        spec: &SandboxSpec,
        staged: &Path,
        runtime: Runtime,
        egress: Option<Egress>,
    ) -> Result<Bundle, String> {
        let ops = view::plan(
            &ViewInput {
                spec,
                run_dir: Path::new("/var/lib/airlock/runs/r1"),
                passwd: view::PASSWD,
                group: view::GROUP,
            },
            &view::RealHost,
        );
        translate(
            spec,
            &ops,
            &Staged {
                workspace: staged.to_path_buf(),
                write_paths: vec![],
                read_paths: vec![],
                egress,
                root_host_id: HOST_ID,
            },
            runtime,
        )
    }

    fn mount_at<'a>(config: &'a Value, dst: &str) -> Option<&'a Value> {
        config["mounts"]
            .as_array()?
            .iter()
            .find(|m| m["destination"] == dst)
    }

    #[test]
    fn rootless_maps_sandbox_root_to_the_helpers_root_and_rlimits_can_be_added() {
        let d = tempfile::tempdir().unwrap();
        let mut s = spec(d.path());
        // A hidden file cannot be covered under gVisor (another test).
        s.hide_paths.clear();
        let ops = view::plan(
            &ViewInput {
                spec: &s,
                run_dir: Path::new("/var/lib/airlock/runs/r1"),
                passwd: view::PASSWD,
                group: view::GROUP,
            },
            &view::RealHost,
        );
        let staged = Staged {
            workspace: d.path().to_path_buf(),
            write_paths: vec![],
            read_paths: vec![],
            egress: None,
            root_host_id: 0,
        };
        let mut b = translate(&s, &ops, &staged, gvisor()).unwrap();
        assert_eq!(b.config["linux"]["uidMappings"][0]["hostID"], 0);
        assert_eq!(b.config["linux"]["gidMappings"][0]["hostID"], 0);
        add_rlimit(&mut b.config, "RLIMIT_AS", 1 << 28);
        add_rlimit(&mut b.config, "RLIMIT_AS", 1 << 27);
        let as_limits: Vec<&Value> = b.config["process"]["rlimits"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["type"] == "RLIMIT_AS")
            .collect();
        assert_eq!(as_limits.len(), 1);
        assert_eq!(as_limits[0]["hard"], 1u64 << 27);
    }

    #[test]
    fn the_view_becomes_a_locked_down_bundle() {
        let s = spec(Path::new("/w"));
        let b = bundle_of(&s, Path::new("/run/airlock/oci/r1/merged"), Runtime::Crun).unwrap();
        let c = &b.config;
        assert_eq!(c["root"]["readonly"], true);
        assert_eq!(c["process"]["noNewPrivileges"], true);
        assert_eq!(c["process"]["capabilities"]["bounding"], json!([]));
        assert_eq!(c["process"]["user"]["uid"], 0);
        assert_eq!(c["linux"]["uidMappings"][0]["hostID"], HOST_ID);
        let ns: Vec<&str> = c["linux"]["namespaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["type"].as_str().unwrap())
            .collect();
        for t in ["pid", "network", "ipc", "uts", "mount", "user", "cgroup"] {
            assert!(ns.contains(&t), "{t} missing from {ns:?}");
        }
        // The workspace is the staged overlay, at its own path.
        let ws = mount_at(c, "/w").unwrap();
        assert_eq!(ws["source"], "/run/airlock/oci/r1/merged");
        assert!(!ws["options"].as_array().unwrap().contains(&json!("ro")));
        // /tmp is capped by limits.tmp; the hidden path and /proc/kcore are masked.
        let tmp = mount_at(c, "/tmp").unwrap();
        assert!(tmp["options"]
            .as_array()
            .unwrap()
            .contains(&json!("size=33554432")));
        let masked = c["linux"]["maskedPaths"].as_array().unwrap();
        assert!(masked.contains(&json!("/w/secret")) && masked.contains(&json!("/proc/kcore")));
        assert!(c["linux"]["readonlyPaths"]
            .as_array()
            .unwrap()
            .contains(&json!("/proc/sys")));
        // Limits that are rlimits.
        let rl = c["process"]["rlimits"].as_array().unwrap();
        assert!(rl.contains(&json!({"type": "RLIMIT_CPU", "soft": 3, "hard": 4})));
        assert!(rl.contains(&json!({"type": "RLIMIT_NPROC", "soft": 64, "hard": 64})));
        // The generated /etc files go into the root filesystem; /dev's links are the runtime's.
        assert!(b.rootfs.iter().any(
            |e| matches!(e, RootfsEntry::File { path, .. } if path == Path::new(GIT_CONFIG_FILE))
        ));
        assert!(!b
            .rootfs
            .iter()
            .any(|e| matches!(e, RootfsEntry::Symlink { link, .. } if link.starts_with("/dev"))));
        // crun runs in airlock's cgroup: no cgroupsPath; runc gets a relative one.
        assert!(c["linux"].get("cgroupsPath").is_none());
        let r = bundle_of(&s, Path::new("/m"), Runtime::Runc).unwrap();
        assert_eq!(r.config["linux"]["cgroupsPath"], "airlock-r1");
    }

    #[test]
    fn seccomp_refuses_namespaces_mounts_and_kernel_knobs() {
        let s = spec(Path::new("/w"));
        let b = bundle_of(&s, Path::new("/m"), Runtime::Crun).unwrap();
        let sc = &b.config["linux"]["seccomp"];
        assert_eq!(sc["defaultAction"], "SCMP_ACT_ALLOW");
        let rules = sc["syscalls"].as_array().unwrap();
        let denied = rules[0]["names"].as_array().unwrap();
        for name in [
            "mount",
            "unshare",
            "setns",
            "bpf",
            "keyctl",
            "ptrace",
            "userfaultfd",
        ] {
            assert!(denied.contains(&json!(name)), "{name}");
        }
        let user_ns = rules
            .iter()
            .find(|r| r["args"][0]["value"] == json!(0x1000_0000u64))
            .expect("clone(CLONE_NEWUSER) refused");
        assert_eq!(user_ns["args"][0]["op"], "SCMP_CMP_MASKED_EQ");
        assert_eq!(user_ns["args"][0]["valueTwo"], json!(0x1000_0000u64));
    }

    #[test]
    fn open_network_shares_the_host_netns_and_allowlist_is_refused() {
        let mut s = spec(Path::new("/w"));
        s.network = NetworkSpec::Open;
        let b = bundle_of(&s, Path::new("/m"), Runtime::Crun).unwrap();
        assert!(!b.config["linux"]["namespaces"]
            .as_array()
            .unwrap()
            .contains(&json!({"type": "network"})));
        s.network = NetworkSpec::Proxy {
            socket: "/run/p.sock".into(),
        };
        let e = bundle_of(&s, Path::new("/m"), Runtime::Crun).unwrap_err();
        assert!(e.contains("relay"), "{e}");
    }

    /// Whether `rules` refuse `socket(family, type, proto)`, read as
    /// libseccomp would (every condition of a rule must hold).
    pub(crate) fn refuses_socket(rules: &[Value], family: i32, ty: i32, proto: i32) -> bool {
        let arg = [family as i64, ty as i64, proto as i64];
        rules.iter().any(|r| {
            r["action"] == "SCMP_ACT_ERRNO"
                && r["names"]
                    .as_array()
                    .is_some_and(|n| n.contains(&json!("socket")))
                && r["args"].as_array().is_some_and(|args| {
                    args.iter().all(|a| {
                        let v = arg[a["index"].as_u64().unwrap() as usize];
                        let x = a["value"].as_i64().unwrap();
                        match a["op"].as_str().unwrap() {
                            "SCMP_CMP_EQ" => v == x,
                            "SCMP_CMP_NE" => v != x,
                            "SCMP_CMP_GE" => v >= x,
                            "SCMP_CMP_MASKED_EQ" => v & x == a["valueTwo"].as_i64().unwrap(),
                            op => panic!("{op}"),
                        }
                    })
                })
        })
    }

    #[test]
    fn open_mode_takes_the_native_open_families_under_crun_and_runc() {
        let mut s = spec(Path::new("/w"));
        s.network = NetworkSpec::Open;
        for runtime in [Runtime::Crun, Runtime::Runc] {
            let b = bundle_of(&s, Path::new("/m"), runtime).unwrap();
            let rules = b.config["linux"]["seccomp"]["syscalls"]
                .as_array()
                .unwrap()
                .clone();
            let refused = |f, t, p| refuses_socket(&rules, f, t, p);
            // Refused as natively: packet, vsock, netlink but route, inet's
            // SOCK_PACKET.
            assert!(refused(
                libc::AF_NETLINK,
                libc::SOCK_RAW,
                libc::NETLINK_XFRM
            ));
            assert!(refused(
                libc::AF_NETLINK,
                libc::SOCK_RAW,
                libc::NETLINK_AUDIT
            ));
            assert!(refused(libc::AF_PACKET, libc::SOCK_RAW, 0));
            assert!(refused(libc::AF_VSOCK, libc::SOCK_STREAM, 0));
            assert!(refused(libc::AF_INET, SOCK_PACKET, 0));
            // What open mode is for.
            assert!(!refused(
                libc::AF_NETLINK,
                libc::SOCK_RAW,
                libc::NETLINK_ROUTE
            ));
            assert!(!refused(libc::AF_INET, libc::SOCK_STREAM, 0));
            assert!(!refused(libc::AF_INET6, libc::SOCK_DGRAM, 0));
            assert!(!refused(libc::AF_UNIX, libc::SOCK_STREAM, 0));
        }
        // runsc's own network stack: its profile is left as it was.
        s.hide_paths.clear();
        let b = bundle_of(&s, Path::new("/m"), gvisor()).unwrap();
        let rules = b.config["linux"]["seccomp"]["syscalls"]
            .as_array()
            .unwrap()
            .clone();
        assert!(!refuses_socket(
            &rules,
            libc::AF_NETLINK,
            libc::SOCK_RAW,
            libc::NETLINK_XFRM
        ));
    }

    #[test]
    fn allowlist_under_netwatch_takes_the_native_families_and_leaves_packet_to_netwatch() {
        let mut s = spec(Path::new("/w"));
        s.network = NetworkSpec::Proxy {
            socket: "/run/p.sock".into(),
        };
        let egress = Egress::HostRelay {
            netns: "/proc/42/ns/net".into(),
            seccomp_listener: "/run/airlock-oci/r1/seccomp.sock".into(),
        };
        let b = bundle_with(&s, Path::new("/m"), Runtime::Crun, Some(egress)).unwrap();
        let rules = b.config["linux"]["seccomp"]["syscalls"]
            .as_array()
            .unwrap()
            .clone();
        let refused = |f, t, p| refuses_socket(&rules, f, t, p);
        assert!(refused(
            libc::AF_NETLINK,
            libc::SOCK_RAW,
            libc::NETLINK_XFRM
        ));
        assert!(refused(libc::AF_BLUETOOTH, libc::SOCK_STREAM, 0));
        assert!(refused(libc::AF_ALG, libc::SOCK_SEQPACKET, 0));
        assert!(refused(100, libc::SOCK_STREAM, 0));
        // netwatch sees (refuses and logs) packet sockets, as natively.
        assert!(!refused(libc::AF_PACKET, libc::SOCK_RAW, 0));
        assert!(!refused(libc::AF_INET, libc::SOCK_STREAM, 0));
        assert!(!refused(libc::AF_UNIX, libc::SOCK_STREAM, 0));
    }

    #[test]
    fn allowlist_joins_the_helpers_namespace_and_watches_direct_attempts() {
        let mut s = spec(Path::new("/w"));
        s.network = NetworkSpec::Proxy {
            socket: "/run/p.sock".into(),
        };
        s.env
            .push(("HTTP_PROXY".into(), "http://elsewhere:1".into()));
        let egress = Egress::HostRelay {
            netns: "/proc/42/ns/net".into(),
            seccomp_listener: "/run/airlock-oci/r1/seccomp.sock".into(),
        };
        let b = bundle_with(&s, Path::new("/m"), Runtime::Runc, Some(egress)).unwrap();
        let linux = &b.config["linux"];
        assert!(linux["namespaces"]
            .as_array()
            .unwrap()
            .contains(&json!({"type": "network", "path": "/proc/42/ns/net"})));
        // Nothing of the proxy is bound into the container.
        assert!(!b.config.to_string().contains("/run/p.sock"));
        let env = b.config["process"]["env"].as_array().unwrap();
        assert!(env.contains(&json!("HTTP_PROXY=http://127.0.0.1:3128")));
        assert!(!env.contains(&json!("HTTP_PROXY=http://elsewhere:1")));
        assert!(env.contains(&json!("ALL_PROXY=socks5h://127.0.0.1:1080")));
        assert_eq!(
            linux["seccomp"]["listenerPath"],
            "/run/airlock-oci/r1/seccomp.sock"
        );
        let rules = linux["seccomp"]["syscalls"].as_array().unwrap();
        let notified: Vec<&str> = rules
            .iter()
            .filter(|r| r["action"] == "SCMP_ACT_NOTIFY")
            .flat_map(|r| r["names"].as_array().unwrap())
            .filter_map(|n| n.as_str())
            .collect();
        for call in ["connect", "sendmsg", "sendmmsg", "sendto", "socket"] {
            assert!(notified.contains(&call), "{call} not watched: {notified:?}");
        }
        // AF_INET sockets exist in this mode (the program talks to the relay).
        assert!(!rules
            .iter()
            .any(|r| r["names"] == json!(["socket"])
                && r["args"][0]["value"] == json!(libc::AF_UNIX)));
    }

    fn gvisor() -> Runtime {
        use super::super::runtime::{Gvisor, GvisorPlatform, HostUds};
        Runtime::Runsc(Gvisor {
            platform: GvisorPlatform::Ptrace,
            host_uds: Some(HostUds::Open),
        })
    }

    #[test]
    fn gvisor_allowlist_binds_the_socket_and_relay_and_starts_the_relay_first() {
        let mut s = spec(Path::new("/w"));
        // (A hidden path under gVisor must be a directory that exists.)
        s.hide_paths.clear();
        s.network = NetworkSpec::Proxy {
            socket: "/var/lib/airlock/proxy/r1/proxy.sock".into(),
        };
        let egress = Egress::GuestRelay {
            socket: "/run/airlock-oci/r1/proxy.sock".into(),
            relay: "/run/airlock-oci/r1/relay".into(),
        };
        let b = bundle_with(&s, Path::new("/m"), gvisor(), Some(egress.clone())).unwrap();
        let c = &b.config;
        // The staged copies are bound read-only; the host path of the proxy's
        // own socket appears nowhere.
        let sock = mount_at(c, relay::SOCKET_IN_SANDBOX).expect("proxy socket bound");
        assert_eq!(sock["source"], "/run/airlock-oci/r1/proxy.sock");
        assert!(sock["options"].as_array().unwrap().contains(&json!("ro")));
        let bin = mount_at(c, relay::BINARY_IN_SANDBOX).expect("relay bound");
        assert_eq!(bin["source"], "/run/airlock-oci/r1/relay");
        assert!(bin["options"].as_array().unwrap().contains(&json!("ro")));
        assert!(!c.to_string().contains("/var/lib/airlock/proxy"));
        // The relay runs first, the command as its child.
        let args: Vec<&str> = c["process"]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(args[..2], [relay::BINARY_IN_SANDBOX, "exec"]);
        assert_eq!(args[args.len() - 3..], ["sh", "-c", "true"]);
        let env = c["process"]["env"].as_array().unwrap();
        assert!(env.contains(&json!("HTTPS_PROXY=http://127.0.0.1:3128")));
        // A network namespace of its own (runsc: its own stack), no joined
        // path, no watching rules (gVisor has no seccomp user notification),
        // and AF_INET sockets exist (the program talks to the relay).
        let linux = &c["linux"];
        assert!(linux["namespaces"]
            .as_array()
            .unwrap()
            .contains(&json!({"type": "network"})));
        assert!(linux["seccomp"].get("listenerPath").is_none());
        let rules = linux["seccomp"]["syscalls"].as_array().unwrap();
        assert!(!rules.iter().any(|r| r["action"] == "SCMP_ACT_NOTIFY"));
        // What netwatch would refuse is refused outright: raw and ping
        // sockets, packet sockets, netlink but NETLINK_ROUTE.
        for r in relay_socket_rules() {
            assert!(rules.contains(&r), "{r}");
        }
        let raw = |f: i32| {
            rules.iter().any(|r| {
                r["names"][0] == json!("socket")
                    && r["args"][0]["value"] == json!(f)
                    && r["args"][1]["valueTwo"] == json!(libc::SOCK_RAW)
            })
        };
        assert!(raw(libc::AF_INET) && raw(libc::AF_INET6));
        assert!(!rules
            .iter()
            .any(|r| r["names"] == json!(["socket"])
                && r["args"][0]["value"] == json!(libc::AF_UNIX)));
        // Each runtime only with the relay that can serve it.
        let e = bundle_with(&s, Path::new("/m"), Runtime::Crun, Some(egress)).unwrap_err();
        assert!(e.contains("does not fit crun"), "{e}");
        let host = Egress::HostRelay {
            netns: "/proc/42/ns/net".into(),
            seccomp_listener: "/x".into(),
        };
        let e = bundle_with(&s, Path::new("/m"), gvisor(), Some(host)).unwrap_err();
        assert!(e.contains("does not fit runsc"), "{e}");
        // Network none: neither the socket nor the relay.
        s.network = NetworkSpec::None;
        let b = bundle_of(&s, Path::new("/m"), gvisor()).unwrap();
        assert!(mount_at(&b.config, relay::BINARY_IN_SANDBOX).is_none());
        assert_eq!(b.config["process"]["args"], json!(["sh", "-c", "true"]));
    }

    #[test]
    fn gvisor_covers_a_hidden_directory_and_refuses_a_hidden_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("secret")).unwrap();
        let s = spec(Path::new("/w"));
        let gvisor = gvisor();
        let b = bundle_of(&s, dir.path(), gvisor).unwrap();
        let hide = mount_at(&b.config, "/w/secret").expect("hidden dir covered");
        assert_eq!(hide["type"], "tmpfs");
        assert!(hide["options"].as_array().unwrap().contains(&json!("ro")));
        // After the workspace, or the workspace's bind would cover it.
        let pos = |d: &str| {
            b.config["mounts"]
                .as_array()
                .unwrap()
                .iter()
                .position(|m| m["destination"] == d)
        };
        assert!(pos("/w") < pos("/w/secret"));
        // The same runsc's threads need clone3 to answer ENOSYS (no rule: the Sentry's own).
        let rules = b.config["linux"]["seccomp"]["syscalls"].as_array().unwrap();
        assert!(!rules.iter().any(|r| r["names"] == json!(["clone3"])));
        std::fs::remove_dir(dir.path().join("secret")).unwrap();
        std::fs::write(dir.path().join("secret"), "x").unwrap();
        let e = bundle_of(&s, dir.path(), gvisor).unwrap_err();
        assert!(e.contains("/w/secret") && e.contains("Hint:"), "{e}");
    }

    #[test]
    fn rw_mode_pins_parents_and_binds_protected_paths_read_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
        let mut s = spec(Path::new("/w"));
        s.workspace.mode = WorkspaceMode::Rw;
        let b = bundle_of(&s, dir.path(), Runtime::Crun).unwrap();
        let git = mount_at(&b.config, "/w/.git").expect(".git pinned");
        assert!(!git["options"].as_array().unwrap().contains(&json!("ro")));
        let hooks = mount_at(&b.config, "/w/.git/hooks").expect("hooks bound");
        assert!(hooks["options"].as_array().unwrap().contains(&json!("ro")));
        // A protected path missing under an existing parent cannot be held.
        std::fs::remove_dir(dir.path().join(".git/hooks")).unwrap();
        let e = bundle_of(&s, dir.path(), Runtime::Crun).unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
    }
}
