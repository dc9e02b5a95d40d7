//! `airlock doctor`: which isolation layers this host provides, each probed for
//! real (not inferred from version numbers), and a final end-to-end run of a
//! sandbox with every layer of the default policy.

use crate::capability::NativeLimits;
use crate::native::{self, cgroup::CgroupHost, NativeBackend};
use crate::{Backend, Limits, NetworkSpec, SandboxSpec, WorkspaceMode, WorkspaceSpec};
use serde::Serialize;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerCheck {
    pub layer: &'static str,
    pub ok: bool,
    /// The default policy cannot be enforced without it.
    pub required: bool,
    pub detail: String,
}

fn check(layer: &'static str, required: bool, r: Result<String, String>) -> LayerCheck {
    match r {
        Ok(detail) => LayerCheck {
            layer,
            ok: true,
            required,
            detail,
        },
        Err(detail) => LayerCheck {
            layer,
            ok: false,
            required,
            detail,
        },
    }
}

fn kernel() -> Result<String, String> {
    // SAFETY: utsname is plain data that uname fills.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: u is a live utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Ok(format!(
        "{} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.machine)
    ))
}

fn mode() -> Result<String, String> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid == 0 {
        Ok(format!(
            "root: mounts are built with full privilege, then dropped; sandbox root is host uid {}",
            native::namespaces::SANDBOX_HOST_UID
        ))
    } else {
        Ok(format!(
            "rootless (euid {euid}): a user namespace maps uid {euid} to root inside; the sandbox is \
             built there and the command runs in a nested one, with no capability on the host; \
             files keep uid {euid}'s ownership"
        ))
    }
}

fn user_namespaces() -> Result<String, String> {
    let max = std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
        .map_err(|e| format!("/proc/sys/user/max_user_namespaces: {e}"))?;
    let max: u64 = max.trim().parse().unwrap_or(0);
    if max == 0 {
        return Err(
            "user.max_user_namespaces is 0 (fix: sysctl -w user.max_user_namespaces=15000)".into(),
        );
    }
    if native::rootless::is_rootless() {
        // SAFETY: geteuid/getegid have no preconditions.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        native::namespaces::user_ns_to(0, 0, uid, gid).map_err(|e| {
            let blocking: Vec<String> = native::rootless::userns_sysctls()
                .into_iter()
                .filter(|s| s.blocks)
                .map(|s| format!("{} (fix: {})", s.name, s.fix))
                .collect();
            if blocking.is_empty() {
                e.to_string()
            } else {
                format!("{e}; restricted by {}", blocking.join(", "))
            }
        })?;
        return Ok(format!(
            "created one mapping root to uid {uid}, unprivileged (max_user_namespaces {max})"
        ));
    }
    native::namespaces::user_ns(0, 0).map_err(|e| e.to_string())?;
    Ok(format!(
        "created one mapping root to host uid {} (max_user_namespaces {max})",
        native::namespaces::SANDBOX_HOST_UID
    ))
}

/// Whether any user may become the sandbox's host uid or gid: a range in
/// /etc/subuid or /etc/subgid that holds them (required as root, where every
/// backend relies on them being strangers; rootless runs never use them), or
/// /etc/login.defs letting `useradd` hand them out later (a warning).
fn subordinate_ids(rootless: bool) -> LayerCheck {
    use native::namespaces::{SANDBOX_HOST_GID, SANDBOX_HOST_UID};
    let delegations = native::subid::host_delegations();
    subordinate_ids_check(
        rootless,
        &delegations,
        std::fs::read_to_string("/etc/login.defs").ok().as_deref(),
    )
    .unwrap_or_else(|| LayerCheck {
        layer: "subordinate_ids",
        ok: true,
        required: false,
        detail: format!(
            "the sandbox's host uid {SANDBOX_HOST_UID} and gid {SANDBOX_HOST_GID} are delegated \
             to no user by /etc/subuid or /etc/subgid, nor in reach of useradd's ranges in \
             /etc/login.defs"
        ),
    })
}

