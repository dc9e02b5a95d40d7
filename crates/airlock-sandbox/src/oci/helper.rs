//! The OCI helper: the airlock binary re-executed with [`HELPER_ARG`]. It
//! reads the request on stdin, makes a private mount namespace, stages the
//! workspace (the native backend's layout: an idmapped lower layer, an
//! overlay whose upper layer is a size-capped tmpfs), writes the bundle, runs
//! the runtime inside the run's cgroup, enforces the timeout, the output cap
//! and the caller's lifeline, always kills and deletes the container, reads
//! the change report (applying it when asked), tears everything down and
//! writes its report on fd 3.

use super::bundle::{self, RootfsEntry, Staged};
use super::runtime::{RunNetwork, Runtime};
use super::{HelperReport, Privilege, Request};
use crate::native::cgroup_glue::RunCgroup;
use crate::native::{namespaces, netwatch, protocol};
use crate::relay;
use crate::view::{self, ViewOp};
use crate::Layer;
use crate::{sys, workspace};
use crate::{KillReason, NetworkSpec, SandboxError, WorkspaceMode};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// First argument that makes the airlock binary the OCI helper.
pub const HELPER_ARG: &str = "__airlock-oci-helper";
/// The fd the report is written to.
pub const FD_REPORT: RawFd = 3;
/// The caller's lifeline: EOF means the caller is gone; a
/// [`protocol::CONTROL_KILL_OUTPUT`] byte means the output passed its cap.
pub const FD_CONTROL: RawFd = 4;
/// The read end of the command's stdin pipe.
pub const FD_STDIN: RawFd = 5;
/// Where runs stage their bundles: outside every workspace and state
/// directory, traversable by sandbox root (the runtime resolves the bundle's
/// paths inside the container's user namespace).
pub const STAGE_BASE: &str = "/run/airlock-oci";
/// Host threads allowed in the run's cgroup for gVisor's own processes, on top
/// of `limits.pids`.
pub const GVISOR_HOST_THREADS: u32 = 512;
/// How often the helper looks at the runtime, the cgroup and the caller.
const TICK: Duration = Duration::from_millis(20);
/// How often a run without a cgroup sums the CPU time of runsc's processes.
const CPU_SAMPLE: Duration = Duration::from_millis(100);
/// Setup (bundle, runtime start) gets its own bound on top of the timeout.
const SETUP_GRACE: Duration = Duration::from_secs(30);

fn fail(layer: Layer, what: impl std::fmt::Display, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Layer {
        layer,
        detail: format!("{what}: {e}"),
    }
}

pub fn helper_main() -> ! {
    serve_one_request::<Request>(run)
}

/// A one-shot helper's life (oci, docker): it outlives the terminal's
/// signals, reads its request from stdin, runs it and writes the report to
/// [`FD_REPORT`].
pub(crate) fn serve_one_request<R: serde::de::DeserializeOwned>(
    run: impl FnOnce(&R) -> HelperReport,
) -> ! {
    ignore_terminal_signals();
    let report = match std::io::read_to_string(std::io::stdin()) {
        Ok(text) => match serde_json::from_str::<R>(&text) {
            Ok(req) => run(&req),
            Err(e) => HelperReport::failed(Layer::Spec, format!("unreadable request: {e}")),
        },
        Err(e) => HelperReport::failed(Layer::Spec, format!("reading the request: {e}")),
    };
    let bytes = serde_json::to_vec(&report).unwrap_or_default();
    let _ = sys::write_all(FD_REPORT, &bytes);
    sys::exit_now(0)
}

/// A terminal's Ctrl-C reaches the whole process group: a helper outlives it
/// to tear down (the caller's death closes its lifeline). Writes to a closed
/// pipe fail instead of killing it. Called first thing, single-threaded.
pub(crate) fn ignore_terminal_signals() {
    // SAFETY: signal dispositions are process-wide; the helper is
    // single-threaded when it calls this.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTERM] {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
}

/// Network allowlist mode on the helper's side: the relay's listeners in the
/// empty network namespace the helper made for the run, and the socket the
/// runtime hands the container's seccomp listener to, for the netwatch
/// supervisor.
struct EgressRun {
    relay: relay::Relay,
    /// Bound when the bundle is written ([`EgressRun::prepare`]).
    seccomp: Option<UnixListener>,
}

/// The watching rules' listener, handed over by the runtime.
type Watch = std::sync::mpsc::Receiver<netwatch::Supervisor>;

impl EgressRun {
    /// Moves the helper into a new network namespace (loopback only) and
    /// binds the relay to the proxy's socket there. Everything the helper
    /// starts afterwards (the runtime) is in it too.
    fn enter(socket: &Path) -> Result<EgressRun, SandboxError> {
        sys::unshare(libc::CLONE_NEWNET)
            .map_err(|e| fail(Layer::Network, "unshare(CLONE_NEWNET)", e))?;
        namespaces::loopback_up()?;
        let relay = relay::Relay::bind_standard(socket)
            .map_err(|e| fail(Layer::Network, "relay bind", e))?;
        Ok(EgressRun {
            relay,
            seccomp: None,
        })
    }

    /// What the bundle needs: the namespace to join and the socket (in the
    /// stage) the runtime hands the seccomp listener to.
    fn prepare(&mut self, dir: &Path) -> Result<bundle::Egress, SandboxError> {
        let at = dir.join("seccomp.sock");
        let l = UnixListener::bind(&at)
            .map_err(|e| fail(Layer::Netwatch, format!("bind {}", at.display()), e))?;
        std::fs::set_permissions(&at, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| fail(Layer::Netwatch, format!("chmod {}", at.display()), e))?;
        self.seccomp = Some(l);
        Ok(bundle::Egress::HostRelay {
            netns: PathBuf::from(format!("/proc/{}/ns/net", std::process::id())),
            seccomp_listener: at,
        })
    }

    /// Starts the relay and, with a listener socket, the thread that waits for
    /// the runtime to hand over the container's seccomp listener and starts
    /// the netwatch supervisor on it. Call after the last fork.
    fn start(self) -> Result<Option<Watch>, SandboxError> {
        let pass = self.relay.local_addrs().unwrap_or_default();
        self.relay
            .start()
            .map_err(|e| fail(Layer::Network, "relay start", e))?;
        let Some(listener) = self.seccomp else {
            return Ok(None);
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("airlock-seccomp-agent".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                let Ok((conn, _)) = listener.accept() else {
                    return;
                };
                let Some(fd) = receive_fd(&conn) else { return };
                let rules = netwatch::WatchRules {
                    pass,
                    pass_loopback: false,
                };
                if let Ok(s) = netwatch::Supervisor::spawn(fd, rules) {
                    let _ = tx.send(s);
                }
            })
            .map_err(|e| fail(Layer::Netwatch, "agent thread", e))?;
        Ok(Some(rx))
    }
}

