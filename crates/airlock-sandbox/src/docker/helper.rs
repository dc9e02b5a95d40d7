//! The Docker helper: the airlock binary re-executed with [`HELPER_ARG`]. It
//! reads the request on stdin, sweeps what killed runs left behind, checks
//! that the image is present (never pulling it), stages the workspace in the
//! host's mount namespace (the daemon resolves bind sources there), creates,
//! attaches and starts the container, relays its output, enforces the
//! timeout, the output cap and the caller's lifeline, always removes the
//! container, reads the change report (applying it when asked), tears the
//! stage down and writes its report on fd 3.

use super::{config, sweep, Daemon, Request};
use crate::native::{namespaces, protocol};
use crate::oci::helper::{serve_one_request, stage_at, Stage, StageAccess, FD_CONTROL, FD_STDIN};
use crate::oci::HelperReport;
use crate::Layer;
use crate::{sys, workspace};
use crate::{KillReason, NetworkSpec, SandboxError};
use bollard::container::LogOutput;
use bollard::query_parameters::{
    AttachContainerOptions, CreateContainerOptions, KillContainerOptions, RemoveContainerOptions,
};
use bollard::{ClientVersion, Docker};
use futures_util::StreamExt;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

/// First argument that makes the airlock binary the Docker helper.
pub const HELPER_ARG: &str = "__airlock-docker-helper";
/// Where runs stage their workspaces: outside every workspace and state
/// directory, in the host's mount namespace; root's alone (0700, as is each
/// stage), since the daemon resolves the bind sources as root and no other
/// user may reach a staged workspace.
pub const STAGE_BASE: &str = "/run/airlock-docker";
/// The Engine API version spoken: dockerd 20.10 (Debian 12) and podman 4
/// both serve it; newer daemons accept it too.
const API: ClientVersion = ClientVersion {
    major_version: 1,
    minor_version: 41,
};
/// How often the helper looks at the caller while the command runs.
const TICK: Duration = Duration::from_millis(20);
/// Each call to the daemon outside the run itself is bounded by this.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the output of a container killed at a limit is read after the
/// kill, for what it wrote before.
const DRAIN_AFTER_KILL: Duration = Duration::from_secs(2);

/// Passes one chunk of the container's output on to the caller.
fn relay(chunk: LogOutput) {
    match chunk {
        LogOutput::StdOut { message } => {
            let _ = sys::write_all(1, &message);
        }
        LogOutput::StdErr { message } => {
            let _ = sys::write_all(2, &message);
        }
        _ => {}
    }
}

fn layer(layer: Layer, detail: impl Into<String>) -> SandboxError {
    SandboxError::Layer {
        layer,
        detail: detail.into(),
    }
}

/// Outlives a terminal's Ctrl-C to remove the container (see
/// [`serve_one_request`]).
pub fn helper_main() -> ! {
    serve_one_request::<Request>(run)
}

