//! The container's configuration: the sandbox's view ([`crate::view`])
//! translated into a Docker `ContainerCreate` body.
//!
//! The image is the root (read-only): its programs run, not the host's, so
//! the view's system directories, `/etc` entries and `/dev` are the image's
//! and the daemon's. Everything the policy sets is translated: the workspace
//! (staged by the helper as under the OCI backend), read and write paths,
//! size-capped tmpfs mounts, masked and read-only paths, limits, the
//! environment, the working directory, the user, capabilities, privileges and
//! the seccomp profile (the OCI backend's, in place of the daemon's default).

use super::Daemon;
use crate::native::namespaces::{SANDBOX_HOST_GID, SANDBOX_HOST_UID};
use crate::oci::bundle::{self, Staged};
use crate::view::{Owner, ViewOp};
use crate::{relay, NetworkSpec, SandboxSpec};
use bollard::models::{
    ContainerCreateBody, HostConfig, Mount, MountBindOptions, MountBindOptionsPropagationEnum,
    MountType, ResourcesUlimits,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The label every airlock container carries (its value: the run's id).
pub const LABEL_RUN: &str = "airlock.run";
/// The label naming the helper process that owns the container (its boot,
/// pid namespace, pid and start time: [`crate::oci::owner`]), so that a sweep
/// can tell a live owner of its own from a dead one, and leaves others alone.
pub const LABEL_OWNER: &str = "airlock.owner";
/// The user the command runs as: the sandbox's host uid and gid (the staged
/// workspace is idmapped to it, as under the OCI backend's user namespace).
pub fn user() -> String {
    format!("{SANDBOX_HOST_UID}:{SANDBOX_HOST_GID}")
}

/// What the helper staged for the container beside the workspace.
pub struct Extras<'a> {
    /// Files the view writes (the git configuration), each with the staged
    /// copy the helper wrote.
    pub files: &'a [(PathBuf, PathBuf)],
    /// Network allowlist mode: the relay and the proxy socket.
    pub egress: Option<&'a Egress>,
    /// Network open mode: the relay binary that scopes the host's abstract
    /// unix sockets before it becomes the command ([`relay::scope_args`]);
    /// `None` where the kernel cannot scope them (the helper notes it).
    pub scope: Option<&'a Path>,
}

/// Network allowlist mode in a container: the daemon makes the container's
/// network namespace (`NetworkMode none`: loopback only) as it starts it, so
/// no listener of the host can be put there beforehand, as the OCI backend
/// does. Instead the container's first program is the in-sandbox relay
/// (`airlock-relay exec`, [`crate::relay::exec_args`]): it binds the proxy
/// ports on the container's loopback, relays on threads of its own, and runs
/// the command as its child, as the container's PID 1 (reaping orphans, exiting
/// with the command's status). Both files are bound read-only.
#[derive(Debug, Clone)]
pub struct Egress {
    /// The run's egress-proxy socket as staged by the helper: an idmapped
    /// bind of the root-owned 0600 socket that shows it as the sandbox uid's, so
    /// that the container's user may connect without the socket itself being
    /// opened to anyone.
    pub socket: PathBuf,
    /// The static relay binary on the host.
    pub relay: PathBuf,
}

/// The container's configuration. `owner` is the helper's [`LABEL_OWNER`]
/// value.
pub fn translate(
    spec: &SandboxSpec,
    ops: &[ViewOp],
    staged: &Staged,
    image: &str,
    owner: &str,
    extras: &Extras,
    daemon: &DaemonForm,
) -> Result<ContainerCreateBody, String> {
    let files = extras.files;
    let argv = match (&spec.network, extras.egress) {
        (NetworkSpec::Proxy { .. }, Some(_)) => relay::exec_args(&spec.argv),
        (NetworkSpec::Proxy { .. }, None) => {
            return Err(
                "network allowlist mode needs the in-sandbox relay and the proxy \
                        socket, which were not staged"
                    .into(),
            )
        }
        (NetworkSpec::Open, _) if extras.scope.is_some() => relay::scope_args(&spec.argv),
        (NetworkSpec::None | NetworkSpec::Open, _) => spec.argv.clone(),
    };
    let (first, rest) = argv.split_first().ok_or("argv is empty")?;
    let mut mounts = workspace_mounts(spec, staged)?;
    if let (NetworkSpec::Open, Some(relay)) = (&spec.network, extras.scope) {
        mounts.push(bind(relay, Path::new(relay::BINARY_IN_SANDBOX), true));
    }
    let mut tmpfs = HashMap::new();
    let mut masked = Vec::new();
    let mut readonly = Vec::new();
    for op in ops {
        match op {
            ViewOp::BindRo { src, dst } if is_read_path(spec, dst) => {
                mounts.push(bind(src, dst, true));
            }
            ViewOp::BindRw { dst, .. } => {
                let src = staged
                    .write_paths
                    .iter()
                    .find(|(d, _)| d == dst)
                    .map(|(_, s)| s)
                    .ok_or_else(|| format!("write path {} was not staged", dst.display()))?;
                mounts.push(bind(src, dst, false));
            }
            ViewOp::WriteFile { path, .. } => {
                if let Some((_, src)) = files.iter().find(|(p, _)| p == path) {
                    mounts.push(bind(src, path, true));
                }
            }
            // The daemon makes /dev (with its default devices and ptys).
            ViewOp::Tmpfs { path, .. } if path == Path::new("/dev") => {}
            ViewOp::Tmpfs {
                path,
                mode,
                size_bytes,
                inodes,
                flags,
                owner,
            } => {
                let mut options = vec!["nosuid".to_string(), "nodev".to_string()];
                options.push(if flags.noexec { "noexec" } else { "exec" }.into());
                options.push(format!("mode={mode:o}"));
                options.push(format!("size={size_bytes}"));
                // podman 4's service refuses `nr_inodes` (an unknown mount
                // option there): its tmpfs mounts hold as many inodes as the
                // kernel's default, each charged to the memory limit.
                match (inodes, daemon.daemon) {
                    (Some(n), Daemon::Docker) => options.push(format!("nr_inodes={n}")),
                    (Some(_), Daemon::Podman) | (None, _) => {}
                }
                // The command is not root here: its own tmpfs mounts (the
                // home) belong to it, as they belong to sandbox root under
                // the OCI backend.
                // podman's service knows no `uid=`/`gid=`; its `U` makes
                // the mount the container user's.
                if *owner == Owner::SandboxUser {
                    options.push(match daemon.daemon {
                        Daemon::Docker => format!("uid={SANDBOX_HOST_UID},gid={SANDBOX_HOST_GID}"),
                        Daemon::Podman => "U".into(),
                    });
                }
                tmpfs.insert(path.display().to_string(), options.join(","));
            }
            ViewOp::ReadOnly { path } => readonly.push(path.display().to_string()),
            ViewOp::Mask { path } | ViewOp::Hide { path } => {
                masked.push(path.display().to_string())
            }
            ViewOp::ProxySocket { dst, .. } => {
                let e = extras
                    .egress
                    .ok_or("the egress proxy's socket was not staged")?;
                mounts.push(bind(&e.socket, dst, true));
                mounts.push(bind(&e.relay, Path::new(relay::BINARY_IN_SANDBOX), true));
            }
            // The image's own root: system directories, /etc, symlinks;
            // the daemon's /dev and /proc.
            ViewOp::BindRo { .. }
            | ViewOp::Prepared { .. }
            | ViewOp::Symlink { .. }
            | ViewOp::Device { .. }
            | ViewOp::Devpts { .. }
            | ViewOp::Proc { .. }
            | ViewOp::Workspace { .. } => {}
        }
    }
    // The view has no /sys (native, oci and gVisor show none), but both
    // daemons mount the host's sysfs there, and MaskedPaths replaces their
    // default masks (dockerd's /sys/firmware among them): firmware memory
    // maps, vmcoreinfo, kernel notes, block devices. A mount of the
    // container's own at /sys takes the place of the daemon's: an empty
    // read-only tmpfs.
    tmpfs.insert(SYS.to_string(), sys_tmpfs_options(daemon.daemon));
    let seccomp = match daemon.daemon {
        Daemon::Docker => format!("seccomp={}", seccomp_profile(spec)),
        // podman's service reads `seccomp=` as a file on its own host (it
        // tried to open the JSON text as a path); the helper wrote it there.
        Daemon::Podman => format!("seccomp={}", daemon.seccomp_file.display()),
    };
    let mut security_opt = vec!["no-new-privileges".to_string(), seccomp];
    if daemon.daemon == Daemon::Podman {
        // podman's service ignores HostConfig.MaskedPaths and ReadonlyPaths
        // (an escape would read every hidden path): masks go through its
        // own `mask=` option, and the read-only corners must be among those
        // it makes read-only by default.
        security_opt.push(podman_mask(&masked)?);
        if let Some(p) = readonly
            .iter()
            .find(|p| !PODMAN_READONLY.contains(&p.as_str()))
        {
            return Err(format!(
                "{p} must be read-only, and podman's service neither applies \
                 HostConfig.ReadonlyPaths nor makes it read-only by default; \
                 Hint: use dockerd or the oci backend"
            ));
        }
    }
    let l = &spec.limits;
    let ulimit = |name: &str, v: u64| ResourcesUlimits {
        name: Some(name.into()),
        soft: Some(clamp(v)),
        hard: Some(clamp(v)),
    };
    let mut ulimits = vec![
        ulimit("cpu", l.cpu_time_ms.div_ceil(1000).max(1)),
        ulimit("fsize", l.file_size_bytes),
        ulimit("nofile", u64::from(l.open_files)),
        // No RLIMIT_NPROC of ours: without a user namespace it would count
        // every process of the sandbox's host uid, other sandboxes' too.
    ];
    if daemon.daemon == Daemon::Podman {
        // podman gives every container RLIMIT_NPROC 1048576 unless told,
        // which its runtime cannot set where the daemon lacks
        // CAP_SYS_RESOURCE (in containers such as this project's CI) and its
        // own hard limit is lower. The kernel's pid_max is as good as no
        // limit (no user can hold more processes than there are pids).
        ulimits.push(ulimit("nproc", daemon.pid_max));
    }
    let host = HostConfig {
        mounts: Some(mounts),
        tmpfs: Some(tmpfs),
        masked_paths: Some(masked),
        readonly_paths: Some(readonly),
        readonly_rootfs: Some(true),
        network_mode: Some(
            match spec.network {
                NetworkSpec::Open => "host",
                // Allowlist mode too: loopback only, where the relay listens;
                // a direct connection finds no route.
                NetworkSpec::None | NetworkSpec::Proxy { .. } => "none",
            }
            .into(),
        ),
        cap_drop: Some(vec!["ALL".into()]),
        security_opt: Some(security_opt),
        memory: Some(clamp(l.memory_bytes)),
        // No swap beyond the memory limit.
        memory_swap: Some(clamp(l.memory_bytes)),
        pids_limit: Some(i64::from(l.pids)),
        nano_cpus: Some((l.cpus * 1e9) as i64),
        ulimits: Some(ulimits),
        ipc_mode: Some("private".into()),
        privileged: Some(false),
        auto_remove: Some(false),
        ..Default::default()
    };
    let mut labels = HashMap::new();
    labels.insert(LABEL_RUN.to_string(), spec.request_id.clone());
    labels.insert(LABEL_OWNER.to_string(), owner.to_string());
    Ok(ContainerCreateBody {
        image: Some(image.to_string()),
        entrypoint: Some(vec![first.clone()]),
        cmd: Some(rest.to_vec()),
        env: Some(env(spec, extras.egress.is_some())),
        working_dir: Some(spec.cwd.display().to_string()),
        user: Some(user()),
        hostname: Some("airlock".into()),
        network_disabled: Some(!matches!(spec.network, NetworkSpec::Open)),
        attach_stdin: Some(true),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        open_stdin: Some(true),
        stdin_once: Some(true),
        tty: Some(false),
        labels: Some(labels),
        host_config: Some(host),
        ..Default::default()
    })
}

/// The container's environment: the spec's, and in allowlist mode the
/// proxy variables that steer programs to the relay's ports (in place of any
/// the spec sets, as under the other backends).
fn env(spec: &SandboxSpec, egress: bool) -> Vec<String> {
    let mut pairs = spec.env.clone();
    if egress {
        for (k, v) in relay::proxy_env(relay::HTTP_PORT, relay::SOCKS_PORT) {
            pairs.retain(|(n, _)| *n != k);
            pairs.push((k, v));
        }
    }
    pairs.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// Where the daemons mount sysfs, covered by [`sys_tmpfs_options`].
pub const SYS: &str = "/sys";

/// The empty read-only tmpfs over /sys: nothing to read, nothing to write.
fn sys_tmpfs_options(daemon: Daemon) -> String {
    let mut o = "ro,nosuid,nodev,noexec,mode=555,size=4096".to_string();
    if daemon == Daemon::Docker {
        o.push_str(",nr_inodes=16");
    }
    o
}

/// How the daemon at hand takes what differs between dockerd and podman.
pub struct DaemonForm {
    pub daemon: Daemon,
    /// Where the helper wrote [`seccomp_profile`] (podman reads it there).
    pub seccomp_file: PathBuf,
    /// The kernel's `pid_max` (podman's RLIMIT_NPROC).
    pub pid_max: u64,
}

/// The `/proc` corners podman's service makes read-only by default (its
/// `--security-opt unmask` aside, which airlock never sets).
pub const PODMAN_READONLY: &[&str] = &[
    "/proc/asound",
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// The container's seccomp profile: the OCI backend's. The daemons' runtimes
/// (runc, crun) honour errnoRet (the clone3 rule's ENOSYS); gVisor's
/// exception does not apply. In allowlist and open modes the socket families
/// are the native backend's for them ([`bundle::relay_socket_rules`],
/// [`bundle::open_socket_rules`]).
pub fn seccomp_profile(spec: &SandboxSpec) -> serde_json::Value {
    let mut profile = bundle::seccomp_profile(
        matches!(spec.network, NetworkSpec::None),
        crate::oci::runtime::Runtime::Runc,
    );
    if let Some(rules) = profile["syscalls"].as_array_mut() {
        match &spec.network {
            NetworkSpec::Proxy { .. } => rules.extend(bundle::relay_socket_rules()),
            // NetworkMode host: the native backend's open-mode families.
            NetworkSpec::Open => rules.extend(bundle::open_socket_rules()),
            NetworkSpec::None => {}
        }
    }
    profile
}

/// podman's `mask=PATH:PATH…` option (a file covered by /dev/null, a
/// directory by an empty read-only tmpfs, as the view's masks are).
fn podman_mask(paths: &[String]) -> Result<String, String> {
    if let Some(p) = paths.iter().find(|p| p.contains(':')) {
        return Err(format!(
            "{p} must be hidden, and podman's `mask=` option cannot name a path with ':'; \
             Hint: rename it, or use dockerd or the oci backend"
        ));
    }
    Ok(format!("mask={}", paths.join(":")))
}

fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn is_read_path(spec: &SandboxSpec, dst: &Path) -> bool {
    spec.read_paths.iter().any(|p| dst.starts_with(p))
}

fn bind(src: &Path, dst: &Path, read_only: bool) -> Mount {
    Mount {
        target: Some(dst.display().to_string()),
        source: Some(src.display().to_string()),
        typ: Some(MountType::BIND),
        read_only: Some(read_only),
        bind_options: Some(MountBindOptions {
            propagation: Some(MountBindOptionsPropagationEnum::RPRIVATE),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The workspace's mounts, as the OCI bundle has them (the staged tree at
/// the workspace's path; in rw mode the protected paths bound read-only).
fn workspace_mounts(spec: &SandboxSpec, staged: &Staged) -> Result<Vec<Mount>, String> {
    let mut oci = Vec::new();
    bundle::workspace_mounts(
        &spec.workspace.root,
        spec.workspace.mode,
        &spec.workspace.protect,
        &staged.workspace,
        &mut oci,
    )?;
    oci.iter()
        .map(|m| {
            let field = |k: &str| m[k].as_str().map(PathBuf::from).ok_or("bad mount");
            let ro = m["options"]
                .as_array()
                .is_some_and(|o| o.iter().any(|x| x == "ro"));
            Ok(bind(&field("source")?, &field("destination")?, ro))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn podman_is_told_apart_by_its_components() {
        assert_eq!(
            Daemon::from_components(["Podman Engine", "Conmon"]),
            Daemon::Podman
        );
        assert_eq!(
            Daemon::from_components(["Engine", "containerd", "runc"]),
            Daemon::Docker
        );
    }

    #[test]
    fn podman_masks_are_one_option_and_a_colon_is_refused() {
        let paths = vec!["/proc/kcore".to_string(), "/w/.env".to_string()];
        assert_eq!(podman_mask(&paths).unwrap(), "mask=/proc/kcore:/w/.env");
        let bad = vec!["/w/a:b".to_string()];
        assert!(podman_mask(&bad).unwrap_err().contains("Hint"));
    }

    fn spec(ws: &Path) -> SandboxSpec {
        SandboxSpec {
            request_id: "r1".into(),
            argv: vec!["python3".into(), "-c".into(), "print(1)".into()],
            cwd: ws.to_path_buf(),
            env: vec![
                ("PATH".into(), "/usr/bin:/bin".into()),
                ("HTTPS_PROXY".into(), "http://elsewhere:1".into()),
            ],
            workspace: crate::WorkspaceSpec {
                root: ws.to_path_buf(),
                mode: crate::WorkspaceMode::Overlay,
                protect: vec![],
                apply: false,
                changes: Default::default(),
                owned: vec![],
                keep: None,
                list: None,
                home: None,
            },
            network: NetworkSpec::Proxy {
                socket: "/var/lib/airlock/proxy/r1/proxy.sock".into(),
            },
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
            hide_paths: vec![],
            stdin: None,
            limit_enforcement: Default::default(),
            git_config: String::new(),
        }
    }

    fn body(spec: &SandboxSpec, egress: Option<&Egress>) -> Result<ContainerCreateBody, String> {
        body_with(spec, egress, None)
    }

    fn body_with(
        spec: &SandboxSpec,
        egress: Option<&Egress>,
        scope: Option<&Path>,
    ) -> Result<ContainerCreateBody, String> {
        let ops = crate::view::plan(
            &crate::view::ViewInput {
                spec,
                run_dir: Path::new("/var/lib/airlock/runs/r1"),
                passwd: crate::view::PASSWD,
                group: crate::view::GROUP,
            },
            &crate::view::RealHost,
        );
        let staged = Staged {
            workspace: "/run/airlock-docker/r1/lower".into(),
            write_paths: vec![],
            read_paths: vec![],
            egress: None,
            root_host_id: crate::oci::bundle::HOST_ID,
        };
        let form = DaemonForm {
            daemon: Daemon::Docker,
            seccomp_file: "/run/airlock-docker/r1/seccomp.json".into(),
            pid_max: 32768,
        };
        let extras = Extras {
            files: &[],
            egress,
            scope,
        };
        translate(spec, &ops, &staged, "img", "1:2", &extras, &form)
    }

    #[test]
    fn open_mode_runs_the_command_through_the_relays_scope() {
        let ws = tempfile::tempdir().unwrap();
        let mut s = spec(ws.path());
        s.network = NetworkSpec::Open;
        let relay_bin = Path::new("/opt/airlock/airlock-relay");
        let b = body_with(&s, None, Some(relay_bin)).unwrap();
        let mut argv = b.entrypoint.clone().unwrap();
        argv.extend(b.cmd.clone().unwrap());
        assert_eq!(argv, relay::scope_args(&s.argv));
        assert_eq!(&argv[..3], [relay::BINARY_IN_SANDBOX, "scope", "--"]);
        let host = b.host_config.as_ref().unwrap();
        assert_eq!(host.network_mode.as_deref(), Some("host"));
        let mounts = host.mounts.as_ref().unwrap();
        let bin = mounts
            .iter()
            .find(|m| m.target.as_deref() == Some(relay::BINARY_IN_SANDBOX))
            .expect("relay bound");
        assert_eq!(bin.source.as_deref(), Some("/opt/airlock/airlock-relay"));
        assert_eq!(bin.read_only, Some(true));
        // Where the kernel cannot scope, the command runs as it is.
        let b = body_with(&s, None, None).unwrap();
        let mut argv = b.entrypoint.clone().unwrap();
        argv.extend(b.cmd.clone().unwrap());
        assert_eq!(argv, s.argv);
    }

    #[test]
    fn allowlist_starts_the_relay_first_on_a_loopback_only_network() {
        let ws = tempfile::tempdir().unwrap();
        let s = spec(ws.path());
        let egress = Egress {
            socket: "/run/airlock-docker/r1/proxy.sock".into(),
            relay: "/opt/airlock/airlock-relay".into(),
        };
        let b = body(&s, Some(&egress)).unwrap();
        // The relay is the first program, the command after its `--`.
        let mut argv = b.entrypoint.clone().unwrap();
        argv.extend(b.cmd.clone().unwrap());
        assert_eq!(argv, relay::exec_args(&s.argv));
        assert_eq!(argv[0], relay::BINARY_IN_SANDBOX);
        let host = b.host_config.as_ref().unwrap();
        assert_eq!(host.network_mode.as_deref(), Some("none"));
        assert_eq!(b.network_disabled, Some(true));
        // Both files bound read-only, the staged (idmapped) socket, never the
        // proxy's own path.
        let mounts = host.mounts.as_ref().unwrap();
        let at = |dst: &str| mounts.iter().find(|m| m.target.as_deref() == Some(dst));
        let sock = at(relay::SOCKET_IN_SANDBOX).expect("socket bound");
        assert_eq!(
            sock.source.as_deref(),
            Some("/run/airlock-docker/r1/proxy.sock")
        );
        assert_eq!(sock.read_only, Some(true));
        let bin = at(relay::BINARY_IN_SANDBOX).expect("relay bound");
        assert_eq!(bin.source.as_deref(), Some("/opt/airlock/airlock-relay"));
        assert_eq!(bin.read_only, Some(true));
        assert!(!serde_json::to_string(&b)
            .unwrap()
            .contains("/var/lib/airlock/proxy"));
        // The proxy variables replace the spec's own.
        let env = b.env.unwrap();
        assert!(env.contains(&"HTTPS_PROXY=http://127.0.0.1:3128".to_string()));
        assert!(env.contains(&"all_proxy=socks5h://127.0.0.1:1080".to_string()));
        assert!(!env.iter().any(|e| e.contains("elsewhere")));
    }

    #[test]
    fn allowlist_sockets_are_the_native_filters_unix_and_inet() {
        let ws = tempfile::tempdir().unwrap();
        let s = spec(ws.path());
        let profile = seccomp_profile(&s);
        let rules = profile["syscalls"].as_array().unwrap();
        let refused = |family: i32| {
            rules.iter().any(|r| {
                r["names"]
                    .as_array()
                    .unwrap()
                    .contains(&serde_json::json!("socket"))
                    && r["args"].as_array().is_some_and(|a| {
                        a.len() == 1 && a[0]["op"] == "SCMP_CMP_EQ" && a[0]["value"] == family
                    })
            })
        };
        for f in [
            libc::AF_UNIX,
            libc::AF_INET,
            libc::AF_INET6,
            libc::AF_NETLINK,
        ] {
            assert!(!refused(f), "family {f} must stay open");
        }
        for f in [
            libc::AF_PACKET,
            libc::AF_VSOCK,
            libc::AF_BLUETOOTH,
            libc::AF_ALG,
            45,
        ] {
            assert!(refused(f), "family {f} must be refused");
        }
        let text = profile.to_string();
        assert!(text.contains(r#""op":"SCMP_CMP_GE""#));
        // Network none keeps the OCI backend's AF_UNIX-only rule, and no more.
        let mut none = s.clone();
        none.network = NetworkSpec::None;
        assert_eq!(
            seccomp_profile(&none),
            bundle::seccomp_profile(true, crate::oci::runtime::Runtime::Runc)
        );
    }

    #[test]
    fn allowlist_without_the_staged_relay_is_refused_and_none_binds_nothing() {
        let ws = tempfile::tempdir().unwrap();
        let mut s = spec(ws.path());
        assert!(body(&s, None).unwrap_err().contains("relay"));
        s.network = NetworkSpec::None;
        let b = body(&s, None).unwrap();
        assert_eq!(b.entrypoint.unwrap(), ["python3"]);
        let mounts = b.host_config.unwrap().mounts.unwrap();
        assert!(!mounts.iter().any(|m| m
            .target
            .as_deref()
            .is_some_and(|t| t.starts_with("/run/airlock"))));
        assert!(!b
            .env
            .unwrap()
            .iter()
            .any(|e| e.starts_with("HTTP_PROXY=http://127")));
    }

    #[test]
    fn open_mode_refuses_the_families_native_refuses() {
        let ws = tempfile::tempdir().unwrap();
        let mut s = spec(ws.path());
        s.network = NetworkSpec::Open;
        let profile = seccomp_profile(&s);
        let rules = profile["syscalls"].as_array().unwrap();
        let refused = |f, t, p| crate::oci::bundle::tests::refuses_socket(rules, f, t, p);
        assert!(refused(
            libc::AF_NETLINK,
            libc::SOCK_RAW,
            libc::NETLINK_XFRM
        ));
        assert!(refused(libc::AF_PACKET, libc::SOCK_RAW, 0));
        assert!(refused(libc::AF_VSOCK, libc::SOCK_STREAM, 0));
        assert!(!refused(
            libc::AF_NETLINK,
            libc::SOCK_RAW,
            libc::NETLINK_ROUTE
        ));
        assert!(!refused(libc::AF_INET, libc::SOCK_STREAM, 0));
        assert!(!refused(libc::AF_UNIX, libc::SOCK_STREAM, 0));
    }

    #[test]
    fn sys_is_an_empty_read_only_tmpfs_in_place_of_the_daemons_sysfs() {
        let ws = tempfile::tempdir().unwrap();
        let mut s = spec(ws.path());
        s.network = NetworkSpec::None;
        let b = body(&s, None).unwrap();
        let host = b.host_config.unwrap();
        let sys = host
            .tmpfs
            .as_ref()
            .unwrap()
            .get(SYS)
            .expect("a tmpfs at /sys");
        let opts: Vec<&str> = sys.split(',').collect();
        for o in ["ro", "nosuid", "nodev", "noexec", "size=4096"] {
            assert!(opts.contains(&o), "{sys}");
        }
        // No bind of the host's sysfs, nor anything below it, either.
        assert!(!host.mounts.unwrap().iter().any(|m| m
            .target
            .as_deref()
            .is_some_and(|t| t == SYS || t.starts_with("/sys/"))));
        assert!(!sys_tmpfs_options(Daemon::Podman).contains("nr_inodes"));
    }

    #[test]
    fn the_views_read_only_corners_are_podman_defaults() {
        for name in crate::view::PROC_READ_ONLY {
            let p = format!("/proc/{name}");
            assert!(PODMAN_READONLY.contains(&p.as_str()), "{p}");
        }
    }
}
