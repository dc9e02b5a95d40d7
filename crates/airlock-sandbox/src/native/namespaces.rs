//! Namespaces layer: the user namespaces that map sandbox root to an
//! unprivileged host uid, the flags of the sandbox's other namespaces, loopback
//! and hostname.
//!
//! The sandbox is built by real root in fresh mount, PID, network, IPC and UTS
//! namespaces (so that every mount is made with full privilege and is owned by
//! the initial user namespace, out of reach of anything inside); only then does
//! the sandbox's init enter its user namespace, whose root is host uid
//! [`SANDBOX_HOST_UID`]. The sandbox therefore holds no capability over any of
//! its other namespaces: it cannot mount, unmount, configure the network or set
//! the hostname, even as "root".

use crate::sys;
use crate::Layer;
use crate::SandboxError;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

/// Host uid and gid of root inside every sandbox (and of the command, or of
/// QEMU, under the docker and microvm backends). Not root, not a user in the
/// host's passwd; shared by concurrent sandboxes, which are kept apart by their
/// PID, IPC, network and mount namespaces.
///
/// A stranger only while no user may become it: Debian's and Ubuntu's
/// `useradd` delegates ranges of 65536 in /etc/subuid and /etc/subgid from
/// 100000 up to 600100000 (login.defs' SUB_UID_MIN, SUB_UID_MAX), the first
/// user getting exactly 100000, the id airlock once used. This one lies above
/// those defaults and above systemd's range for containers (up to
/// 1879048191), below its "foreign" range (from 2147352576) and below 2^31
/// (tools that keep uids signed). [`super::subid`] checks the host's own
/// delegations.
pub const SANDBOX_HOST_UID: u32 = 2_000_000_000;
pub const SANDBOX_HOST_GID: u32 = 2_000_000_000;

pub const LAYER: Layer = Layer::Namespaces;

fn layer(what: &str, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Layer {
        layer: LAYER,
        detail: format!("{what}: {e}"),
    }
}

/// Flags for the clone that creates the sandbox's init. The user namespace is
/// joined later (see the module docs); the cgroup namespace is unshared by init
/// once it is in its cgroup (born there on v2, joined by itself on v1).
pub fn init_clone_flags(isolate_network: bool) -> libc::c_int {
    let mut f = libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
    if isolate_network {
        f |= libc::CLONE_NEWNET;
    }
    f
}

/// A user namespace, held by fd, whose map sends `inside_uid`/`inside_gid` to
/// the sandbox's host uid/gid (one id each, nothing else mapped).
///
/// Made by a short-lived child cloned into a new user namespace: the helper
/// writes the maps (it is privileged in the parent namespace, so no `setgroups`
/// dance is needed), keeps an fd to the namespace and lets the child exit.
pub fn user_ns(inside_uid: u32, inside_gid: u32) -> Result<OwnedFd, SandboxError> {
    user_ns_to(inside_uid, inside_gid, SANDBOX_HOST_UID, SANDBOX_HOST_GID)
}

/// A user namespace, held by fd, mapping `inside_uid`/`inside_gid` to
/// `outside_uid`/`outside_gid` of the caller's own user namespace. In rootless
/// mode the helper's namespace maps 0 to the caller, and the sandbox's is made
/// with `user_ns_to(0, 0, 0, 0)`: root inside is the caller outside.
pub fn user_ns_to(
    inside_uid: u32,
    inside_gid: u32,
    outside_uid: u32,
    outside_gid: u32,
) -> Result<OwnedFd, SandboxError> {
    let child =
        sys::HeldChild::start(libc::CLONE_NEWUSER).map_err(|e| layer("clone(CLONE_NEWUSER)", e))?;
    let pid = child.pid();
    let result = (|| {
        let proc = Path::new("/proc").join(pid.to_string());
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            // An unprivileged writer may map only its own gid, and only once
            // setgroups is denied in the new namespace.
            std::fs::write(proc.join("setgroups"), "deny")
                .map_err(|e| layer("write setgroups", e))?;
        }
        std::fs::write(
            proc.join("uid_map"),
            format!("{inside_uid} {outside_uid} 1\n"),
        )
        .map_err(|e| layer("write uid_map", e))?;
        std::fs::write(
            proc.join("gid_map"),
            format!("{inside_gid} {outside_gid} 1\n"),
        )
        .map_err(|e| layer("write gid_map", e))?;
        sys::open(&proc.join("ns/user"), libc::O_RDONLY, 0).map_err(|e| layer("open ns/user", e))
    })();
    child.release();
    result
}