fn run(req: &Request) -> HelperReport {
    let spec = &req.spec;
    if !crate::native::rundir::valid_run_name(&spec.request_id) {
        return HelperReport::failed(
            Layer::Spec,
            format!("request id `{}` is not a valid run name", spec.request_id),
        );
    }
    if spec.argv.is_empty() || !spec.cwd.is_absolute() || !spec.workspace.root.is_absolute() {
        return HelperReport::failed(
            Layer::Spec,
            "argv must not be empty; cwd and the workspace root must be absolute".into(),
        );
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return HelperReport::failed(Layer::Docker, format!("async runtime: {e}")),
    };
    // Step 1: the daemon, and the image (present locally, never pulled).
    let docker = match rt.block_on(connect(&req.socket)) {
        Ok(d) => d,
        Err(e) => return HelperReport::from_error_of(e, Layer::Docker),
    };
    if let Err(e) = rt.block_on(image_present(&docker, &req.image)) {
        return HelperReport::from_error_of(e, Layer::Docker);
    }
    let daemon = rt.block_on(daemon_of(&docker));
    // Step 2: what killed runs left behind.
    let mut notes = rt.block_on(sweep::containers(&docker));
    notes.extend(sweep::stages(Path::new(STAGE_BASE)));
    // Step 3: the workspace, staged where the daemon sees it.
    let owner = sweep::owner_label();
    let mut files = Vec::new();
    let mut egress = None;
    let base = Path::new(STAGE_BASE);
    let stage = match stage_at(
        base,
        StageAccess::RootOnly,
        spec,
        &req.runs_dir,
        false,
        |stage| {
            write_files(stage, &owner, &mut files)?;
            egress = stage_egress(req, stage)?;
            Ok(())
        },
    ) {
        Ok(s) => s,
        Err(e) => return HelperReport::from_error_of(e, Layer::Docker),
    };
    // Step 4: the run; the container is removed whatever happens.
    // Network open: the container shares the host's network namespace and
    // with it the host's abstract unix sockets, which the relay scopes with
    // landlock before it becomes the command (the caller sends the relay
    // only where the kernel can).
    let scope = match spec.network {
        NetworkSpec::Open => req.relay.as_deref(),
        NetworkSpec::None | NetworkSpec::Proxy { .. } => None,
    };
    if spec.network == NetworkSpec::Open && scope.is_none() {
        notes.push(crate::native::landlock::NO_ABSTRACT_SCOPE_NOTE.into());
    }
    let extras = config::Extras {
        files: &files,
        egress: egress.as_ref(),
        scope,
    };
    let run = rt.block_on(run_container(req, &docker, daemon, &stage, &owner, &extras));
    let mut report = match run {
        Ok(r) => r,
        Err(e) => HelperReport::from_error_of(e, Layer::Docker),
    };
    report.notes.extend(notes);
    // Step 5: the change report and apply, from the overlay's upper layer.
    if let (Some(upper), false) = (&stage.upper, report.failure.is_some()) {
        let f = workspace::finish(upper, &spec.workspace, &spec.limits, spec.workspace.apply);
        report.applied = f.applied;
        report.violations.extend(f.violations);
        report.changes = f.changes;
        report.change_summary = Some(f.summary);
    }
    // Step 6: teardown.
    stage.remove();
    report
}

async fn connect(socket: &Path) -> Result<Docker, SandboxError> {
    let hint = "Hint: start the daemon (dockerd, or `podman system service`), or name its socket \
                with AIRLOCK_DOCKER_SOCKET";
    let path = socket.to_str().ok_or_else(|| {
        layer(
            Layer::Docker,
            format!("socket path {} is not UTF-8", socket.display()),
        )
    })?;
    let docker = Docker::connect_with_unix(path, CALL_TIMEOUT.as_secs(), &API)
        .map_err(|e| layer(Layer::Docker, format!("socket {path}: {e}; {hint}")))?;
    match tokio::time::timeout(CALL_TIMEOUT, docker.ping()).await {
        Ok(Ok(_)) => Ok(docker),
        Ok(Err(e)) => Err(layer(
            Layer::Docker,
            format!("the daemon at {path} does not answer: {e}; {hint}"),
        )),
        Err(_) => Err(layer(
            Layer::Docker,
            format!("the daemon at {path} did not answer within 30 s; {hint}"),
        )),
    }
}

/// Which daemon answers (podman's service takes some fields differently);
/// an answer that names no podman component is taken for dockerd's.
async fn daemon_of(docker: &Docker) -> Daemon {
    match tokio::time::timeout(CALL_TIMEOUT, docker.version()).await {
        Ok(Ok(v)) => {
            Daemon::from_components(v.components.iter().flatten().map(|c| c.name.as_str()))
        }
        _ => Daemon::Docker,
    }
}

async fn image_present(docker: &Docker, image: &str) -> Result<(), SandboxError> {
    match docker.inspect_image(image).await {
        Ok(_) => Ok(()),
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => Err(layer(
            Layer::Image,
            format!(
                "image `{image}` is not present on the daemon, and airlock never pulls one; \
                 Hint: build or import it locally (e.g. `debootstrap --variant=minbase \
                 --include=python3-minimal bookworm ROOTFS && tar -C ROOTFS -c . | docker import - \
                 {image}`), or name a present image in `[sandbox] image` or AIRLOCK_DOCKER_IMAGE"
            ),
        )),
        Err(e) => Err(layer(
            Layer::Image,
            format!("inspecting image `{image}`: {e}"),
        )),
    }
}