/// [`subordinate_ids`]'s verdict when something is wrong.
fn subordinate_ids_check(
    rootless: bool,
    delegations: &[native::subid::Delegation],
    login_defs: Option<&str>,
) -> Option<LayerCheck> {
    use native::namespaces::{SANDBOX_HOST_GID, SANDBOX_HOST_UID};
    if let Some(detail) = native::subid::describe(delegations) {
        return Some(LayerCheck {
            layer: "subordinate_ids",
            ok: false,
            required: !rootless,
            detail,
        });
    }
    let defs = login_defs?;
    let reach = native::subid::login_defs_reach(defs, "UID", SANDBOX_HOST_UID)
        .map(|r| ("SUB_UID", r))
        .or_else(|| {
            native::subid::login_defs_reach(defs, "GID", SANDBOX_HOST_GID).map(|r| ("SUB_GID", r))
        })?;
    let (key, (min, top)) = reach;
    Some(LayerCheck {
        layer: "subordinate_ids",
        ok: false,
        required: false,
        detail: format!(
            "no user holds the sandbox's host uid {SANDBOX_HOST_UID} / gid {SANDBOX_HOST_GID} \
             yet, but /etc/login.defs lets useradd delegate {min}-{top} ({key}_MIN to \
             {key}_MAX plus one {key}_COUNT), so a user added later may get it and could then \
             signal the sandbox's processes and write what they own. Hint: set {key}_MAX in \
             /etc/login.defs so that {key}_MAX plus {key}_COUNT stays below {}",
            SANDBOX_HOST_UID.min(SANDBOX_HOST_GID)
        ),
    })
}

/// One line per sysctl that gates unprivileged user namespaces. Rootless mode
/// needs each of them open; as root they do not matter (warnings only).
fn sysctl_checks() -> Vec<LayerCheck> {
    let rootless = native::rootless::is_rootless();
    native::rootless::userns_sysctls()
        .into_iter()
        .map(|s| {
            let detail = match (&s.value, s.blocks) {
                (None, _) => format!("{}: not in this kernel (no such restriction)", s.name),
                (Some(v), false) => {
                    format!("{} = {v}: unprivileged user namespaces allowed", s.name)
                }
                (Some(v), true) => format!(
                    "{} = {v}: blocks unprivileged user namespaces{}; fix: {}",
                    s.name,
                    if rootless {
                        ""
                    } else {
                        " (root mode does not need them)"
                    },
                    s.fix
                ),
            };
            LayerCheck {
                layer: "userns_sysctl",
                ok: !s.blocks,
                required: rootless,
                detail,
            }
        })
        .collect()
}

/// Which limits are enforced by what, in this mode.
fn limits_check(limits: &NativeLimits) -> LayerCheck {
    let (ok, detail) = match limits {
        NativeLimits::RootCgroup => (
            true,
            "memory, pids, cpus and cpu_time by the run's cgroup; cpu_time also by RLIMIT_CPU; \
             file_size, open_files by rlimits; timeout by the helper's clock; tmp by tmpfs caps"
                .to_string(),
        ),
        NativeLimits::Delegated(d) => (
            true,
            format!(
                "memory, pids, cpus and cpu_time by the delegated cgroup v2 subtree {} (pids also by \
                 RLIMIT_NPROC in the run's user namespace); file_size, open_files by rlimits; timeout \
                 by the helper's clock; tmp by tmpfs caps",
                d.display()
            ),
        ),
        NativeLimits::RlimitsOnly => (
            false,
            "rootless without a cgroup: enforced: pids (RLIMIT_NPROC counted in the run's own user \
             namespace), timeout (helper's clock), file_size, open_files (rlimits), tmp and the overlay \
             (tmpfs caps), output (caller); best effort only: memory (RLIMIT_DATA per process: private \
             data only, not shared anonymous memory or memfds), \
             cpu_time (RLIMIT_CPU per process); unavailable: cpus (no CPU bandwidth control). A policy \
             setting memory, cpus or cpu_time is refused unless it says [limits] enforcement = \
             \"best_effort\" (the built-in default sets them)"
                .to_string(),
        ),
    };
    LayerCheck {
        layer: "limits",
        ok,
        required: false,
        detail,
    }
}

fn idmapped_mounts() -> Result<String, String> {
    let ns = native::namespaces::user_ns(0, 0).map_err(|e| e.to_string())?;
    let tree =
        crate::sys::clone_tree(Path::new("/usr"), false).map_err(|e| format!("open_tree: {e}"))?;
    use std::os::fd::AsRawFd;
    crate::sys::set_tree_attrs(&tree, crate::sys::MOUNT_ATTR_RDONLY, Some(ns.as_raw_fd()))
        .map_err(|e| format!("mount_setattr(MOUNT_ATTR_IDMAP): {e}"))?;
    Ok("open_tree + mount_setattr(MOUNT_ATTR_IDMAP) work (workspace stays writable for sandbox root)".into())
}

