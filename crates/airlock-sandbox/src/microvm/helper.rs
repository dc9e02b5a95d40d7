//! The microVM helper: the airlock binary re-executed with [`HELPER_ARG`].
//! It reads the request (one JSON line on stdin; stdin then stays open as the
//! caller's lifeline), makes a private mount namespace, stages the workspace
//! and the control share, boots QEMU, watches it, kills it by PID on every
//! path, reads the guest's result and the change report (applying it when
//! asked), removes everything it staged, and writes its report on stdout.

use super::control::{self, GuestResult};
use super::guest::{self, Accel, Machine};
use super::{HelperReport, Request};
use crate::oci::helper::{mkdir, reachable, stage_workspace, tmpfs_with};
use crate::view::{self, ViewOp};
use crate::Layer;
use crate::{sys, workspace};
use crate::{KillReason, SandboxError, WorkspaceMode};
use std::io::BufRead;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// First argument that makes the airlock binary the microVM helper.
pub const HELPER_ARG: &str = "__airlock-microvm-helper";
/// Where runs stage their shares: outside every workspace and state directory.
pub const STAGE_BASE: &str = "/run/airlock-microvm";
/// The guest's init marks its start on the console with this line.
const INIT_MARK: &[u8] = b"@@AIRLOCK-INIT";
/// How often the helper looks at QEMU, the console and the caller.
const TICK: Duration = Duration::from_millis(20);
/// After the guest's own timer should have fired: the guest's teardown (kill
/// the leaf, write the result, power off).
const GUEST_GRACE: Duration = Duration::from_secs(20);
/// Boots that never reach init (a hang calibrating the clock) are retried.
const BOOTS: u32 = 2;

fn fail(layer: Layer, what: impl std::fmt::Display, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Layer {
        layer,
        detail: format!("{what}: {e}"),
    }
}

pub fn helper_main() -> ! {
    crate::oci::helper::ignore_terminal_signals();
    let mut line = String::new();
    let report = match std::io::stdin().lock().read_line(&mut line) {
        Ok(_) => match serde_json::from_str::<Request>(&line) {
            Ok(req) => run(&req),
            Err(e) => HelperReport::failed(Layer::Spec, format!("unreadable request: {e}")),
        },
        Err(e) => HelperReport::failed(Layer::Spec, format!("reading the request: {e}")),
    };
    let bytes = serde_json::to_vec(&report).unwrap_or_default();
    let _ = sys::write_all(1, &bytes);
    sys::exit_now(0)
}

/// Everything staged on the host for one run; torn down by [`Stage::remove`].
struct Stage {
    dir: PathBuf,
    /// What the guest sees as the workspace (the overlay, or the idmapped bind).
    workspace: PathBuf,
    /// The overlay's upper directory (overlay mode).
    upper: Option<PathBuf>,
    control: PathBuf,
    console: PathBuf,
    /// The host directories the view shows read-only.
    shares: Vec<guest::Share>,
}