/// Writes the files the view makes (the git configuration) into the stage,
/// and the stage's owner (for the sweep).
fn write_files(
    stage: &mut Stage,
    owner: &str,
    files: &mut Vec<(PathBuf, PathBuf)>,
) -> Result<(), SandboxError> {
    std::fs::write(stage.dir.join(sweep::OWNER_FILE), owner)
        .map_err(|e| layer(Layer::Mounts, format!("stage owner file: {e}")))?;
    for op in &stage.ops {
        if let crate::view::ViewOp::WriteFile { path, content } = op {
            if path != Path::new(crate::GIT_CONFIG_FILE) {
                continue;
            }
            let at = stage.dir.join("gitconfig");
            std::fs::write(&at, content)
                .map_err(|e| layer(Layer::Mounts, format!("{}: {e}", at.display())))?;
            files.push((path.clone(), at));
        }
    }
    Ok(())
}

/// Network allowlist mode: the run's proxy socket, staged for the
/// container's user. The socket stays root's 0600 in its 0700 directory; the
/// stage gets an idmapped bind of it (read-only, nosuid, nodev, noexec) on
/// which its owner shows as uid 2000000000, the container's user, as the native
/// and OCI backends show it to sandbox root. The daemon binds that into the
/// container; nobody else gains a way to it.
fn stage_egress(req: &Request, stage: &Stage) -> Result<Option<config::Egress>, SandboxError> {
    let socket = match &req.spec.network {
        NetworkSpec::Proxy { socket } => socket,
        NetworkSpec::None | NetworkSpec::Open => return Ok(None),
    };
    let relay = req.relay.clone().ok_or_else(|| {
        layer(
            Layer::Network,
            "allowlist mode without the in-sandbox relay binary (the caller names it)",
        )
    })?;
    let at = stage.dir.join("proxy.sock");
    std::fs::write(&at, b"")
        .map_err(|e| layer(Layer::Network, format!("{}: {e}", at.display())))?;
    let (uid, gid) = crate::sys::owner(socket).ok_or_else(|| {
        layer(
            Layer::Network,
            format!("the egress proxy's socket {} is gone", socket.display()),
        )
    })?;
    let userns = namespaces::user_ns(uid, gid)?;
    let tree = sys::clone_tree(socket, false)
        .map_err(|e| layer(Layer::Network, format!("{}: {e}", socket.display())))?;
    let attrs = sys::MOUNT_ATTR_RDONLY
        | sys::MOUNT_ATTR_NOSUID
        | sys::MOUNT_ATTR_NODEV
        | sys::MOUNT_ATTR_NOEXEC;
    sys::set_tree_attrs(&tree, attrs, Some(userns.as_raw_fd())).map_err(|e| {
        layer(
            Layer::Network,
            format!("idmapped bind of the proxy socket: {e}"),
        )
    })?;
    sys::attach_tree_at(&tree, &at)
        .map_err(|e| layer(Layer::Network, format!("bind of the proxy socket: {e}")))?;
    Ok(Some(config::Egress { socket: at, relay }))
}

/// Creates, runs and always removes the container.
async fn run_container(
    req: &Request,
    docker: &Docker,
    daemon: Daemon,
    stage: &Stage,
    owner: &str,
    extras: &config::Extras<'_>,
) -> Result<HelperReport, SandboxError> {
    let spec = &req.spec;
    let form = config::DaemonForm {
        daemon,
        seccomp_file: stage.dir.join("seccomp.json"),
        pid_max: std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(32768),
    };
    if daemon == Daemon::Podman {
        let profile = config::seccomp_profile(spec).to_string();
        std::fs::write(&form.seccomp_file, profile).map_err(|e| {
            layer(
                Layer::Seccomp,
                format!("{}: {e}", form.seccomp_file.display()),
            )
        })?;
    }
    let mut body = config::translate(
        spec,
        &stage.ops,
        &stage.staged,
        &req.image,
        owner,
        extras,
        &form,
    )
    .map_err(|d| layer(Layer::Docker, d))?;
    if !req.stdin {
        body.attach_stdin = Some(false);
        body.open_stdin = Some(false);
        body.stdin_once = Some(false);
    }
    let name = format!("airlock-{}", spec.request_id);
    let created = docker
        .create_container(
            Some(CreateContainerOptions {
                name: Some(name),
                ..Default::default()
            }),
            body,
        )
        .await
        .map_err(|e| layer(Layer::Docker, format!("creating the container: {e}")))?;
    let id = created.id;
    let result = match extras.egress {
        Some(_) => usable_run(docker, &id, &req.image).await,
        None => Ok(()),
    };
    let result = match result {
        Ok(()) => drive(req, docker, &id).await,
        Err(e) => Err(e),
    };
    let removed = remove(docker, &id).await;
    let mut report = result?;
    if let Err(e) = removed {
        report.notes.push(e);
    }
    Ok(report)
}