fn filesystems() -> Result<String, String> {
    let fs = std::fs::read_to_string("/proc/filesystems").map_err(|e| e.to_string())?;
    let has = |name: &str| {
        fs.lines()
            .any(|l| l.split_whitespace().last() == Some(name))
    };
    let missing: Vec<&str> = ["overlay", "tmpfs", "proc", "devpts"]
        .into_iter()
        .filter(|n| !has(n))
        .collect();
    if missing.is_empty() {
        Ok("overlay, tmpfs, proc, devpts".into())
    } else {
        Err(format!("missing: {}", missing.join(", ")))
    }
}

fn seccomp() -> Result<String, String> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    if !status.lines().any(|l| l.starts_with("Seccomp:")) {
        return Err("kernel built without seccomp".into());
    }
    let p = native::seccomp::compile(
        native::seccomp::SocketRule::UnixOnly,
        native::seccomp::SetIdRule::Refuse,
    )
    .map_err(|e| e.to_string())?;
    Ok(format!(
        "filter mode available; default filter compiles to {} BPF instructions",
        p.len()
    ))
}

fn landlock() -> Result<String, String> {
    match native::landlock::abi_version() {
        Some(abi) => Ok(format!(
            "ABI {abi}{}",
            if abi >= 6 {
                " (abstract unix socket and signal scoping on)"
            } else {
                " (no scoping below ABI 6)"
            }
        )),
        None => Err("landlock is not enabled in this kernel".into()),
    }
}

fn cgroups(limits: &NativeLimits) -> Result<String, String> {
    let host = match limits {
        NativeLimits::RootCgroup => CgroupHost::detect().map_err(|e| e.to_string())?,
        NativeLimits::Delegated(d) => CgroupHost::v2_at(d),
        NativeLimits::RlimitsOnly => {
            return Err(format!(
                "no cgroup this user may manage: {} (cgroup v1 needs root; no delegated cgroup v2 \
                 subtree with memory, pids and cpu). Fix: run as root, or start airlock in a delegated \
                 subtree (systemd-run --user --scope -p Delegate=yes airlock ...), or accept rlimits \
                 with [limits] enforcement = \"best_effort\"",
                CgroupHost::detect()
                    .map(|h| format!("{:?} host", h.version()))
                    .unwrap_or_else(|e| e.to_string())
            ))
        }
    };
    host.self_test().map_err(|e| e.to_string())?;
    let list: Vec<String> = host
        .hierarchies()
        .iter()
        .map(|(c, p)| format!("{c}={}", p.display()))
        .collect();
    let slots = match host.slot_census() {
        Some(c) => {
            let stray = match c.stray.is_empty() {
                true => String::new(),
                false => format!(
                    "; {} held by no run still hold processes a crashed run left (the next \
                     run to take one kills them first)",
                    c.stray.join(", ")
                ),
            };
            format!(
                "; runs take reused groups airlock/{}<n> ({} kept, {} held by a run now; they \
                 last until reboot, and `rmdir` removes one no run holds){stray}",
                crate::native::cgroup::SLOT_PREFIX,
                c.kept,
                c.held
            )
        }
        None => String::new(),
    };
    Ok(format!(
        "{:?}, writable: {}{slots}",
        host.version(),
        list.join(" ")
    ))
}

