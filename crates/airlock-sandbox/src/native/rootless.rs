//! Rootless mode: the native backend run by an ordinary user.
//!
//! Chosen automatically when the caller is not root. The helper first enters a
//! user namespace of its own that maps the caller's uid and gid (and nothing
//! else) to root, together with a private mount namespace. There it holds every
//! capability over namespaces it owns, and builds the same sandbox as in root
//! mode: tmpfs root and `pivot_root`, overlayfs workspace, fresh `/proc`, PID,
//! network, IPC and UTS namespaces. The command then runs in a second, nested
//! user namespace (root inside = the caller outside), so it holds no capability
//! over any namespace of the sandbox, and every mount it inherits is locked.
//! No subordinate ids and no idmapped mounts are needed: files keep the
//! caller's ownership.
//!
//! What differs from root mode is listed in docs/sandbox.md, "Running
//! unprivileged": limits without a writable cgroup are rlimits (refused unless
//! the policy says `[limits] enforcement = "best_effort"`), the caller's
//! supplementary groups cannot be dropped (`setgroups` is denied in an
//! unprivileged user namespace), and the run directories live under
//! `$XDG_RUNTIME_DIR`.

use crate::sys;
use crate::Layer;
use crate::SandboxError;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub const LAYER: Layer = Layer::UserNamespace;

/// True when this process is not root on the host: the native backend then
/// runs in rootless mode.
pub fn is_rootless() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() != 0 }
}

fn fail(what: impl std::fmt::Display, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Layer {
        layer: LAYER,
        detail: format!("{what}: {e}"),
    }
}

/// Moves the calling (single-threaded) process into a new user namespace that
/// maps its own uid and gid to 0, and a new mount namespace owned by it.
/// Returns the host uid and gid that root inside stands for.
pub fn enter_own_user_ns() -> Result<(u32, u32), SandboxError> {
    // SAFETY: getuid/getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    sys::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS).map_err(|e| {
        fail(
            "unshare(CLONE_NEWUSER | CLONE_NEWNS)",
            format!("{e}{}", userns_hint()),
        )
    })?;
    // An unprivileged process may map only its own ids, and gid_map only once
    // setgroups is denied.
    std::fs::write("/proc/self/setgroups", "deny")
        .map_err(|e| fail("write /proc/self/setgroups", e))?;
    std::fs::write("/proc/self/uid_map", format!("0 {uid} 1\n"))
        .map_err(|e| fail("write uid_map", e))?;
    std::fs::write("/proc/self/gid_map", format!("0 {gid} 1\n"))
        .map_err(|e| fail("write gid_map", e))?;
    // Nothing mounted here may propagate back to the host's namespace.
    sys::make_mounts_private().map_err(|e| fail("make / private", e))?;
    Ok((uid, gid))
}

/// A hint naming the sysctl that blocks unprivileged user namespaces, if one does.
fn userns_hint() -> String {
    let blocking: Vec<String> = userns_sysctls()
        .into_iter()
        .filter(|s| s.blocks)
        .map(|s| format!("{} (fix: {})", s.name, s.fix))
        .collect();
    if blocking.is_empty() {
        String::new()
    } else {
        format!(
            " (unprivileged user namespaces are restricted by {})",
            blocking.join(", ")
        )
    }
}

/// One kernel setting that gates unprivileged user namespaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsernsSysctl {
    /// The sysctl name, e.g. `user.max_user_namespaces`.
    pub name: &'static str,
    /// The value read, or `None` when this kernel has no such setting.
    pub value: Option<String>,
    /// True when the value stops an ordinary user from creating a user namespace.
    pub blocks: bool,
    /// The command that lifts the restriction.
    pub fix: &'static str,
}

/// The sysctls that gate unprivileged user namespaces, read from `/proc/sys`.
pub fn userns_sysctls() -> Vec<UsernsSysctl> {
    userns_sysctls_in(Path::new("/proc/sys"))
}

pub fn userns_sysctls_in(proc_sys: &Path) -> Vec<UsernsSysctl> {
    let read = |rel: &str| {
        std::fs::read_to_string(proc_sys.join(rel))
            .ok()
            .map(|s| s.trim().to_string())
    };
    let clone = read("kernel/unprivileged_userns_clone");
    let max = read("user/max_user_namespaces");
    let apparmor = read("kernel/apparmor_restrict_unprivileged_userns");
    vec![
        UsernsSysctl {
            name: "kernel.unprivileged_userns_clone",
            blocks: clone.as_deref() == Some("0"),
            value: clone,
            fix: "sysctl -w kernel.unprivileged_userns_clone=1 (Debian/Ubuntu kernels; persist in /etc/sysctl.d/)",
        },
        UsernsSysctl {
            name: "user.max_user_namespaces",
            blocks: max.as_deref() == Some("0"),
            value: max,
            fix: "sysctl -w user.max_user_namespaces=15000 (persist in /etc/sysctl.d/)",
        },
        UsernsSysctl {
            name: "kernel.apparmor_restrict_unprivileged_userns",
            blocks: apparmor.as_deref() == Some("1"),
            value: apparmor,
            fix: "give airlock an AppArmor profile with `userns,` (e.g. /etc/apparmor.d/airlock: \
                  `abi <abi/4.0>, include <tunables/global> profile airlock /usr/local/bin/airlock \
                  flags=(unconfined) { userns, }`, then `apparmor_parser -r` it), or \
                  sysctl -w kernel.apparmor_restrict_unprivileged_userns=0",
        },
    ]
}

/// Where rootless runs put their shared mount points: `$XDG_RUNTIME_DIR/airlock`
/// when that directory exists and belongs to the caller, else `fallback` (a
/// directory beside the runs directory, under the caller's state directory).
pub fn runtime_dir(xdg_runtime_dir: Option<&Path>, fallback: &Path) -> PathBuf {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    match xdg_runtime_dir {
        Some(d)
            if d.is_absolute()
                && std::fs::symlink_metadata(d)
                    .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0) =>
        {
            d.join("airlock")
        }
        _ => fallback.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctls_say_which_one_blocks_and_how_to_fix_it() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("kernel")).unwrap();
        std::fs::create_dir_all(d.path().join("user")).unwrap();
        std::fs::write(d.path().join("user/max_user_namespaces"), "1000\n").unwrap();
        std::fs::write(
            d.path()
                .join("kernel/apparmor_restrict_unprivileged_userns"),
            "1\n",
        )
        .unwrap();
        let s = userns_sysctls_in(d.path());
        assert_eq!(s[0].value, None);
        assert!(!s[0].blocks);
        assert!(!s[1].blocks);
        assert!(s[2].blocks);
        assert!(s[2].fix.contains("userns"));
        std::fs::write(d.path().join("user/max_user_namespaces"), "0\n").unwrap();
        assert!(userns_sysctls_in(d.path())[1].blocks);
    }

    #[test]
    fn the_runtime_dir_is_used_only_when_it_is_private_and_ours() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let fallback = Path::new("/state/run");
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(
            runtime_dir(Some(d.path()), fallback),
            d.path().join("airlock")
        );
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(runtime_dir(Some(d.path()), fallback), fallback);
        assert_eq!(runtime_dir(None, fallback), fallback);
        assert_eq!(runtime_dir(Some(Path::new("relative")), fallback), fallback);
    }
}