/// Allowlist mode binds the relay and the proxy socket under `/run/airlock`,
/// so the image's `/run` must be a directory, or absent (the runtime makes
/// mount points, as it does for every bind). Asked of the created container
/// before it starts, through the daemon's path stat, which dockerd and podman
/// both answer: `/run/.` resolves a symlink inside the image, as the runtime
/// would. A file there (or a link to one) is refused with what would fix it,
/// rather than left to the runtime's mount error at start.
async fn usable_run(docker: &Docker, id: &str, image: &str) -> Result<(), SandboxError> {
    use bollard::query_parameters::ContainerArchiveInfoOptions;
    /// Go's os.ModeDir, as the stat reports the mode.
    const MODE_DIR: u32 = 1 << 31;
    let refuse = |what: String| {
        layer(
            Layer::Image,
            format!(
                "network allowlist mode binds the egress relay and the proxy socket under \
                 /run/airlock, and the image's /run {what}; Hint: make /run a directory in \
                 image `{image}` (e.g. `rm -f ROOTFS/run && mkdir ROOTFS/run` before importing \
                 it), or use network mode none"
            ),
        )
    };
    let opts = ContainerArchiveInfoOptions {
        path: "/run/.".into(),
    };
    match tokio::time::timeout(
        CALL_TIMEOUT,
        docker.get_container_archive_info(id, Some(opts)),
    )
    .await
    {
        Ok(Ok(stat)) if stat.file_mode & MODE_DIR != 0 => Ok(()),
        Ok(Ok(_)) => Err(refuse("is not a directory".into())),
        Ok(Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        })) => Ok(()),
        Ok(Err(e)) => Err(refuse(format!(
            "is not a usable directory (the daemon could not look into it: {e})"
        ))),
        Err(_) => Err(refuse(
            "was not looked at: the daemon did not answer within 30 s".into(),
        )),
    }
}

/// Removes the container, retrying while the daemon is busy with it.
pub(crate) async fn remove(docker: &Docker, id: &str) -> Result<(), String> {
    let mut last = String::new();
    for attempt in 0..5u64 {
        let opts = RemoveContainerOptions {
            force: true,
            v: true,
            ..Default::default()
        };
        match tokio::time::timeout(CALL_TIMEOUT, docker.remove_container(id, Some(opts))).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            })) => return Ok(()),
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => last = "timed out".into(),
        }
        tokio::time::sleep(Duration::from_millis(100 * (attempt + 1))).await;
    }
    Err(format!("removing container {id}: {last}"))
}

/// What the caller's control pipe said since the last look.
enum Control {
    Quiet,
    /// The output passed its cap.
    OutputCap,
    /// The caller stopped waiting for the run.
    Cancelled,
    /// The caller is gone.
    Gone,
}

fn control() -> Control {
    match sys::poll(&[FD_CONTROL], 0) {
        Ok(r) if r.first().is_some_and(|e| *e != 0) => {
            let mut b = [0u8; 1];
            match sys::read(FD_CONTROL, &mut b) {
                Ok(1) if b[0] == protocol::CONTROL_KILL_OUTPUT => Control::OutputCap,
                Ok(1) if b[0] == protocol::CONTROL_KILL_CANCELLED => Control::Cancelled,
                Ok(1) => Control::Quiet,
                _ => Control::Gone,
            }
        }
        _ => Control::Quiet,
    }
}