impl Stage {
    /// Detaching the run's tmpfs detaches every mount below it (the
    /// workspace's layers) at once; only then is the empty directory removed,
    /// so nothing here can ever delete through a workspace mount.
    fn remove(&self) {
        let _ = sys::umount_detach(&self.dir);
        let _ = std::fs::remove_dir(&self.dir);
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
    // Step 1: a mount namespace of our own: nothing staged here is seen outside.
    if let Err(e) = sys::unshare(libc::CLONE_NEWNS) {
        return HelperReport::failed(Layer::Namespaces, format!("unshare(CLONE_NEWNS): {e}"));
    }
    if let Err(e) = sys::make_mounts_private() {
        return HelperReport::failed(Layer::Mounts, format!("make mounts private: {e}"));
    }
    // Step 2: the workspace and the control share.
    let stage = match stage(req) {
        Ok(s) => s,
        Err(e) => return HelperReport::from_error(e),
    };
    // Step 3: the VM.
    let mut report = match boot_and_wait(req, &stage) {
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
    // Step 5: teardown.
    stage.remove();
    report
}

fn stage(req: &Request) -> Result<Stage, SandboxError> {
    let spec = &req.spec;
    if spec.workspace.mode == WorkspaceMode::Rw && !spec.workspace.protect.is_empty() {
        return Err(fail(
            Layer::Workspace,
            "rw mode with protected paths",
            "the microvm backend cannot keep parts of a rw workspace read-only; \
             Hint: use overlay mode (protected paths are never applied back)",
        ));
    }
    // The workspace tree is copied before anything is mounted.
    let ws_tree = sys::clone_tree(&spec.workspace.root, true)
        .map_err(|e| fail(Layer::Workspace, spec.workspace.root.display(), e))?;
    let base = Path::new(STAGE_BASE);
    mkdir(base, 0o711)?;
    let dir = base.join(&spec.request_id);
    std::fs::create_dir(&dir)
        .map_err(|e| fail(Layer::Mounts, format!("mkdir {}", dir.display()), e))?;
    // The run's own tmpfs: the workspace's mount points, the control share
    // and the console log. The guest caps its output files; the tmpfs bounds
    // what a misbehaving guest can write here anyway.
    let bytes = (spec.limits.output_bytes.saturating_mul(2)).saturating_add(16 << 20);
    if let Err(e) = tmpfs_with(
        &dir,
        bytes,
        "0711",
        "tmpfs for the run",
        libc::MS_NOSUID | libc::MS_NODEV,
    ) {
        let _ = std::fs::remove_dir(&dir);
        return Err(e);
    }
    let mut stage = Stage {
        dir: dir.clone(),
        workspace: PathBuf::new(),
        upper: None,
        control: dir.join("vm").join("ctl"),
        console: dir.join("vm").join("console.log"),
        shares: Vec::new(),
    };
    match fill(req, ws_tree, &mut stage) {
        Ok(()) => Ok(stage),
        Err(e) => {
            stage.remove();
            Err(e)
        }
    }
}

fn fill(
    req: &Request,
    ws_tree: std::os::fd::OwnedFd,
    stage: &mut Stage,
) -> Result<(), SandboxError> {
    let spec = &req.spec;
    let dir = stage.dir.clone();
    let (seen, upper) = stage_workspace(spec, ws_tree, &dir, false)?;
    stage.workspace = seen;
    stage.upper = upper;
    // QEMU's own directory, owned by the sandbox uid QEMU runs as.
    let vm = dir.join("vm");
    mkdir(&vm, 0o700)?;
    mkdir(&stage.control, 0o700)?;
    let (links, shares) = view_mounts(req, &dir, &stage.workspace)?;
    stage.shares = shares;
    let text = |r: Result<String, String>| r.map_err(|d| fail(Layer::Spec, "the guest's spec", d));
    let files: [(&str, Vec<u8>); 3] = [
        (
            "spec.sh",
            text(control::spec_sh(spec, &links, &stage.shares))?.into_bytes(),
        ),
        ("cmd.sh", text(control::cmd_sh(spec))?.into_bytes()),
        ("stdin", spec.stdin.clone().unwrap_or_default()),
    ];
    for (name, content) in files {
        let p = stage.control.join(name);
        std::fs::write(&p, content).map_err(|e| fail(Layer::Microvm, p.display(), e))?;
    }
    for p in [vm.clone(), stage.control.clone()] {
        std::os::unix::fs::chown(&p, Some(control::RUN_UID), Some(control::RUN_UID))
            .map_err(|e| fail(Layer::Microvm, format!("chown {}", p.display()), e))?;
    }
    Ok(())
}

/// The view's symlinks and read-only host directories (the system
/// directories and the policy's read paths), as the native backend would show
/// them, and its hidden paths masked where QEMU shares them. Files bound
/// alone, devices, the `/proc` masks and tmpfses are the guest's own
/// business: it has its own /dev, /proc, /tmp and home.
#[allow(clippy::type_complexity)]
fn view_mounts(
    req: &Request,
    dir: &Path,
    staged_workspace: &Path,
) -> Result<(Vec<(PathBuf, PathBuf)>, Vec<guest::Share>), SandboxError> {
    let spec = &req.spec;
    let ops = view::plan(
        &view::ViewInput {
            spec,
            run_dir: &req.runs_dir.join(&spec.request_id),
            passwd: view::PASSWD,
            group: view::GROUP,
        },
        &view::RealHost,
    );
    let mut links = Vec::new();
    let mut shares = Vec::new();
    for op in ops {
        match op {
            ViewOp::Symlink { link, target } => links.push((link, target)),
            ViewOp::BindRo { src, dst } if src.is_dir() => {
                if shares.len() == guest::MAX_SHARES {
                    return Err(fail(
                        Layer::Filesystem,
                        format!("read-only directory {}", src.display()),
                        format!(
                            "the microvm backend shares at most {} host directories; \
                             Hint: list fewer `[filesystem] read` paths",
                            guest::MAX_SHARES
                        ),
                    ));
                }
                let tag = format!("r{}", shares.len());
                // QEMU runs as the sandbox uid: a directory behind one closed
                // to others (under /root) is bound into the run's directory,
                // which it can reach.
                let src = if reachable(&src) {
                    src
                } else {
                    let at = dir.join(&tag);
                    mkdir(&at, 0o755)?;
                    let c =
                        sys::cpath(&src).map_err(|e| fail(Layer::Filesystem, src.display(), e))?;
                    sys::mount(Some(&c), &at, None, libc::MS_BIND | libc::MS_REC, None).map_err(
                        |e| fail(Layer::Filesystem, format!("bind {}", src.display()), e),
                    )?;
                    at
                };
                shares.push(guest::Share { tag, src, dst });
            }
            // airlock's state directory inside the workspace, and the policy's
            // hidden paths: QEMU's 9p server crosses mount points, so a mask
            // mounted here, in the helper's private mount namespace, is what
            // the guest sees in the share.
            ViewOp::Hide { path } => {
                let target = match path.strip_prefix(&spec.workspace.root) {
                    Ok(rel) => staged_workspace.join(rel),
                    Err(_) => path.clone(),
                };
                hide(&target)?;
            }
            _ => {}
        }
    }
    Ok((links, shares))
}

/// Masks `target` on the host, in the helper's private mount namespace (so
/// only QEMU's shares see it): a directory with an empty read-only tmpfs, a
/// file with `/dev/null`. A path that is not there is left alone.
fn hide(target: &Path) -> Result<(), SandboxError> {
    let Ok(m) = std::fs::symlink_metadata(target) else {
        return Ok(());
    };
    let what = format!("hide {}", target.display());
    // A symlink is masked where it points, as a mount over it lands there.
    if m.is_dir() || (m.file_type().is_symlink() && target.is_dir()) {
        tmpfs_with(
            target,
            4096,
            "0555",
            &what,
            libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        )
    } else {
        sys::mount(Some(c"/dev/null"), target, None, libc::MS_BIND, None)
            .map_err(|e| fail(Layer::Filesystem, what, e))
    }
}

/// How one boot ended.
enum Ended {
    /// QEMU exited (the guest powered off, or QEMU failed).
    Exited(std::process::ExitStatus),
    /// The guest never reached init within the boot allowance; killed.
    BootHang,
    /// Past the run's deadline; killed.
    Timeout,
    /// The caller went away; killed.
    CallerGone,
}

/// Boots the guest (again, when a boot hangs before init), waits for it,
/// and turns what it left in the control share into a report.
fn boot_and_wait(req: &Request, stage: &Stage) -> Result<HelperReport, SandboxError> {
    let spec = &req.spec;
    let image = &req.image;
    let mut report = HelperReport::default();
    report.notes.push(format!(
        "microvm: accelerator {} ({})",
        image.accel.as_str(),
        image.accel_why
    ));
    let memory_mib = spec.limits.memory_bytes.div_ceil(1 << 20) + guest::OVERHEAD_MIB;
    let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let cpus = (spec.limits.cpus.ceil() as u32).clamp(1, host_cpus);
    let egress_socket = match &spec.network {
        crate::NetworkSpec::Proxy { socket } => Some(start_egress_relay(stage, socket)?),
        _ => None,
    };
    let machine = Machine {
        image,
        memory_mib,
        cpus,
        console_log: &stage.console,
        control_dir: &stage.control,
        workspace_dir: &stage.workspace,
        workspace_read_only: spec.workspace.mode == WorkspaceMode::Ro,
        shares: &stage.shares,
        egress_socket: egress_socket.as_deref(),
    };
    let args = machine.args();
    let mut ended = Ended::BootHang;
    let mut vm_ms = 0;
    let mut boot_ms = None;
    for attempt in 1..=BOOTS {
        let _ = std::fs::remove_file(&stage.console);
        let started = Instant::now();
        let mut child = spawn_qemu(image, &args, stage)?;
        let (e, booted) = watch(
            &mut child,
            stage,
            image.accel,
            spec.limits.timeout_ms,
            started,
        );
        vm_ms = started.elapsed().as_millis() as u64;
        boot_ms = booted.map(|d| d.as_millis() as u64);
        ended = e;
        if matches!(ended, Ended::BootHang) && attempt < BOOTS {
            report.notes.push(format!(
                "microvm: boot {attempt} did not reach init within {} s; retried ({})",
                image.accel.boot_allowance_ms() / 1000,
                console_tail(&stage.console)
            ));
            continue;
        }
        break;
    }
    report.vm_ms = vm_ms;
    report.boot_ms = boot_ms;
    let result = std::fs::read(stage.control.join("result"))
        .map(|b| control::parse_result(&String::from_utf8_lossy(&b)))
        .ok();
    match (&ended, result) {
        (Ended::BootHang, _) => Err(fail(
            Layer::Guest,
            format!("the guest did not reach its init in {BOOTS} boots"),
            format!(
                "{}; Hint: check the guest with scripts/setup-microvm, or raise the host's \
                 free CPU (software emulation boots take seconds)",
                console_tail(&stage.console)
            ),
        )),
        (Ended::CallerGone, _) => {
            report.killed_by = Some(KillReason::Cancelled);
            report.signal = Some(libc::SIGKILL);
            report
                .notes
                .push("microvm: the caller went away; the VM was killed".into());
            Ok(report)
        }
        (Ended::Timeout, r) => {
            report.killed_by = Some(KillReason::Timeout);
            report.signal = Some(libc::SIGKILL);
            report.duration_ms = spec.limits.timeout_ms;
            if let Some(r) = r {
                report.cpu_ms = r.cpu_ms;
            }
            read_output(spec, stage, &mut report);
            Ok(report)
        }
        (Ended::Exited(status), None) => {
            let qemu = std::fs::read(stage.dir.join("vm").join("qemu.err")).unwrap_or_default();
            let qemu = String::from_utf8_lossy(&qemu);
            let qemu = qemu.trim();
            Err(fail(
                Layer::Guest,
                format!("QEMU exited ({status}) without a result from the guest"),
                if qemu.is_empty() {
                    console_tail(&stage.console)
                } else {
                    format!("QEMU said: {}", qemu.chars().take(600).collect::<String>())
                },
            ))
        }
        (Ended::Exited(_), Some(r)) => {
            if let Some(e) = &r.error {
                return Err(fail(
                    Layer::Guest,
                    "the guest's init could not set up the run",
                    e,
                ));
            }
            apply_result(spec, &r, &mut report);
            read_output(spec, stage, &mut report);
            Ok(report)
        }
    }
}

/// Allowlist mode: listens on a unix socket in QEMU's directory for QEMU's
/// chardev (the guest's virtio-serial port) and serves each boot's
/// connection on a thread of its own, connecting every stream the guest opens
/// to the egress proxy's socket and nowhere else. The threads end with the
/// helper. Returns the socket's path for QEMU's command line.
fn start_egress_relay(stage: &Stage, proxy: &Path) -> Result<PathBuf, SandboxError> {
    let path = stage.dir.join("vm").join("egress.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path)
        .map_err(|e| fail(Layer::Network, format!("listen on {}", path.display()), e))?;
    // QEMU runs as the sandbox uid; the directory (0700, that uid's) keeps
    // everyone else out.
    std::os::unix::fs::chown(&path, Some(control::RUN_UID), Some(control::RUN_UID))
        .map_err(|e| fail(Layer::Network, format!("chown {}", path.display()), e))?;
    let proxy = proxy.to_path_buf();
    std::thread::Builder::new()
        .name("airlock-microvm-egress".into())
        .spawn(move || {
            // One connection per boot (a hung boot is retried with a new QEMU).
            for port in listener.incoming() {
                let Ok(port) = port else { continue };
                let proxy = proxy.clone();
                let _ = airlock_relay::mux::serve(
                    port,
                    Box::new(move || {
                        std::os::unix::net::UnixStream::connect(&proxy)
                            .map(airlock_relay::mux::Local::Unix)
                    }),
                );
            }
        })
        .map_err(|e| fail(Layer::Network, "starting the egress relay thread", e))?;
    Ok(path)
}

/// QEMU as the sandbox uid, with no supplementary groups, killed if this
/// helper dies, its stdio away from the caller's pipes.
fn spawn_qemu(
    image: &guest::Image,
    args: &[String],
    stage: &Stage,
) -> Result<std::process::Child, SandboxError> {
    let err_log = std::fs::File::create(stage.dir.join("vm").join("qemu.err"))
        .map_err(|e| fail(Layer::Microvm, "qemu.err", e))?;
    let mut cmd = std::process::Command::new(&image.qemu);
    cmd.args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(err_log)
        .uid(control::RUN_UID)
        // Set by root, uid makes std drop the supplementary groups too.
        .gid(control::RUN_UID);
    // SAFETY: the closure runs between fork and exec and only calls prctl
    // (async-signal-safe); it allocates nothing.
    unsafe {
        cmd.pre_exec(|| sys::set_pdeathsig(libc::SIGKILL));
    }
    cmd.spawn().map_err(|e| {
        fail(
            Layer::Microvm,
            format!("starting {}", image.qemu.display()),
            e,
        )
    })
}

/// Waits for QEMU, killing it when the boot hangs, at the deadline, or when
/// the caller goes. Returns how it ended and how long the boot took to init.
fn watch(
    child: &mut std::process::Child,
    stage: &Stage,
    accel: Accel,
    timeout_ms: u64,
    started: Instant,
) -> (Ended, Option<Duration>) {
    let boot_deadline = started + Duration::from_millis(accel.boot_allowance_ms());
    let mut booted: Option<Duration> = None;
    let ended = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ended::Exited(status),
            Ok(None) => {}
            Err(_) => break Ended::Exited(std::os::unix::process::ExitStatusExt::from_raw(0)),
        }
        let now = Instant::now();
        if booted.is_none() && console_has_init(&stage.console) {
            booted = Some(now - started);
        }
        match booted {
            None if now >= boot_deadline => break Ended::BootHang,
            Some(b) if now >= started + b + Duration::from_millis(timeout_ms) + GUEST_GRACE => {
                break Ended::Timeout
            }
            _ => {}
        }
        // The lifeline: EOF or an error on stdin means the caller is gone.
        let r = sys::poll(&[0], TICK.as_millis() as i32).unwrap_or_else(|_| vec![libc::POLLHUP]);
        if r[0] != 0 {
            let mut b = [0u8; 64];
            if matches!(sys::read(0, &mut b), Ok(0) | Err(_)) {
                break Ended::CallerGone;
            }
        }
    };
    if !matches!(ended, Ended::Exited(_)) {
        // Killed by PID: the only process this helper started.
        let _ = child.kill();
        let _ = child.wait();
    }
    (ended, booted)
}

/// Whether the guest's init has marked its start on the console.
fn console_has_init(console: &Path) -> bool {
    std::fs::read(console)
        .map(|b| b.windows(INIT_MARK.len()).any(|w| w == INIT_MARK))
        .unwrap_or(false)
}

/// The console's last lines, for a refusal that says what the guest said.
fn console_tail(console: &Path) -> String {
    let text = std::fs::read(console).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        return "the console stayed empty".into();
    }
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    format!(
        "last console lines: {}",
        tail.chars().take(600).collect::<String>()
    )
}

