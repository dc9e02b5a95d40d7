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

use crate::oci::bundle::{self, Staged};
use crate::view::{Owner, ViewOp};
use crate::{NetworkSpec, SandboxSpec};
use bollard::models::{
    ContainerCreateBody, HostConfig, Mount, MountBindOptions, MountBindOptionsPropagationEnum,
    MountType, ResourcesUlimits,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The label every airlock container carries (its value: the run's id).
pub const LABEL_RUN: &str = "airlock.run";
/// The label naming the helper process that owns the container (its pid and
/// start time), so that a sweep can tell a live owner from a dead one.
pub const LABEL_OWNER: &str = "airlock.owner";
/// The user the command runs as: the sandbox's host uid and gid (the staged
/// workspace is idmapped to it, as under the OCI backend's user namespace).
pub const USER: &str = "100000:100000";

/// The container's configuration. `owner` is the helper's [`LABEL_OWNER`]
/// value; `files` maps files the view writes (the git configuration) to the
/// staged copies the helper wrote.
pub fn translate(
    spec: &SandboxSpec,
    ops: &[ViewOp],
    staged: &Staged,
    image: &str,
    owner: &str,
    files: &[(PathBuf, PathBuf)],
) -> Result<ContainerCreateBody, String> {
    let argv = &spec.argv;
    let (first, rest) = argv.split_first().ok_or("argv is empty")?;
    let mut mounts = workspace_mounts(spec, staged)?;
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
                if let Some(n) = inodes {
                    options.push(format!("nr_inodes={n}"));
                }
                // The command is not root here: its own tmpfs mounts (the
                // home) belong to it, as they belong to sandbox root under
                // the OCI backend.
                if *owner == Owner::SandboxUser {
                    options.push("uid=100000,gid=100000".into());
                }
                tmpfs.insert(path.display().to_string(), options.join(","));
            }
            ViewOp::ReadOnly { path } => readonly.push(path.display().to_string()),
            ViewOp::Mask { path } | ViewOp::Hide { path } => {
                masked.push(path.display().to_string())
            }
            ViewOp::ProxySocket { .. } => {
                return Err("the egress proxy's relay is not wired into this backend".into())
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
    // dockerd's default runtime is runc, which honours errnoRet (the clone3
    // rule's ENOSYS); gVisor's exception does not apply.
    let seccomp = bundle::seccomp_profile(
        matches!(spec.network, NetworkSpec::None),
        crate::oci::runtime::Runtime::Runc,
    );
    let l = &spec.limits;
    let ulimit = |name: &str, v: u64| ResourcesUlimits {
        name: Some(name.into()),
        soft: Some(clamp(v)),
        hard: Some(clamp(v)),
    };
    let host = HostConfig {
        mounts: Some(mounts),
        tmpfs: Some(tmpfs),
        masked_paths: Some(masked),
        readonly_paths: Some(readonly),
        readonly_rootfs: Some(true),
        network_mode: Some(
            match spec.network {
                NetworkSpec::Open => "host",
                _ => "none",
            }
            .into(),
        ),
        cap_drop: Some(vec!["ALL".into()]),
        security_opt: Some(vec![
            "no-new-privileges".into(),
            format!("seccomp={seccomp}"),
        ]),
        memory: Some(clamp(l.memory_bytes)),
        // No swap beyond the memory limit.
        memory_swap: Some(clamp(l.memory_bytes)),
        pids_limit: Some(i64::from(l.pids)),
        nano_cpus: Some((l.cpus * 1e9) as i64),
        ulimits: Some(vec![
            ulimit("cpu", l.cpu_time_ms.div_ceil(1000).max(1)),
            ulimit("fsize", l.file_size_bytes),
            ulimit("nofile", u64::from(l.open_files)),
            // No RLIMIT_NPROC: without a user namespace it would count every
            // process of host uid 100000, other sandboxes' too.
        ]),
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
        env: Some(spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
        working_dir: Some(spec.cwd.display().to_string()),
        user: Some(USER.into()),
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