/// Attaches, starts, relays output and stdin, enforces the timeout and the
/// caller's word, and reads how the command ended.
async fn drive(req: &Request, docker: &Docker, id: &str) -> Result<HelperReport, SandboxError> {
    let spec = &req.spec;
    let attached = docker
        .attach_container(
            id,
            Some(AttachContainerOptions {
                stream: true,
                stdin: req.stdin,
                stdout: true,
                stderr: true,
                ..Default::default()
            }),
        )
        .await
        .map_err(|e| layer(Layer::Docker, format!("attaching to the container: {e}")))?;
    let mut output = attached.output;
    let mut input = attached.input;
    docker.start_container(id, None).await.map_err(|e| {
        let e = e.to_string();
        // crun before 1.9 refuses a hybrid cgroup host (v1 controllers
        // plus a v2 hierarchy holding one); runc runs there.
        let hint = if e.contains("hybrid mode") {
            "; Hint: this host mixes cgroup v1 and v2, which the daemon's crun refuses: \
                 start it with runc (`podman --runtime runc system service`, or dockerd's \
                 default runtime)"
        } else {
            ""
        };
        layer(Layer::Docker, format!("starting the container: {e}{hint}"))
    })?;
    let started = Instant::now();
    // The command's stdin: the caller's pipe, copied until EOF, then closed.
    // SAFETY: the caller passed fd FD_STDIN to this process and nothing else owns it.
    let stdin_fd = unsafe { OwnedFd::from_raw_fd(FD_STDIN) };
    if req.stdin {
        let mut file = tokio::fs::File::from_std(std::fs::File::from(stdin_fd));
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut file, &mut input).await;
            let _ = input.shutdown().await;
        });
    } else {
        drop(stdin_fd);
        drop(input);
    }
    let deadline = started + Duration::from_millis(spec.limits.timeout_ms);
    let mut killed_by = None;
    let mut caller_gone = false;
    let mut cgroup = super::cgroup::Watch::new(id);
    let mut last_sample = Instant::now();
    loop {
        match control() {
            Control::Quiet => {}
            Control::OutputCap => killed_by = Some(KillReason::Output),
            Control::Cancelled => killed_by = Some(KillReason::Cancelled),
            Control::Gone => caller_gone = true,
        }
        if last_sample.elapsed() >= TICK {
            last_sample = Instant::now();
            if cgroup.sample() && killed_by.is_none() {
                killed_by = Some(KillReason::Pids);
            }
        }
        if killed_by.is_none() && !caller_gone && Instant::now() >= deadline {
            killed_by = Some(KillReason::Timeout);
        }
        if killed_by.is_some() || caller_gone {
            break;
        }
        match tokio::time::timeout(TICK, output.next()).await {
            Ok(Some(Ok(chunk))) => relay(chunk),
            Ok(Some(Err(_))) | Ok(None) => break,
            Err(_) => {}
        }
    }
    // One last look before the daemon removes the cgroup: the command may
    // have ended on a limit since the previous tick.
    if cgroup.sample() && killed_by.is_none() {
        killed_by = Some(KillReason::Pids);
    }
    let kill = || async {
        let opts = KillContainerOptions {
            signal: "KILL".into(),
        };
        let _ = tokio::time::timeout(CALL_TIMEOUT, docker.kill_container(id, Some(opts))).await;
    };
    match killed_by {
        // Killed at a limit: what the command wrote before still reaches the
        // caller. The daemon ends the stream once the dead container's output
        // is delivered; a daemon that does not is waited for only so long.
        Some(reason) if reason != KillReason::Output && !caller_gone => {
            kill().await;
            let _ = tokio::time::timeout(DRAIN_AFTER_KILL, async {
                while let Some(Ok(chunk)) = output.next().await {
                    relay(chunk);
                }
            })
            .await;
            drop(output);
        }
        _ => {
            // The daemon finishes a container only once its output is
            // delivered: past the output cap, or with the caller gone, the
            // stream is closed before the kill, so that nothing unread holds
            // the end back.
            drop(output);
            // A stream closed by the command's end: its cgroup (an OOM kill's
            // counter) stays until the daemon reaps the container.
            if cgroup.sample() && killed_by.is_none() && !caller_gone {
                killed_by = Some(KillReason::Pids);
            }
            if killed_by.is_some() || caller_gone {
                kill().await;
            }
        }
    }
    let code = wait(docker, id).await?;
    let duration_ms = started.elapsed().as_millis() as u64;
    let state = docker
        .inspect_container(id, None)
        .await
        .ok()
        .and_then(|c| c.state);
    let oom = state.as_ref().and_then(|s| s.oom_killed).unwrap_or(false);
    let mut report = HelperReport {
        duration_ms,
        cpu_ms: cgroup.cpu_ms,
        peak_memory_bytes: cgroup.peak_memory_bytes,
        ..Default::default()
    };
    let oom = oom || (cgroup.oom_kills > 0 && code == 128 + i64::from(libc::SIGKILL));
    if oom && killed_by.is_none() {
        killed_by = Some(KillReason::Memory);
    }
    // The daemon reports a command killed by signal N as exit code 128 + N.
    match (killed_by, code) {
        (Some(_), _) => report.signal = Some(libc::SIGKILL),
        (None, c) if (129..160).contains(&c) => report.signal = Some((c - 128) as i32),
        (None, c) => report.exit_code = Some(c as i32),
    }
    if killed_by.is_none() && cpu_limit_hit(report.signal, cgroup.cpu_ms, spec.limits.cpu_time_ms) {
        killed_by = Some(KillReason::CpuTime);
    }
    report.killed_by = killed_by;
    if caller_gone {
        report
            .notes
            .push("the caller went away; container killed".into());
    }
    Ok(report)
}