fn end_to_end(helper: &Path, runs: &Path, limits: &NativeLimits) -> Result<String, String> {
    let ws = std::env::temp_dir().join(format!("airlock-doctor-{}", std::process::id()));
    std::fs::create_dir_all(&ws).map_err(|e| format!("{}: {e}", ws.display()))?;
    let spec = SandboxSpec {
        request_id: format!("doctor-{}", std::process::id()),
        argv: vec![
            "/bin/sh".into(),
            "-c".into(),
            "echo ok > probe && cat probe".into(),
        ],
        cwd: ws.clone(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        workspace: WorkspaceSpec {
            root: ws.clone(),
            mode: WorkspaceMode::Overlay,
            protect: vec![],
            apply: false,
            changes: Default::default(),
            owned: vec![],
            keep: None,
            list: None,
            home: None,
        },
        network: NetworkSpec::None,
        limits: Limits {
            timeout_ms: 20_000,
            cpu_time_ms: 20_000,
            memory_bytes: 64 << 20,
            pids: 16,
            cpus: 1.0,
            output_bytes: 4096,
            tmp_bytes: 1 << 20,
            file_size_bytes: 1 << 20,
            open_files: 64,
        },
        read_paths: vec![],
        write_paths: vec![],
        hide_paths: vec![],
        stdin: None,
        // Rootless without a cgroup, the probe still proves every other layer;
        // the `cgroup` and `limits` lines say what that mode lacks.
        limit_enforcement: if *limits == NativeLimits::RlimitsOnly {
            crate::spec::LimitEnforcement::BestEffort
        } else {
            crate::spec::LimitEnforcement::Cgroup
        },
        git_config: String::new(),
    };
    let backend = NativeBackend::new(helper.to_path_buf(), runs.to_path_buf());
    let started = std::time::Instant::now();
    let result = backend.run(&spec, &mut crate::backend::Discard);
    let _ = std::fs::remove_dir_all(&ws);
    let o = result.map_err(|e| e.to_string())?;
    if o.exit_code == Some(0) && o.stdout == "ok\n" && o.changes.len() == 1 {
        Ok(format!(
            "a sandbox with every layer ran and wrote to its overlay workspace ({} ms)",
            started.elapsed().as_millis()
        ))
    } else {
        Err(format!("the probe command misbehaved: {o:?}"))
    }
}

/// Probes every layer. `helper` is the executable that serves as the sandbox
/// helper (the airlock binary); `runs` the runs directory.
pub fn run(helper: &Path, runs: &Path) -> Vec<LayerCheck> {
    let limits = NativeLimits::detect();
    let rootless = limits != NativeLimits::RootCgroup;
    let e2e = end_to_end(helper, runs, &limits);
    // The other namespaces, pivot_root and the mount view have no cheaper
    // honest probe than building a sandbox: they share the end-to-end verdict.
    let namespaces = match &e2e {
        Ok(_) => Ok(
            "mount, pid, net (loopback only), ipc, uts, cgroup: built by the end-to-end run".into(),
        ),
        Err(e) => Err(format!("the end-to-end run failed: {e}")),
    };
    let idmapped = if rootless {
        Ok("not needed in rootless mode (files keep the caller's ownership)".into())
    } else {
        idmapped_mounts()
    };
    let mut checks = vec![
        check("kernel", false, kernel()),
        check("mode", true, mode()),
        check("user_namespace", true, user_namespaces()),
    ];
    checks.extend(sysctl_checks());
    checks.push(subordinate_ids(rootless));
    checks.extend([
        check("namespaces", true, namespaces),
        check("idmapped_mounts", !rootless, idmapped),
        check("filesystems", true, filesystems()),
        check("seccomp", true, seccomp()),
        check("landlock", true, landlock()),
        // Rootless, a missing cgroup is refused per policy (the `limits` line
        // says which limits then need `enforcement = "best_effort"`).
        check("cgroup", !rootless, cgroups(&limits)),
        limits_check(&limits),
        check("end_to_end", true, e2e),
    ]);
    checks
}

/// True when the default policy can be enforced on this host.
pub fn all_required_ok(checks: &[LayerCheck]) -> bool {
    checks.iter().all(|c| c.ok || !c.required)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::namespaces::SANDBOX_HOST_UID;

    #[test]
    fn a_delegated_sandbox_uid_fails_the_check_with_a_hint_required_as_root() {
        let text = format!("airlock-u1:{}:65536\n", SANDBOX_HOST_UID - 10);
        let d = native::subid::holding("/etc/subuid", &text, SANDBOX_HOST_UID);
        let c = subordinate_ids_check(false, &d, None).unwrap();
        assert!(!c.ok && c.required, "{c:?}");
        assert!(
            c.detail.contains("airlock-u1") && c.detail.contains("Hint: "),
            "{c:?}"
        );
        // Rootless runs never use the id: a failed line, not a failed doctor.
        let c = subordinate_ids_check(true, &d, None).unwrap();
        assert!(!c.ok && !c.required, "{c:?}");
    }

    #[test]
    fn login_defs_reaching_the_sandbox_uid_warns_and_debians_defaults_do_not() {
        let debian = "SUB_UID_MIN 100000\nSUB_UID_MAX 600100000\nSUB_UID_COUNT 65536\n";
        assert_eq!(subordinate_ids_check(false, &[], Some(debian)), None);
        assert_eq!(subordinate_ids_check(false, &[], None), None);
        let wide = "SUB_GID_MAX 2100000000\n";
        let c = subordinate_ids_check(false, &[], Some(wide)).unwrap();
        assert!(!c.ok && !c.required, "{c:?}");
        assert!(
            c.detail.contains("SUB_GID_MAX") && c.detail.contains("Hint: "),
            "{c:?}"
        );
    }
}
