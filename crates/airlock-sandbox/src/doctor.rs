//! `airlock doctor`: which isolation layers this host provides, each probed for
//! real (not inferred from version numbers), and a final end-to-end run of a
//! sandbox with every layer of the default policy.

use crate::native::{self, cgroup::CgroupHost, NativeBackend};
use crate::{Backend, Limits, NetworkSpec, SandboxSpec, WorkspaceMode, WorkspaceSpec};
use serde::Serialize;
use std::path::Path;

#[derive(Debug, Clone, Serialize)]
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

fn root() -> Result<String, String> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid == 0 {
        Ok("running as root: mounts are built with full privilege, then dropped".into())
    } else {
        Err(format!(
            "euid {euid}: the native backend builds the sandbox as root (idmapped mounts need CAP_SYS_ADMIN)"
        ))
    }
}

fn user_namespaces() -> Result<String, String> {
    let max = std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
        .map_err(|e| format!("/proc/sys/user/max_user_namespaces: {e}"))?;
    let max: u64 = max.trim().parse().unwrap_or(0);
    if max == 0 {
        return Err("user.max_user_namespaces is 0".into());
    }
    native::namespaces::user_ns(0, 0).map_err(|e| e.to_string())?;
    Ok(format!(
        "created one mapping root to host uid {} (max_user_namespaces {max})",
        native::namespaces::SANDBOX_HOST_UID
    ))
}

fn idmapped_mounts() -> Result<String, String> {
    let ns = native::namespaces::user_ns(0, 0).map_err(|e| e.to_string())?;
    let tree =
        native::sys::clone_tree(Path::new("/usr"), false).map_err(|e| format!("open_tree: {e}"))?;
    use std::os::fd::AsRawFd;
    native::sys::set_tree_attrs(&tree, native::sys::MOUNT_ATTR_RDONLY, Some(ns.as_raw_fd()))
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
    let p = native::seccomp::compile(native::seccomp::SocketRule::UnixOnly)
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

fn cgroups() -> Result<String, String> {
    let host = CgroupHost::detect().map_err(|e| e.to_string())?;
    host.self_test().map_err(|e| e.to_string())?;
    let list: Vec<String> = host
        .hierarchies()
        .iter()
        .map(|(c, p)| format!("{c}={}", p.display()))
        .collect();
    Ok(format!(
        "{:?}, writable: {}",
        host.version(),
        list.join(" ")
    ))
}

fn end_to_end(helper: &Path, runs: &Path) -> Result<String, String> {
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
    let e2e = end_to_end(helper, runs);
    // The other namespaces, pivot_root and the mount view have no cheaper
    // honest probe than building a sandbox: they share the end-to-end verdict.
    let namespaces = match &e2e {
        Ok(_) => Ok(
            "mount, pid, net (loopback only), ipc, uts, cgroup: built by the end-to-end run".into(),
        ),
        Err(e) => Err(format!("the end-to-end run failed: {e}")),
    };
    vec![
        check("kernel", false, kernel()),
        check("privileges", true, root()),
        check("user_namespace", true, user_namespaces()),
        check("namespaces", true, namespaces),
        check("idmapped_mounts", true, idmapped_mounts()),
        check("filesystems", true, filesystems()),
        check("seccomp", true, seccomp()),
        check("landlock", true, landlock()),
        check("cgroup", true, cgroups()),
        check("end_to_end", true, e2e),
    ]
}

/// True when the default policy can be enforced on this host.
pub fn all_required_ok(checks: &[LayerCheck]) -> bool {
    checks.iter().all(|c| c.ok || !c.required)
}