/// Whether a command that ended on `signal` was stopped by RLIMIT_CPU: the
/// kernel sends SIGXCPU at the soft limit and SIGKILL at the hard one (both
/// are set to the limit rounded up to whole seconds). The CPU time is the
/// cgroup's as last sampled, which lags the kill by a tick, or by several on
/// a loaded host (the daemon may remove the cgroup before the last sample),
/// hence a slack of a quarter of the limit, at least 250 ms. A SIGKILL the
/// program sent itself after using most of its budget is named cpu_time too:
/// a misnamed end, never a missed limit.
fn cpu_limit_hit(signal: Option<i32>, cpu_ms: u64, limit_ms: u64) -> bool {
    let slack_ms = (limit_ms / 4).max(250);
    signal == Some(libc::SIGXCPU)
        || (signal == Some(libc::SIGKILL) && cpu_ms + slack_ms >= limit_ms)
}

/// The container's exit code, once it has stopped.
async fn wait(docker: &Docker, id: &str) -> Result<i64, SandboxError> {
    let mut waiting = docker.wait_container(id, None);
    match tokio::time::timeout(CALL_TIMEOUT, waiting.next()).await {
        Ok(Some(Ok(r))) => Ok(r.status_code),
        Ok(Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. }))) => Ok(code),
        Ok(Some(Err(e))) => Err(layer(
            Layer::Docker,
            format!("waiting for the container: {e}"),
        )),
        Ok(None) => Err(layer(Layer::Docker, "waiting for the container: no answer")),
        Err(_) => Err(layer(
            Layer::Docker,
            "the container did not stop within 30 s of its end or kill",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::cpu_limit_hit;

    #[test]
    fn cpu_limit_is_named_from_the_signal_and_the_sampled_time() {
        assert!(cpu_limit_hit(Some(libc::SIGXCPU), 0, 2000));
        // The last sample lags the kill by a tick or more.
        assert!(cpu_limit_hit(Some(libc::SIGKILL), 1900, 2000));
        assert!(cpu_limit_hit(Some(libc::SIGKILL), 1550, 2000));
        assert!(!cpu_limit_hit(Some(libc::SIGKILL), 1400, 2000));
        assert!(!cpu_limit_hit(Some(libc::SIGKILL), 100, 2000));
        assert!(!cpu_limit_hit(None, 5000, 2000));
        assert!(!cpu_limit_hit(Some(libc::SIGTERM), 5000, 2000));
    }
}