/// The seccomp listener a runtime sends to `linux.seccomp.listenerPath`:
/// one message (the container's state as JSON) with the descriptor in
/// `SCM_RIGHTS`.
fn receive_fd(conn: &std::os::unix::net::UnixStream) -> Option<OwnedFd> {
    use rustix::net::{recvmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut state = vec![0u8; 64 << 10];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    recvmsg(
        conn,
        &mut [std::io::IoSliceMut::new(&mut state)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .ok()?;
    let mut fds = Vec::new();
    for m in control.drain() {
        if let RecvAncillaryMessage::ScmRights(r) = m {
            fds.extend(r);
        }
    }
    // One descriptor is the protocol; anything else is not a seccomp listener.
    (fds.len() == 1).then(|| fds.remove(0))
}

/// Everything staged on the host for one run; torn down by [`Stage::remove`].
pub(crate) struct Stage {
    pub dir: PathBuf,
    /// The overlay's upper directory (overlay mode).
    pub upper: Option<PathBuf>,
    pub staged: Staged,
    /// The sandbox's view, as planned for this host.
    pub ops: Vec<ViewOp>,
}

impl Stage {
    pub(crate) fn remove(&self) {
        // Only once the stage's tmpfs (and every bind below it, the
        // workspace among them) is gone may its directory be emptied.
        if sys::umount_detach(&self.dir).is_ok() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
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
    // Step 1: a mount namespace of our own: nothing staged here is seen
    // outside. Rootless (gVisor only), inside a user namespace of our own
    // too, where the caller is root and holds the capabilities the staging
    // needs over namespaces it owns.
    let base = match &req.privilege {
        Privilege::Root => {
            if let Err(e) = sys::unshare(libc::CLONE_NEWNS) {
                return HelperReport::failed(
                    Layer::Namespaces,
                    format!("unshare(CLONE_NEWNS): {e}"),
                );
            }
            if let Err(e) = sys::make_mounts_private() {
                return HelperReport::failed(Layer::Mounts, format!("make mounts private: {e}"));
            }
            PathBuf::from(STAGE_BASE)
        }
        Privilege::Rootless { stage_base } => {
            if !req.runtime.is_gvisor() {
                return HelperReport::failed(
                    Layer::Backend,
                    super::backend::unprivileged_refusal(req.runtime),
                );
            }
            // Made before the namespace, as the caller: private to it.
            if let Err(e) = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(stage_base)
            {
                return HelperReport::failed(
                    Layer::Mounts,
                    format!("mkdir {}: {e}", stage_base.display()),
                );
            }
            if let Err(e) = crate::native::rootless::enter_own_user_ns() {
                return HelperReport::from_error(e);
            }
            // No cgroup to kill the run's processes with: runsc's sandbox and
            // gofer, orphaned when `runsc run` ends, come back to the helper,
            // which kills and reaps them before it reports.
            // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer.
            if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
                return HelperReport::failed(
                    Layer::Helper,
                    format!(
                        "prctl(PR_SET_CHILD_SUBREAPER): {}",
                        std::io::Error::last_os_error()
                    ),
                );
            }
            stage_base.clone()
        }
    };
    let rootless = req.privilege.is_rootless();
    // Allowlist mode, OCI runtimes: the helper moves into an empty network
    // namespace of its own, binds the relay there, and the container joins
    // it. gVisor: the relay runs inside, the socket and relay are staged.
    let mut egress = None;
    let mut guest_relay = None;
    match (&spec.network, req.runtime) {
        (NetworkSpec::Proxy { socket }, Runtime::Runsc(g)) => {
            if let Err(detail) = guest_relay_possible(g.host_uds, req.relay.as_deref()) {
                return HelperReport::failed(Layer::Network, detail);
            }
            guest_relay = req.relay.as_deref().map(|r| (socket.as_path(), r));
        }
        (NetworkSpec::Proxy { socket }, _) => match EgressRun::enter(socket) {
            Ok(e) => egress = Some(e),
            Err(e) => return HelperReport::from_error(e),
        },
        _ => {}
    }
    // What runs killed outright left under the base (their stage
    // directories, empty outside their dead mount namespaces); then this
    // run's owner file beside its stage, written before the directory exists
    // so that no stage is ever left without one.
    let swept = super::owner::sweep_stages(&base);
    let _owner = match OwnerFile::write(&base, &spec.request_id) {
        Ok(o) => o,
        Err(e) => return HelperReport::from_error(e),
    };
    // Step 2: the workspace and the bundle.
    let stage = match stage_at(
        &base,
        StageAccess::Runtime,
        &req.spec,
        &req.runs_dir,
        rootless,
        |stage| {
            if let Some(e) = egress.as_mut() {
                stage.staged.egress = Some(e.prepare(&stage.dir)?);
            }
            if let Some((socket, relay)) = guest_relay {
                stage.staged.egress = Some(stage_guest_relay(&stage.dir, socket, relay, rootless)?);
            }
            write_bundle(req, stage)
        },
    ) {
        Ok(s) => s,
        Err(e) => return HelperReport::from_error(e),
    };
    // Step 3: the run.
    let mut report = match run_container(req, &stage, egress) {
        Ok(r) => r,
        Err(e) => {
            stage.remove();
            return HelperReport::from_error(e);
        }
    };
    // Step 4: the change report and apply, from the overlay's upper layer.
    if let (Some(upper), false) = (&stage.upper, report.failure.is_some()) {
        let f = workspace::finish(upper, &spec.workspace, &spec.limits, spec.workspace.apply);
        report.applied = f.applied;
        report.violations.extend(f.violations);
        report.changes = f.changes;
        report.change_summary = Some(f.summary);
    }
    // Step 5: teardown (the owner file goes after the stage, when `_owner`
    // drops).
    stage.remove();
    report.notes.extend(swept);
    report
}

/// A stage's owner file ([`super::owner::STAGE_OWNER_SUFFIX`]), removed
/// when dropped.
struct OwnerFile(PathBuf);

impl OwnerFile {
    fn write(base: &Path, run: &str) -> Result<OwnerFile, SandboxError> {
        mkdir(base, StageAccess::Runtime.mode())?;
        let path = base.join(format!("{run}{}", super::owner::STAGE_OWNER_SUFFIX));
        std::fs::write(&path, super::owner::owner_label())
            .map_err(|e| fail(Layer::Mounts, path.display(), e))?;
        Ok(OwnerFile(path))
    }
}

impl Drop for OwnerFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Whether gVisor's allowlist mode can run: runsc must be able to let its
/// gofer connect to the proxy's host socket, and the caller must have found
/// the in-sandbox relay.
fn guest_relay_possible(
    host_uds: Option<super::runtime::HostUds>,
    relay: Option<&Path>,
) -> Result<(), String> {
    if host_uds.is_none() {
        return Err(format!(
            "network allowlist mode under gVisor needs runsc to connect to the egress proxy's \
             host unix socket, and this runsc has neither `--host-uds` nor `--fsgofer-host-uds` \
             (`runsc flags`); {}",
            super::caps::GVISOR_ALLOWLIST_HINT
        ));
    }
    if relay.is_none() {
        return Err(
            "network allowlist mode under gVisor: the caller sent no in-sandbox relay".into(),
        );
    }
    Ok(())
}

/// gVisor's allowlist mode: the egress proxy's socket and the relay binary
/// in the stage, where runsc's gofer (host uid 2000000000) reaches them whatever
/// the directories above the originals let through. The socket (root's,
/// 0600) is idmapped so that sandbox root owns it and may connect; the relay
/// is a plain bind and must be readable and executable by others. Rootless,
/// the gofer is the caller, who owns the proxy's socket: both plain binds.
fn stage_guest_relay(
    dir: &Path,
    socket: &Path,
    relay: &Path,
    rootless: bool,
) -> Result<bundle::Egress, SandboxError> {
    use std::os::unix::fs::MetadataExt;
    let layer = Layer::Network;
    let sock_at = dir.join("proxy.sock");
    std::fs::write(&sock_at, b"").map_err(|e| fail(layer, sock_at.display(), e))?;
    let tree = sys::clone_tree(socket, false).map_err(|e| fail(layer, socket.display(), e))?;
    let userns = if rootless { None } else { idmap_for(socket)? };
    sys::set_tree_attrs(
        &tree,
        sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV | sys::MOUNT_ATTR_NOEXEC,
        userns.as_ref().map(|f| f.as_raw_fd()),
    )
    .map_err(|e| fail(layer, "idmap the proxy socket", e))?;
    sys::attach_tree_at(&tree, &sock_at).map_err(|e| fail(layer, "bind the proxy socket", e))?;

    let mode = std::fs::metadata(relay)
        .map_err(|e| fail(layer, relay.display(), e))?
        .mode();
    if !rootless && mode & 0o005 != 0o005 {
        return Err(fail(
            layer,
            relay.display(),
            format!(
                "mode {:o}: runsc's gofer (uid {}) cannot read and execute it; Hint: chmod a+rx it",
                mode & 0o7777,
                namespaces::SANDBOX_HOST_UID
            ),
        ));
    }
    let relay_at = dir.join("relay");
    std::fs::write(&relay_at, b"").map_err(|e| fail(layer, relay_at.display(), e))?;
    let c = sys::cpath(relay).map_err(|e| fail(layer, relay.display(), e))?;
    sys::mount(Some(&c), &relay_at, None, libc::MS_BIND, None)
        .map_err(|e| fail(layer, format!("bind {}", relay.display()), e))?;
    Ok(bundle::Egress::GuestRelay {
        socket: sock_at,
        relay: relay_at,
    })
}

pub(crate) fn mkdir(p: &Path, mode: u32) -> Result<(), SandboxError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(p)
        .map_err(|e| fail(Layer::Mounts, format!("mkdir {}", p.display()), e))?;
    // The umask may have narrowed it.
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
        .map_err(|e| fail(Layer::Mounts, format!("chmod {}", p.display()), e))
}

pub(crate) fn tmpfs_with(
    at: &Path,
    bytes: u64,
    mode: &str,
    what: &str,
    flags: libc::c_ulong,
) -> Result<(), SandboxError> {
    let data = CString::new(format!(
        "size={bytes},nr_inodes={},mode={mode}",
        view::inode_cap(bytes)
    ))
    .map_err(|e| fail(Layer::Mounts, what, e))?;
    sys::mount(Some(c"tmpfs"), at, Some(c"tmpfs"), flags, Some(&data))
        .map_err(|e| fail(Layer::Mounts, what, e))
}

/// A user namespace whose root maps `path`'s owner to sandbox root, for an
/// idmapped mount of `path` (files the caller owns belong to sandbox root).
fn idmap_for(path: &Path) -> Result<Option<OwnedFd>, SandboxError> {
    match crate::sys::owner(path) {
        Some((uid, gid)) => namespaces::user_ns(uid, gid).map(Some),
        None => Ok(None),
    }
}

/// Clones `src` (recursively), idmapped, and attaches it at `at`. Rootless,
/// not idmapped: sandbox root is the caller, who owns the files already.
fn attach_idmapped(
    tree: OwnedFd,
    src: &Path,
    at: &Path,
    read_only: bool,
    rootless: bool,
) -> Result<(), SandboxError> {
    let userns = if rootless { None } else { idmap_for(src)? };
    let mut attrs = sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV;
    if read_only {
        attrs |= sys::MOUNT_ATTR_RDONLY;
    }
    sys::set_tree_attrs(&tree, attrs, userns.as_ref().map(|f| f.as_raw_fd())).map_err(|e| {
        fail(
            Layer::Workspace,
            format!("idmapped bind of {}", src.display()),
            e,
        )
    })?;
    sys::attach_tree_at(&tree, at)
        .map_err(|e| fail(Layer::Workspace, format!("attach {}", src.display()), e))
}

/// Who must pass through a stage's directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StageAccess {
    /// An OCI runtime inside the container's user namespace (sandbox root,
    /// host uid [`namespaces::SANDBOX_HOST_UID`]) opens the bundle and the
    /// staged sources itself: the base, the run's directory and its tmpfs are
    /// 0711. The stage lives in the helper's private mount namespace.
    Runtime,
    /// Only host root: a daemon (dockerd, podman's service) resolves the
    /// bind sources as root, and the container never walks the stage. The
    /// stage lives in the host's mount namespace, where any local user could
    /// otherwise list and read the staged workspace, and a user holding the
    /// sandbox's uid write into it: base, directory and tmpfs are 0700.
    #[cfg_attr(not(feature = "docker"), allow(dead_code))]
    RootOnly,
}

impl StageAccess {
    fn mode(self) -> u32 {
        match self {
            StageAccess::Runtime => 0o711,
            StageAccess::RootOnly => 0o700,
        }
    }
}

/// Stages the run's workspace and paths in a directory of its own under
/// `base` (a small tmpfs), then lets `finish` add what its backend needs.
pub(crate) fn stage_at(
    base: &Path,
    access: StageAccess,
    spec: &crate::SandboxSpec,
    runs_dir: &Path,
    rootless: bool,
    finish: impl FnOnce(&mut Stage) -> Result<(), SandboxError>,
) -> Result<Stage, SandboxError> {
    // The workspace tree is copied before anything is mounted.
    let ws_tree = sys::clone_tree(&spec.workspace.root, true)
        .map_err(|e| fail(Layer::Workspace, spec.workspace.root.display(), e))?;
    // `mkdir` also narrows a base an older airlock made wider.
    mkdir(base, access.mode())?;
    let dir = base.join(&spec.request_id);
    std::fs::DirBuilder::new()
        .mode(access.mode())
        .create(&dir)
        .map_err(|e| fail(Layer::Mounts, format!("mkdir {}", dir.display()), e))?;
    // Bundle, rootfs files and the runtime's state: a small tmpfs of the run's own.
    // No mount flags: a runtime inside the container's user namespace could
    // not remount the root read-only over flags locked by this namespace.
    let tmpfs_mode = format!("{:04o}", access.mode());
    if let Err(e) = tmpfs_with(&dir, 16 << 20, &tmpfs_mode, "tmpfs for the bundle", 0) {
        let _ = std::fs::remove_dir(&dir);
        return Err(e);
    }
    let ops = view::plan(
        &view::ViewInput {
            spec,
            run_dir: &runs_dir.join(&spec.request_id),
            passwd: view::PASSWD,
            group: view::GROUP,
        },
        &view::RealHost,
    );
    let mut stage = Stage {
        dir: dir.clone(),
        upper: None,
        staged: Staged {
            workspace: dir.join("lower"),
            write_paths: Vec::new(),
            read_paths: Vec::new(),
            egress: None,
            root_host_id: if rootless { 0 } else { bundle::HOST_ID },
        },
        ops,
    };
    match fill(spec, ws_tree, &mut stage, rootless).and_then(|()| finish(&mut stage)) {
        Ok(()) => Ok(stage),
        Err(e) => {
            stage.remove();
            Err(e)
        }
    }
}

fn fill(
    spec: &crate::SandboxSpec,
    ws_tree: OwnedFd,
    stage: &mut Stage,
    rootless: bool,
) -> Result<(), SandboxError> {
    let dir = stage.dir.clone();
    let ops = stage.ops.clone();

    let (seen, upper) = stage_workspace(spec, ws_tree, &dir, rootless)?;
    stage.staged.workspace = seen;
    stage.upper = upper;

    // The write paths, idmapped like the workspace.
    for (i, op) in ops.iter().enumerate() {
        if let ViewOp::BindRw { src, dst } = op {
            let at = dir.join(format!("w{i}"));
            if src.is_dir() {
                mkdir(&at, 0o755)?;
            } else {
                std::fs::write(&at, b"").map_err(|e| fail(Layer::Filesystem, at.display(), e))?;
            }
            let tree = sys::clone_tree(src, true)
                .map_err(|e| fail(Layer::Filesystem, src.display(), e))?;
            attach_idmapped(tree, src, &at, false, rootless)?;
            stage.staged.write_paths.push((dst.clone(), at));
        }
    }

    // Read-only sources behind a directory closed to others: bound into the
    // stage, which the container's user namespace can reach.
    for (i, op) in ops.iter().enumerate() {
        if let ViewOp::BindRo { src, dst } = op {
            if reachable(src) {
                continue;
            }
            let at = dir.join(format!("r{i}"));
            if src.is_dir() {
                mkdir(&at, 0o755)?;
            } else {
                std::fs::write(&at, b"").map_err(|e| fail(Layer::Filesystem, at.display(), e))?;
            }
            let c = sys::cpath(src).map_err(|e| fail(Layer::Filesystem, src.display(), e))?;
            sys::mount(Some(&c), &at, None, libc::MS_BIND | libc::MS_REC, None)
                .map_err(|e| fail(Layer::Filesystem, format!("bind {}", src.display()), e))?;
            stage.staged.read_paths.push((dst.clone(), at));
        }
    }

    Ok(())
}

/// The OCI bundle for the staged run, written into its stage.
fn write_bundle(req: &Request, stage: &mut Stage) -> Result<(), SandboxError> {
    let spec = &req.spec;
    let dir = stage.dir.clone();
    let mut b =
        bundle::translate(spec, &stage.ops, &stage.staged, req.runtime).map_err(|detail| {
            SandboxError::Layer {
                layer: Layer::Bundle,
                detail,
            }
        })?;
    // Rootless without a cgroup (accepted as best effort; refused otherwise
    // before the run starts): the Sentry's RLIMIT_AS stands in for the memory
    // cgroup, per guest process.
    if req.privilege.is_rootless() && crate::native::cgroup::delegated_v2().is_none() {
        bundle::add_rlimit(&mut b.config, "RLIMIT_AS", spec.limits.memory_bytes);
    }
    let bundle_dir = dir.join("bundle");
    let rootfs = bundle_dir.join("rootfs");
    mkdir(&rootfs, 0o755)?;
    // youki opens every mount point's parent again through /proc/self/fd
    // (libpathrs) as sandbox root, which needs read permission on it, not
    // only search: under youki the root's directories are listable.
    //
    // Rootless, the helper can make them belong to nobody but the caller, who
    // is sandbox root: 0711 would let sandbox root list them (their owner),
    // so they are 0111, passable and unlistable by everyone (the helper is
    // root of its namespace and still writes into them).
    let dir_mode = if req.runtime == Runtime::Youki {
        0o755
    } else if req.privilege.is_rootless() {
        0o111
    } else {
        0o711
    };
    for entry in &b.rootfs {
        let path = match entry {
            RootfsEntry::Symlink { link, .. } => link,
            RootfsEntry::File { path, .. } => path,
        };
        let rel = crate::view::relative_inside(path)
            .ok_or_else(|| fail(Layer::Bundle, path.display(), "path must not contain `..`"))?;
        let host = rootfs.join(rel);
        if let Some(parent) = host.parent() {
            mkdir_in_root(&rootfs, parent, dir_mode)?;
        }
        match entry {
            RootfsEntry::Symlink { target, .. } => std::os::unix::fs::symlink(target, &host),
            RootfsEntry::File { content, .. } => std::fs::write(&host, content),
        }
        .map_err(|e| fail(Layer::Bundle, path.display(), e))?;
    }
    // Every mount point is made here, by host root, as under the native
    // backend: directories of the root that sandbox root may pass through but
    // not list (mode 0711; mount points themselves 0755, the runtime opens
    // them), so the runtime has nothing to create inside the container's user
    // namespace.
    make_mount_points(&rootfs, &b.config, dir_mode)?;
    let config =
        serde_json::to_vec_pretty(&b.config).map_err(|e| fail(Layer::Bundle, "config.json", e))?;
    std::fs::write(bundle_dir.join("config.json"), config)
        .map_err(|e| fail(Layer::Bundle, "config.json", e))?;
    mkdir(&dir.join("state"), 0o700)?;
    Ok(())
}

/// The workspace as the native backend lays it out, below `dir`: idmapped
/// (its owner is sandbox root inside, host uid 2000000000), and in overlay mode
/// the lower layer of an overlay whose upper layer is a tmpfs capped at 3/4
/// of the memory limit. Returns the directory the sandbox sees and, in
/// overlay mode, the upper layer the change report is read from. The microVM
/// backend shares the same directory with its guest. `rootless`: the helper
/// is root of a user namespace mapping only the caller, which owns the files
/// already (plain binds), and the overlay keeps its marks in `user.*`.
pub(crate) fn stage_workspace(
    spec: &crate::SandboxSpec,
    ws_tree: OwnedFd,
    dir: &Path,
    rootless: bool,
) -> Result<(PathBuf, Option<PathBuf>), SandboxError> {
    // The workspace: idmapped (its owner is sandbox root inside), and in
    // overlay mode the lower layer of an overlay whose upper layer is a
    // tmpfs capped at 3/4 of the memory limit (as under the native backend).
    let lower = dir.join("lower");
    mkdir(&lower, 0o755)?;
    attach_idmapped(
        ws_tree,
        &spec.workspace.root,
        &lower,
        spec.workspace.mode == WorkspaceMode::Ro,
        rootless,
    )?;
    if spec.workspace.mode == WorkspaceMode::Overlay {
        let layer = dir.join("layer");
        mkdir(&layer, 0o755)?;
        let bytes = (spec.limits.memory_bytes / 4 * 3).max(1 << 20);
        // Inodes as under the native backend: one per page of the memory limit.
        let data = CString::new(format!(
            "size={bytes},nr_inodes={},mode=0755",
            view::inode_cap(spec.limits.memory_bytes)
        ))
        .map_err(|e| fail(Layer::Workspace, "upper layer options", e))?;
        sys::mount(
            Some(c"tmpfs"),
            &layer,
            Some(c"tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some(&data),
        )
        .map_err(|e| fail(Layer::Workspace, "tmpfs for the workspace's upper layer", e))?;
        let (upper, work, merged) = (layer.join("upper"), layer.join("work"), dir.join("merged"));
        for d in [&upper, &work, &merged] {
            mkdir(d, 0o755)?;
        }
        if !rootless {
            std::os::unix::fs::chown(
                &upper,
                Some(namespaces::SANDBOX_HOST_UID),
                Some(namespaces::SANDBOX_HOST_GID),
            )
            .map_err(|e| fail(Layer::Workspace, "chown upper dir", e))?;
        }
        // Rootless: an unprivileged overlay keeps its marks in user.* xattrs
        // (`userxattr`), which refuses to follow redirects ("off" still does).
        let opts = CString::new(format!(
            "lowerdir={},upperdir={},workdir={},redirect_dir={},metacopy=off,index=off{}",
            lower.display(),
            upper.display(),
            work.display(),
            if rootless { "nofollow" } else { "off" },
            if rootless { ",userxattr" } else { "" },
        ))
        .map_err(|e| fail(Layer::Workspace, "overlay options", e))?;
        sys::mount(
            Some(c"overlay"),
            &merged,
            Some(c"overlay"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some(&opts),
        )
        .map_err(|e| fail(Layer::Workspace, "overlay mount", e))?;
        return Ok((merged, Some(upper)));
    }
    Ok((lower, None))
}

/// Whether every directory above `path` lets others through (so that the
/// runtime reaches it from inside the container's user namespace).
pub(crate) fn reachable(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    path.ancestors()
        .skip(1)
        .all(|a| std::fs::metadata(a).is_ok_and(|m| m.mode() & 0o001 != 0))
}

/// Makes `dir` and its missing parents below `rootfs` with `mode`.
fn mkdir_in_root(rootfs: &Path, dir: &Path, mode: u32) -> Result<(), SandboxError> {
    if dir == rootfs || dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        mkdir_in_root(rootfs, parent, mode)?;
    }
    mkdir(dir, mode)
}

fn make_mount_points(
    rootfs: &Path,
    config: &serde_json::Value,
    dir_mode: u32,
) -> Result<(), SandboxError> {
    let mounts = config["mounts"].as_array().cloned().unwrap_or_default();
    for m in mounts {
        let (Some(dst), Some(kind)) = (m["destination"].as_str(), m["type"].as_str()) else {
            continue;
        };
        let Some(rel) = crate::view::relative_inside(Path::new(dst)) else {
            return Err(fail(Layer::Bundle, dst, "path must not contain `..`"));
        };
        let at = rootfs.join(rel);
        let is_dir = kind != "bind" || m["source"].as_str().is_some_and(|s| Path::new(s).is_dir());
        if is_dir {
            // The mount point itself is opened by the runtime: readable.
            mkdir_in_root(rootfs, &at, dir_mode)?;
            mkdir(&at, 0o755)?;
        } else {
            if let Some(parent) = at.parent() {
                mkdir_in_root(rootfs, parent, dir_mode)?;
            }
            if std::fs::symlink_metadata(&at).is_err() {
                std::fs::write(&at, b"").map_err(|e| fail(Layer::Bundle, at.display(), e))?;
            }
        }
    }
    Ok(())
}

/// crun 1.8 refuses a hybrid cgroup layout whose v2 hierarchy still holds a
/// controller (hugetlb on this kind of host). Mounting the controller as a v1
/// hierarchy (here, in the helper's private mount namespace, below the run's
/// own directory) empties the v2 hierarchy while the mount lives; the kernel
/// hands the controller back when the last such mount goes.
///
/// Which controllers: every one the host leaves unbound to a v1 hierarchy, not
/// only what the v2 hierarchy lists right now. While another run holds its v1
/// mount, or the kernel is still handing a controller back after one ended, the
/// v2 list can read empty and then fill again before crun looks; mounting our
/// own v1 instance takes a reference of this run's own (the kernel waits out a
/// hierarchy being torn down and rebinds it).
fn hybrid_workaround(stage: &Stage) -> Result<Option<String>, SandboxError> {
    let unified = Path::new("/sys/fs/cgroup/unified/cgroup.controllers");
    let Ok(listed) = std::fs::read_to_string(unified) else {
        return Ok(None); // not a hybrid host
    };
    let controllers = floating_controllers(
        &listed,
        &std::fs::read_to_string("/proc/cgroups").unwrap_or_default(),
        &std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default(),
    );
    if controllers.is_empty() {
        return Ok(None);
    }
    for c in &controllers {
        let at = stage.dir.join(format!("cgroup-{c}"));
        mkdir(&at, 0o700)?;
        let data =
            CString::new(c.as_str()).map_err(|e| fail(Layer::Cgroup, "controller name", e))?;
        sys::mount(Some(c"cgroup"), &at, Some(c"cgroup"), 0, Some(&data)).map_err(|e| {
            fail(
                Layer::Cgroup,
                format!(
                    "crun refuses a hybrid cgroup layout whose v2 hierarchy holds `{c}`, \
                     and mounting `{c}` as a v1 hierarchy failed"
                ),
                e,
            )
        })?;
    }
    Ok(Some(format!(
        "hybrid cgroups: {} mounted as v1 for this run so that crun accepts the layout",
        controllers.join(", ")
    )))
}

/// The controllers with a v2 interface that no v1 hierarchy of the host holds:
/// those the v2 hierarchy lists (`listed`, its `cgroup.controllers`) and those
/// enabled in `/proc/cgroups` but named by no v1 `cgroup` mount in `mountinfo`
/// (this helper's namespace: the host's mounts, not other runs' private ones).
fn floating_controllers(listed: &str, proc_cgroups: &str, mountinfo: &str) -> Vec<String> {
    // v1 names of the controllers cgroup v2 has (io is blkio in v1).
    const WITH_V2: &[&str] = &[
        "cpuset", "cpu", "blkio", "memory", "hugetlb", "pids", "rdma", "misc",
    ];
    let held: std::collections::HashSet<&str> = mountinfo
        .lines()
        .filter_map(|l| l.split_once(" - "))
        .filter(|(_, rest)| rest.starts_with("cgroup "))
        .flat_map(|(_, rest)| rest.rsplit(' ').next().unwrap_or("").split(','))
        .collect();
    let enabled = proc_cgroups.lines().filter_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() == 4 && f[3] == "1").then(|| f[0])
    });
    let mut out: Vec<String> = Vec::new();
    let listed = listed
        .split_whitespace()
        .map(|c| if c == "io" { "blkio" } else { c });
    for c in listed.chain(enabled.filter(|c| WITH_V2.contains(c))) {
        if !held.contains(c) && !out.iter().any(|o| o == c) {
            out.push(c.to_string());
        }
    }
    out
}