/// The guest's status, kill reason and accounting, into the report.
fn apply_result(spec: &crate::SandboxSpec, r: &GuestResult, report: &mut HelperReport) {
    match r.rc {
        Some(rc) if rc > 128 && rc < 160 => report.signal = Some(rc - 128),
        Some(rc) => report.exit_code = Some(rc),
        None => report.signal = Some(libc::SIGKILL),
    }
    report.cpu_ms = r.cpu_ms;
    report.peak_memory_bytes = r.memory_peak;
    if let (Some(a), Some(b)) = (r.t_start, r.t_end) {
        report.duration_ms = ((b - a).max(0.0) * 1000.0) as u64;
    }
    report.killed_by = r.killed_by.or(if r.oom_kill {
        Some(KillReason::Memory)
    } else if r.pids_max && report.exit_code != Some(0) {
        Some(KillReason::Pids)
    } else if report.signal == Some(libc::SIGXCPU)
        || (report.signal == Some(libc::SIGKILL) && r.cpu_ms >= spec.limits.cpu_time_ms)
    {
        Some(KillReason::CpuTime)
    } else {
        None
    });
    if report.killed_by == Some(KillReason::Timeout) {
        report.signal = Some(libc::SIGKILL);
        report.exit_code = None;
    }
}

/// The guest's stdout and stderr, at most the cap each (the guest keeps one
/// byte more to say that the cap was passed).
fn read_output(spec: &crate::SandboxSpec, stage: &Stage, report: &mut HelperReport) {
    let cap = usize::try_from(spec.limits.output_bytes).unwrap_or(usize::MAX);
    let read = |name: &str| -> (Vec<u8>, bool) {
        let mut b = Vec::new();
        if let Ok(f) = std::fs::File::open(stage.control.join(name)) {
            let _ = std::io::Read::read_to_end(&mut std::io::Read::take(f, cap as u64 + 1), &mut b);
        }
        let over = b.len() > cap;
        b.truncate(cap);
        (b, over)
    };
    (report.stdout, report.stdout_truncated) = read("stdout");
    (report.stderr, report.stderr_truncated) = read("stderr");
    if (report.stdout_truncated || report.stderr_truncated) && report.killed_by.is_none() {
        report.killed_by = Some(KillReason::Output);
    }
}