/// A new network namespace, held by fd, for init to join with `setns` (and
/// bring `lo` up in) instead of making one in its clone: a network namespace
/// costs about 0.35 ms to create here, and a helper forked in advance makes it
/// while the caller judges the command. Made as [`user_ns_to`] makes user
/// namespaces; owned by the helper's user namespace, as one made by init's
/// clone would be.
pub fn net_ns() -> Result<OwnedFd, SandboxError> {
    let child =
        sys::HeldChild::start(libc::CLONE_NEWNET).map_err(|e| layer("clone(CLONE_NEWNET)", e))?;
    let ns = sys::open(
        &Path::new("/proc")
            .join(child.pid().to_string())
            .join("ns/net"),
        libc::O_RDONLY,
        0,
    )
    .map_err(|e| layer("open ns/net", e));
    child.release();
    ns
}

/// Joins the sandbox user namespace and becomes its root (host uid
/// [`SANDBOX_HOST_UID`]). Supplementary groups are dropped first, while that is
/// still allowed (rootless mode: never, since an unprivileged user namespace
/// denies `setgroups`; `drop_groups` is then false). After this the process has capabilities only inside a
/// namespace that owns nothing else of the sandbox.
pub fn enter_user_ns(ns: &OwnedFd, drop_groups: bool) -> Result<(), SandboxError> {
    if drop_groups {
        // SAFETY: setgroups with a zero count reads no memory.
        sys::cvt(unsafe { libc::setgroups(0, std::ptr::null()) })
            .map_err(|e| layer("setgroups", e))?;
    }
    sys::setns(ns.as_raw_fd(), libc::CLONE_NEWUSER).map_err(|e| layer("setns(user)", e))?;
    // SAFETY: setresgid takes integers only.
    sys::cvt(unsafe { libc::setresgid(0, 0, 0) }).map_err(|e| layer("setresgid(0)", e))?;
    // SAFETY: setresuid takes integers only.
    sys::cvt(unsafe { libc::setresuid(0, 0, 0) }).map_err(|e| layer("setresuid(0)", e))?;
    Ok(())
}

#[repr(C)]
struct IfreqFlags {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Brings `lo` up in the current (new, empty) network namespace.
pub fn loopback_up() -> Result<(), SandboxError> {
    let err = |what: &str| SandboxError::Layer {
        layer: Layer::Network,
        detail: format!("{what}: {}", std::io::Error::last_os_error()),
    };
    // SAFETY: socket takes integers only.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if s < 0 {
        return Err(err("socket"));
    }
    let mut req = IfreqFlags {
        name: [0; libc::IFNAMSIZ],
        flags: 0,
        _pad: [0; 22],
    };
    req.name[..2].copy_from_slice(b"lo");
    // SAFETY: req is a live ifreq-sized struct the kernel reads and writes.
    let got = unsafe { libc::ioctl(s, libc::SIOCGIFFLAGS, &mut req as *mut IfreqFlags) };
    let result = if got < 0 {
        Err(err("SIOCGIFFLAGS lo"))
    } else {
        req.flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        // SAFETY: as above.
        let set = unsafe { libc::ioctl(s, libc::SIOCSIFFLAGS, &req as *const IfreqFlags) };
        if set < 0 {
            Err(err("SIOCSIFFLAGS lo up"))
        } else {
            Ok(())
        }
    };
    // SAFETY: s is the socket opened above.
    unsafe { libc::close(s) };
    result
}

pub fn set_hostname(name: &str) -> Result<(), SandboxError> {
    // SAFETY: name is a live buffer of name.len() bytes.
    sys::cvt(unsafe { libc::sethostname(name.as_ptr().cast(), name.len()) })
        .map_err(|e| layer("sethostname", e))?;
    Ok(())
}