/// `runtime GLOBAL... ARGS...`, waited for, bounded.
fn runtime_cmd(req: &Request, stage: &Stage, args: &[&str]) -> Result<(), String> {
    let mut cmd = std::process::Command::new(&req.runtime_exe);
    cmd.args(req.runtime.global_args(
        &stage.dir.join("state"),
        run_network(req),
        req.privilege.is_rootless(),
    ))
    .args(args)
    .env_clear()
    .env(
        "PATH",
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    )
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(s)) if s.success() => return Ok(()),
            Ok(Some(s)) => {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                return Err(format!("{s}: {}", err.trim()));
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("did not finish within 10 s; killed".into());
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

fn run_network(req: &Request) -> RunNetwork {
    match req.spec.network {
        NetworkSpec::None => RunNetwork::Isolated,
        NetworkSpec::Proxy { .. } => RunNetwork::Relay,
        NetworkSpec::Open => RunNetwork::Host,
    }
}

fn container_id(req: &Request) -> String {
    format!("airlock-{}", req.spec.request_id)
}

/// The command's stdin: a pipe from the caller (the spec's bytes, the
/// caller's own stdin, or nothing), never a host file.
fn stdin_fd() -> OwnedFd {
    // SAFETY: the caller passed fd FD_STDIN to us and nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(FD_STDIN) }
}

fn run_container(
    req: &Request,
    stage: &Stage,
    egress: Option<EgressRun>,
) -> Result<HelperReport, SandboxError> {
    let spec = &req.spec;
    let mut report = HelperReport::default();
    if req.runtime == Runtime::Crun {
        if let Some(note) = hybrid_workaround(stage)? {
            report.notes.push(note);
        }
    }
    let stdin = stdin_fd();
    let id = container_id(req);
    let bundle_dir = stage.dir.join("bundle");
    let mut args: Vec<String> = vec![req.runtime_exe.display().to_string()];
    args.extend(req.runtime.global_args(
        &stage.dir.join("state"),
        run_network(req),
        req.privilege.is_rootless(),
    ));
    args.extend([
        "run".to_string(),
        "--bundle".into(),
        bundle_dir.display().to_string(),
        id.clone(),
    ]);
    let argv: Vec<CString> = args
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|e| fail(Layer::Runtime, "argv", e))?;
    let envp: Vec<CString> =
        vec![c"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_owned()];
    let mut argv_p: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_p.push(std::ptr::null());
    let mut envp_p: Vec<*const libc::c_char> = envp.iter().map(|a| a.as_ptr()).collect();
    envp_p.push(std::ptr::null());

    // Sharing the host's network namespace, the container would reach the
    // host's abstract unix sockets, which live there and which no seccomp
    // filter can tell apart (it sees no address). The runtime is started in
    // a landlock domain that scopes them, and the container inherits it.
    let scope = match (run_network(req), req.runtime.is_gvisor()) {
        (RunNetwork::Host, false) => {
            let scope = crate::native::landlock::abstract_scope_ruleset()?;
            if scope.is_none() {
                report
                    .notes
                    .push(crate::native::landlock::NO_ABSTRACT_SCOPE_NOTE.into());
            }
            scope
        }
        _ => None,
    };
    let mut cg_limits = spec.limits.clone();
    if req.runtime.is_gvisor() {
        // The Sentry and the gofer are host threads in the run's cgroup (with
        // the ptrace platform, one per guest thread, plus the Go runtime's);
        // the guest's own processes are held by RLIMIT_NPROC in the Sentry.
        cg_limits.pids = cg_limits.pids.saturating_add(GVISOR_HOST_THREADS);
    }
    let cgroup = match req.privilege {
        Privilege::Root => RunCgroup::create(&spec.request_id, &cg_limits, &mut report.notes)?,
        Privilege::Rootless { .. } => crate::native::helper::rootless_cgroup(
            spec,
            &cg_limits,
            "limits.memory, limits.cpus and limits.tmp (its file count)",
            "RLIMIT_AS per guest process, applied by gVisor's Sentry, which does not bound \
             the Sentry's own memory; no CPU bandwidth control",
            &mut report.notes,
        )?,
    };
    let (go_r, go_w) = sys::pipe().map_err(|e| fail(Layer::Oci, "pipe", e))?;
    let pid = match sys::fork() {
        Ok(0) => {
            // The runtime's process: wait until it is in the run's cgroup.
            drop(go_w);
            let mut b = [0u8; 1];
            if !matches!(sys::read(go_r.as_raw_fd(), &mut b), Ok(1)) {
                sys::exit_now(1);
            }
            let _ = sys::set_pdeathsig(libc::SIGKILL);
            if sys::dup_to(stdin.as_raw_fd(), 0).is_err() {
                sys::exit_now(126);
            }
            if let Some(scope) = &scope {
                if crate::native::landlock::restrict_self_raw(scope.as_raw_fd()) != 0 {
                    let _ = sys::write_all(
                        2,
                        b"airlock: could not scope abstract unix sockets (landlock_restrict_self)\n",
                    );
                    sys::exit_now(126);
                }
            }
            sys::close_from(3);
            // SAFETY: argv_p and envp_p are NULL-terminated arrays of live C strings.
            unsafe { libc::execve(argv_p[0], argv_p.as_ptr(), envp_p.as_ptr()) };
            let _ = sys::write_all(2, b"airlock: could not start the OCI runtime\n");
            sys::exit_now(127)
        }
        Ok(pid) => pid,
        Err(e) => {
            let _ = cgroup.destroy();
            return Err(fail(Layer::Runtime, "fork", e));
        }
    };
    drop(go_r);
    drop(stdin);
    if let Err(e) = cgroup.add(pid) {
        sys::kill(pid, libc::SIGKILL);
        let _ = sys::waitpid(pid, 0);
        let _ = cgroup.destroy();
        return Err(e);
    }
    // The relay's threads start after the last fork; the runtime waits for
    // the go byte, so its container's first connect finds them running.
    let agent = match egress.map(EgressRun::start).transpose() {
        Ok(w) => w.flatten(),
        Err(e) => {
            sys::kill(pid, libc::SIGKILL);
            let _ = sys::waitpid(pid, 0);
            let _ = cgroup.destroy();
            return Err(e);
        }
    };
    let started = Instant::now();
    let _ = sys::write_all(go_w.as_raw_fd(), b"g");
    drop(go_w);

    // SAFETY: the caller passed fd 4 to us and nothing else owns it.
    let control = unsafe { OwnedFd::from_raw_fd(FD_CONTROL) };
    let status = watch(req, stage, pid, &control, &cgroup, started, &mut report);
    let duration = started.elapsed();
    if let Err(e) = runtime_cmd(req, stage, &["delete", "--force", &id]) {
        // Already gone is the usual case after `run` returned.
        if !e.contains("does not exist") && !e.contains("not exist") && !e.contains("not found") {
            report
                .notes
                .push(format!("{} delete: {e}", req.runtime.exe_name()));
        }
    }
    cgroup.kill_all();
    if req.privilege.is_rootless() {
        if let Some(left) = reap_descendants(Duration::from_secs(5)) {
            report.notes.push(left);
        }
    }
    if let Some(agent) = agent {
        // The runtime handed the listener over before the command started,
        // so it has arrived if the container ran at all.
        match agent.recv_timeout(Duration::from_millis(500)) {
            Ok(supervisor) => report.violations.extend(supervisor.stop()),
            Err(_) => report.notes.push(format!(
                "{} handed over no seccomp listener: any direct network attempt of the \
                 command was left unanswered (until the run ended) and not recorded",
                req.runtime.exe_name()
            )),
        }
    }
    let stats = cgroup.stats();
    if let Err(e) = cgroup.destroy() {
        report.notes.push(format!("cgroup teardown: {e}"));
    }
    report.duration_ms = duration.as_millis() as u64;
    if !cgroup.is_none() {
        report.cpu_ms = stats.cpu_ms;
    }
    report.peak_memory_bytes = stats.peak_memory_bytes;
    match status {
        Some(s) if libc::WIFEXITED(s) => {
            let code = libc::WEXITSTATUS(s);
            // The runtimes report a command killed by signal N as 128 + N.
            if (129..=159).contains(&code) {
                report.signal = Some(code - 128);
            } else {
                report.exit_code = Some(code);
            }
        }
        Some(s) if libc::WIFSIGNALED(s) => report.signal = Some(libc::WTERMSIG(s)),
        _ => report.signal = Some(libc::SIGKILL),
    }
    if report.killed_by.is_none() {
        if stats.oom_killed && report.exit_code != Some(0) {
            report.killed_by = Some(KillReason::Memory);
        } else if stats.pids_limit_hit {
            report.killed_by = Some(KillReason::Pids);
        } else if report.signal == Some(libc::SIGXCPU)
            || (report.signal == Some(libc::SIGKILL) && stats.cpu_ms >= spec.limits.cpu_time_ms)
        {
            report.killed_by = Some(KillReason::CpuTime);
        }
    }
    Ok(report)
}

/// Rootless mode's stand-in for killing the run's cgroup: the helper is a
/// child subreaper, so every process runsc left (its sandbox and gofer, once
/// `runsc run` has ended) is a child of the helper by now. Kills them all
/// and reaps them, until none is left or `bound` has passed; says what was
/// left, if anything.
fn reap_descendants(bound: Duration) -> Option<String> {
    let me = std::process::id() as libc::pid_t;
    let deadline = Instant::now() + bound;
    loop {
        // Reap what has ended.
        while let Ok((p, _)) = sys::waitpid(-1, libc::WNOHANG) {
            if p <= 0 {
                break;
            }
        }
        let children = children_of(me);
        if children.is_empty() {
            return None;
        }
        if Instant::now() >= deadline {
            return Some(format!(
                "rootless teardown: {} process(es) of runsc still running after {} s: {:?}",
                children.len(),
                bound.as_secs(),
                children
            ));
        }
        for c in &children {
            sys::kill(*c, libc::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// CPU time, in ms, of `root` and every process below it (user and system,
/// with what each has reaped of its own children), from /proc. Processes
/// that ended and were reaped by a process outside the tree are missed: the
/// tree here is runsc's, whose processes end with the run.
fn tree_cpu_ms(root: libc::pid_t) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    // (pid, ppid, ticks) of every process, then the tree from `root`.
    let procs: Vec<(libc::pid_t, libc::pid_t, u64)> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter_map(|pid| {
            let st = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let f: Vec<&str> = st[st.rfind(')')? + 1..].split_whitespace().collect();
            // After the name: state, ppid, ..., utime (11), stime (12),
            // cutime (13), cstime (14), counted from state = 0.
            let ppid = f.get(1)?.parse().ok()?;
            let ticks = f
                .get(11..15)?
                .iter()
                .filter_map(|t| t.parse::<u64>().ok())
                .sum();
            Some((pid, ppid, ticks))
        })
        .collect();
    let mut inside = vec![root];
    let mut total = 0u64;
    let mut i = 0;
    while i < inside.len() {
        let p = inside[i];
        for (pid, ppid, ticks) in &procs {
            if *pid == p {
                total += ticks;
            }
            if *ppid == p && !inside.contains(pid) {
                inside.push(*pid);
            }
        }
        i += 1;
    }
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    total * 1000 / hz
}

/// The pids whose parent is `parent` (from /proc; the helper shares the
/// host's PID namespace).
fn children_of(parent: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|st| {
                    // The command name may hold spaces and parentheses: the
                    // fields after it start past the last `)`.
                    let rest = &st[st.rfind(')')? + 1..];
                    rest.split_whitespace().nth(1)?.parse::<libc::pid_t>().ok()
                })
                == Some(parent)
        })
        .collect()
}

/// Waits for the runtime, killing the container at the timeout, at the
/// output cap, at the pids limit or CPU time, or when the caller goes.
/// Returns the runtime's wait status.
fn watch(
    req: &Request,
    stage: &Stage,
    pid: libc::pid_t,
    control: &OwnedFd,
    cgroup: &RunCgroup,
    started: Instant,
    report: &mut HelperReport,
) -> Option<libc::c_int> {
    let spec = &req.spec;
    let deadline = started + Duration::from_millis(spec.limits.timeout_ms);
    let backstop = deadline + SETUP_GRACE;
    let mut control_open = true;
    let mut killed = false;
    let mut next_sample = started;
    let id = container_id(req);
    let kill = |report: &mut HelperReport, reason: Option<KillReason>, killed: &mut bool| {
        if report.killed_by.is_none() {
            report.killed_by = reason;
        }
        if !*killed {
            *killed = true;
            let _ = runtime_cmd(req, stage, &["kill", &id, "9"]);
        }
        cgroup.kill_all();
    };
    loop {
        match sys::waitpid(pid, libc::WNOHANG) {
            Ok((p, status)) if p == pid => return Some(status),
            Ok(_) => {}
            Err(_) => return None,
        }
        let now = Instant::now();
        if now >= deadline && !killed {
            kill(report, Some(KillReason::Timeout), &mut killed);
        }
        if now >= backstop {
            sys::kill(pid, libc::SIGKILL);
        }
        if control_open {
            let r = sys::poll(&[control.as_raw_fd()], TICK.as_millis() as i32)
                .unwrap_or_else(|_| vec![0]);
            if r[0] != 0 {
                let mut b = [0u8; 16];
                match sys::read(control.as_raw_fd(), &mut b) {
                    Ok(0) | Err(_) => {
                        control_open = false;
                        kill(report, None, &mut killed);
                    }
                    Ok(n) => {
                        if b[..n].contains(&protocol::CONTROL_KILL_OUTPUT) {
                            kill(report, Some(KillReason::Output), &mut killed);
                        }
                        if b[..n].contains(&protocol::CONTROL_KILL_CANCELLED) {
                            kill(report, Some(KillReason::Cancelled), &mut killed);
                        }
                    }
                }
            }
        } else {
            std::thread::sleep(TICK);
        }
        if !killed {
            let s = cgroup.stats();
            if s.pids_limit_hit {
                kill(report, Some(KillReason::Pids), &mut killed);
            } else if s.cpu_ms > spec.limits.cpu_time_ms {
                kill(report, Some(KillReason::CpuTime), &mut killed);
            }
        }
        // Without a cgroup (rootless, best effort): the CPU time of runsc's
        // whole process tree, sampled (this runsc does not apply RLIMIT_CPU
        // to the guest). It counts the Sentry's own work too, so it is a
        // ceiling on the run, not only on the command.
        if !killed && cgroup.is_none() && Instant::now() >= next_sample {
            next_sample = Instant::now() + CPU_SAMPLE;
            let ms = tree_cpu_ms(pid);
            report.cpu_ms = report.cpu_ms.max(ms);
            if ms > spec.limits.cpu_time_ms {
                kill(report, Some(KillReason::CpuTime), &mut killed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::floating_controllers;

    #[test]
    fn floating_controllers_are_those_no_host_v1_mount_holds() {
        let proc_cgroups = "#subsys_name\thierarchy\tnum_cgroups\tenabled\n\
            cpu\t1\t3\t1\nmemory\t4\t179\t1\nnet_cls\t0\t2\t1\nhugetlb\t0\t2\t1\npids\t8\t3\t1\n";
        let mountinfo = "30 25 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
            31 25 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n\
            32 25 0:28 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n\
            33 25 0:29 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        // Another run holds hugetlb as v1 right now: the v2 list reads empty,
        // and hugetlb is still ours to mount.
        assert_eq!(
            floating_controllers("", proc_cgroups, mountinfo),
            ["hugetlb"]
        );
        assert_eq!(
            floating_controllers("hugetlb\n", proc_cgroups, mountinfo),
            ["hugetlb"]
        );
        // net_cls has no v2 interface: never mounted for crun's sake.
        let all_v1 = format!("{mountinfo}34 25 0:30 / /x rw - cgroup cgroup rw,hugetlb\n");
        assert!(floating_controllers("", proc_cgroups, &all_v1).is_empty());
    }
}
