//! The helper: the single-threaded process the caller re-executes (the airlock
//! binary with [`HELPER_ARG`](super::protocol::HELPER_ARG) first) to build and
//! watch one sandbox.
//!
//! It reads the request from fd 3, prepares everything that needs host
//! privilege (run directory and its lock, cgroup, user namespaces for the
//! sandbox and for idmapped mounts, the seccomp program), clones the sandbox's
//! init, moves it into the cgroup, then watches: init's messages, the caller's
//! control pipe (EOF = caller gone), the wall clock, the cgroup's counters.
//! After the run it reads the workspace changes, applies them if asked, writes
//! one report on fd 4 and closes it, then removes every trace (init's
//! namespaces, cgroup, run directory) before it exits.

use super::cgroup_glue::{self, Placement, RunCgroup};
use super::init::{self, InitPlan};
use super::protocol::{self, HelperReport, HelperRequest, InitMsg, LayerFailure};
use super::rundir::{self, RunLock};
use super::{namespaces, prepared_etc, rootless, seccomp};
use crate::view::{self, ViewOp};
use crate::Layer;
use crate::{sys, workspace};
use crate::{KillReason, NetworkSpec, SandboxError, WorkspaceMode};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::DirBuilderExt;
use std::time::{Duration, Instant};

/// Entry point of the helper process. Never returns.
pub fn helper_main() -> ! {
    serve_one_request(false)
}

/// Entry point of a helper forked in advance ([`super::prefork`]), once its
/// fds and environment are those of a spawned one. Never returns.
pub(crate) fn preforked_helper_main() -> ! {
    serve_one_request(true)
}

fn serve_one_request(forked_in_advance: bool) -> ! {
    let started = Instant::now();
    let started_ns = sys::monotonic_ns();
    // SAFETY: signal dispositions are process-wide; the helper is single-threaded.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        // A terminal's Ctrl-C reaches the whole foreground process group. The
        // helper must outlive it to tear down: the caller dies of it, the
        // control pipe reaches EOF, and the helper kills and cleans everything.
        for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTERM] {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
    let fd_ok = |fd: RawFd| {
        // SAFETY: F_GETFD only asks whether the fd is open.
        unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
    };
    if ![
        protocol::FD_REQUEST,
        protocol::FD_REPORT,
        protocol::FD_CONTROL,
    ]
    .iter()
    .all(|fd| fd_ok(*fd))
    {
        eprintln!(
            "airlock: {} is internal to airlock's sandbox and is not meant to be run by hand",
            protocol::HELPER_ARG
        );
        sys::exit_now(2);
    }
    // SAFETY: the caller passed these three fds to us and nothing else owns them.
    let (req, report_fd, control) = unsafe {
        (
            OwnedFd::from_raw_fd(protocol::FD_REQUEST),
            OwnedFd::from_raw_fd(protocol::FD_REPORT),
            OwnedFd::from_raw_fd(protocol::FD_CONTROL),
        )
    };
    for fd in [&req, &report_fd, &control] {
        // SAFETY: F_SETFD on an fd we own.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    let mut report = HelperReport::default();
    let mut reporter = Reporter(Some(report_fd));
    // Forked in advance, this helper waits while the caller judges the
    // command: it makes meanwhile what no request changes.
    let mut early = Early {
        rootless: rootless::is_rootless(),
        sandbox_ns: None,
        cgroup: None,
        net_ns: None,
    };
    // When each early step ended (monotonic ns), for AIRLOCK_PROFILE.
    let mut early_marks: Vec<(&str, u64)> =
        vec![("helper (forked in advance) started", started_ns)];
    if forked_in_advance && !early.rootless {
        early.cgroup = cgroup_glue::prepare_early();
        early_marks.push(("early: cgroup made", sys::monotonic_ns()));
        early.sandbox_ns = namespaces::user_ns(0, 0).ok();
        early_marks.push(("early: user namespace made", sys::monotonic_ns()));
        early.net_ns = namespaces::net_ns().ok();
        early_marks.push(("early: network namespace made", sys::monotonic_ns()));
    }
    if forked_in_advance {
        // The caller moved this helper off its CPU for the preparation
        // (sys::run_beside_me); init and the command get the caller's CPUs.
        sys::share_parents_cpus();
    }
    match read_request(&req) {
        Ok(request) => {
            drop(req);
            // Times count from the caller's spawn (same clock), not from here.
            let now_ns = sys::monotonic_ns();
            let since_spawn = Duration::from_nanos(now_ns.saturating_sub(request.caller_clock_ns));
            let t0 = match request.caller_clock_ns {
                0 => started,
                _ => Instant::now().checked_sub(since_spawn).unwrap_or(started),
            };
            if request.caller_clock_ns != 0 {
                if forked_in_advance {
                    // Steps before the request was sent count back from it.
                    for (what, ns) in &early_marks {
                        let sent = request.caller_clock_ns;
                        report.timings.push(match ns.checked_sub(sent) {
                            Some(after) => (what.to_string(), after / 1000),
                            None => {
                                let ms = (sent - ns) as f64 / 1e6;
                                (format!("{what}, {ms:.2} ms before the request"), 0)
                            }
                        });
                    }
                }
                let step = if forked_in_advance {
                    (
                        "helper (forked in advance) has the request".into(),
                        since_spawn.as_micros() as u64,
                    )
                } else {
                    let ns = started_ns.saturating_sub(request.caller_clock_ns);
                    ("helper started".into(), ns / 1000)
                };
                report.timings.push(step);
            }
            if request.stdin_null {
                sys::stdin_to_devnull();
            }
            if let Err(e) = run(&request, control, t0, early, &mut report, &mut reporter) {
                report.failure = Some(match e {
                    SandboxError::Layer { layer, detail } => LayerFailure { layer, detail },
                    SandboxError::Spec(detail) => LayerFailure {
                        layer: Layer::Spec,
                        detail,
                    },
                    other => LayerFailure {
                        layer: Layer::Helper,
                        detail: other.to_string(),
                    },
                });
            }
        }
        Err(e) => {
            // What was made in advance is removed: the exit below runs no
            // destructors.
            drop(early);
            report.failure = Some(LayerFailure {
                layer: Layer::Helper,
                detail: e,
            })
        }
    }
    // Sent here unless the run already sent it before its teardown.
    reporter.send(&report);
    sys::exit_now(0)
}

/// The report pipe: written once, then closed, so that the caller sees EOF
/// when the report is complete, not only when the helper exits.
struct Reporter(Option<OwnedFd>);

impl Reporter {
    fn send(&mut self, report: &HelperReport) {
        if let Some(fd) = self.0.take() {
            let bytes = serde_json::to_vec(report).unwrap_or_default();
            let _ = sys::write_all(fd.as_raw_fd(), &bytes);
        }
    }
}

fn read_request(fd: &OwnedFd) -> Result<HelperRequest, String> {
    let bytes =
        sys::read_to_end(fd.as_raw_fd()).map_err(|e| format!("reading the request: {e}"))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("bad request: {e}"))
}

fn spec_error(msg: impl Into<String>) -> SandboxError {
    SandboxError::Spec(msg.into())
}

fn validate(request: &HelperRequest) -> Result<(), SandboxError> {
    let spec = &request.spec;
    if !request.pooled {
        validate_command(&spec.argv, &spec.cwd)?;
    }
    if !spec.workspace.root.is_absolute() || !spec.workspace.root.is_dir() {
        return Err(spec_error(format!(
            "workspace root {} is not an existing absolute directory",
            spec.workspace.root.display()
        )));
    }
    for p in spec
        .read_paths
        .iter()
        .chain(&spec.write_paths)
        .chain(&spec.hide_paths)
    {
        if !p.is_absolute() || crate::view::relative_inside(p).is_none() {
            return Err(spec_error(format!(
                "filesystem path {} must be absolute without `..`",
                p.display()
            )));
        }
    }
    if spec.limits.timeout_ms == 0 {
        return Err(spec_error("limits.timeout must be positive"));
    }
    Ok(())
}

/// The per-command part of a request (a pooled sandbox gets it at launch).
fn validate_command(argv: &[String], cwd: &std::path::Path) -> Result<(), SandboxError> {
    if argv.is_empty() || argv[0].is_empty() {
        return Err(spec_error("argv is empty"));
    }
    if !cwd.is_absolute() {
        return Err(spec_error(format!("cwd {} is not absolute", cwd.display())));
    }
    Ok(())
}

struct Watch {
    kill: Option<KillReason>,
    caller_gone: bool,
    started: Option<Instant>,
    ended: Option<Instant>,
    exit: Option<(Option<i32>, Option<i32>)>,
    failure: Option<LayerFailure>,
    violations: Vec<crate::Violation>,
    /// Init's own setup steps (see [`InitMsg::Started`]).
    init_timings: Vec<(String, u64)>,
}

/// Whether the helper runs rootless (told apart at its start: in the user
/// namespace of its own it enters later it is uid 0), and what a helper
/// forked in advance made before its request came.
struct Early {
    /// The sandbox's user namespace (root mode: 0 maps to the sandbox's host uid).
    sandbox_ns: Option<OwnedFd>,
    /// The run's cgroup made, stale groups removed and (v1) the first
    /// migration's wait under way ([`cgroup_glue::prepare_early`]; root mode).
    cgroup: Option<cgroup_glue::Prepared>,
    /// A network namespace for init to join (and bring `lo` up in), for a
    /// run whose network is not open (root mode; dropped unused otherwise).
    net_ns: Option<OwnedFd>,
    rootless: bool,
}

fn run(
    request: &HelperRequest,
    control: OwnedFd,
    t0: Instant,
    early: Early,
    report: &mut HelperReport,
    reporter: &mut Reporter,
) -> Result<(), SandboxError> {
    validate(request)?;
    let spec = &request.spec;
    let rootless = early.rootless;
    if rootless {
        let base = request
            .runtime_dir
            .clone()
            .unwrap_or_else(|| request.runs_dir.join("..").join("run"));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&base)
            .map_err(|e| io_layer(rundir::LAYER, &base.display().to_string(), e))?;
        rundir::set_mount_base(base.join("mnt"));
    }
    if request.sweep_stale {
        rundir::clean_stale(&request.runs_dir, |_| {});
    }
    let run = RunLock::create(&request.runs_dir, &spec.request_id)?;
    if rootless {
        rootless::enter_own_user_ns()?;
        report.notes.push(
            "rootless mode: the caller's uid is root inside a user namespace of its own".into(),
        );
    }
    let result = run_in(request, &run, control, t0, early, report, reporter);
    if let Err(e) = run.remove() {
        report.notes.push(format!(
            "could not remove the run's lock file {}: {e}",
            run.path.display()
        ));
    }
    report
        .timings
        .push(("run lock removed".into(), t0.elapsed().as_micros() as u64));
    // Init's steps arrive late; the profile reads in time order.
    report.timings.sort_by_key(|(_, us)| *us);
    result
}

fn run_in(
    request: &HelperRequest,
    run: &RunLock,
    control: OwnedFd,
    t0: Instant,
    early: Early,
    report: &mut HelperReport,
    reporter: &mut Reporter,
) -> Result<(), SandboxError> {
    let rootless = early.rootless;
    let spec = &request.spec;
    let rule = match spec.network {
        NetworkSpec::None => seccomp::SocketRule::UnixOnly,
        NetworkSpec::Proxy { .. } => seccomp::SocketRule::UnixAndInet,
        NetworkSpec::Open => seccomp::SocketRule::Any,
    };
    let mark = |report: &mut HelperReport, what: &str| {
        report
            .timings
            .push((what.to_string(), t0.elapsed().as_micros() as u64));
    };
    mark(report, "request read, run dir locked");
    let program = seccomp::compile(rule, seccomp::SetIdRule::Refuse)?;
    mark(report, "seccomp compiled");
    // Rootless: the helper's own namespace already maps 0 to the caller, and
    // the sandbox's maps 0 to that 0, so files keep the caller's ownership and
    // nothing is idmapped.
    let sandbox_ns = match (rootless, early.sandbox_ns) {
        (true, _) => namespaces::user_ns_to(0, 0, 0, 0)?,
        (false, Some(made)) => made,
        (false, None) => namespaces::user_ns(0, 0)?,
    };
    let mut idmaps: Vec<(u32, OwnedFd)> = Vec::new();
    let proxy_socket = match &spec.network {
        NetworkSpec::Proxy { socket } => Some(socket),
        _ => None,
    };
    for p in std::iter::once(&spec.workspace.root)
        .chain(&spec.write_paths)
        .chain(proxy_socket)
        .filter(|_| !rootless)
    {
        if let Some((uid, gid)) = crate::sys::owner(p) {
            if !idmaps.iter().any(|(u, _)| *u == uid) {
                // A root-owned tree needs the sandbox's own mapping (0 -> sandbox
                // uid): reuse that namespace instead of making an identical one.
                let ns = if (uid, gid) == (0, 0) {
                    sandbox_ns
                        .try_clone()
                        .map_err(|e| io_layer(Layer::Namespaces, "dup user namespace fd", e))?
                } else {
                    namespaces::user_ns(uid, gid)?
                };
                idmaps.push((uid, ns));
            }
        }
    }
    mark(report, "user namespaces made");
    let upper_fs = match spec.workspace.mode {
        WorkspaceMode::Overlay => Some(upper_layer_fs(&spec.limits, rootless)?),
        _ => None,
    };
    if !rootless {
        // Rootless: the pipes already belong to the caller, who is sandbox root.
        give_stdio_pipes_to_sandbox_root();
    }
    let (view, prepared_etc) = filesystem_view(request, &run.path, rootless, report);
    mark(report, "filesystem view planned");
    let cgroup = if rootless {
        rootless_cgroup(
            spec,
            &spec.limits,
            "limits.memory, limits.cpus and limits.cpu_time",
            "per-process RLIMIT_DATA and RLIMIT_CPU, wall-clock timeout",
            &mut report.notes,
        )?
    } else if let Some(prepared) = early.cgroup {
        RunCgroup::from_prepared(prepared, &spec.request_id, &spec.limits, &mut report.notes)?
    } else {
        RunCgroup::create(&spec.request_id, &spec.limits, &mut report.notes)?
    };
    if !request.sweep_stale {
        cgroup.skip_stale_sweep();
    }
    mark(report, "cgroup created");
    // A pooled sandbox's init is sent its launch and go by the pool itself
    // (protocol::FD_GO); any other's by this helper.
    let (go_r, go_w) = if request.pooled {
        (pool_pipe(protocol::FD_GO, "go")?, None)
    } else {
        let (r, w) = sys::pipe().map_err(|e| io_layer(Layer::Helper, "pipe", e))?;
        (r, Some(w))
    };
    // Init's, once cloned: the helper's copy goes right after the clone, so
    // that the byte on it can only come from init.
    let prepared_w = match request.pooled {
        true => Some(pool_pipe(protocol::FD_PREPARED, "prepared")?),
        false => None,
    };
    let (msg_r, msg_w) = sys::pipe().map_err(|e| io_layer(Layer::Helper, "pipe", e))?;
    let isolate_network = !matches!(spec.network, NetworkSpec::Open);
    let net_ns = early.net_ns.filter(|_| isolate_network);
    let entry = cgroup.entry(&mut report.notes);
    let plan = InitPlan {
        spec,
        cgroup_join: entry.join(),
        view: &view,
        sandbox_userns: &sandbox_ns,
        net_ns: net_ns.as_ref(),
        idmaps: &idmaps,
        seccomp: &program,
        upper_fs: upper_fs.as_ref(),
        prepared: prepared_etc.as_ref().map(prepared_etc::PreparedEtc::tree),
        rlimits: super::rlimits::RlimitSpec::from_limits(&spec.limits),
        stand_ins: super::rlimits::StandIns::for_run(&spec.limits, rootless, cgroup.is_none()),
        landlock: init::landlock_rules(spec),
        go: go_r.as_raw_fd(),
        built_signal: prepared_w.as_ref().map(|fd| fd.as_raw_fd()),
        report: msg_w.as_raw_fd(),
        rootless,
        t0,
    };
    let flags = namespaces::init_clone_flags(isolate_network && net_ns.is_none());
    let (init_pid, placement) = match cgroup.clone_init(flags, &entry, &mut report.notes) {
        Ok((0, placement)) => {
            drop(go_w);
            drop(msg_r);
            // The command's side may be made before the launch only where
            // nothing moves init into its cgroup after this clone.
            let settled = placement == Placement::Settled && !super::cgroup_glue::attach_late();
            init::run(&plan, request.pooled && settled)
        }
        Ok(spawned) => spawned,
        Err(e) => {
            let _ = cgroup.destroy();
            return Err(io_layer(Layer::Namespaces, "clone of the sandbox init", e));
        }
    };
    drop(go_r);
    drop(prepared_w);
    drop(msg_w);
    // The helper keeps no end of the command's stdio.
    sys::stdio_to_devnull();
    // Before the command started: init and its cgroup go, and so does the run.
    let abandon_init = |e: SandboxError| -> SandboxError {
        sys::kill(init_pid, libc::SIGKILL);
        let _ = sys::waitpid(init_pid, 0);
        let _ = cgroup.destroy();
        e
    };
    // Debug builds only: the escape corpus' proof that the order matters.
    let late = super::cgroup_glue::attach_late();
    let attach = |report: &mut HelperReport| -> Result<(), SandboxError> {
        if placement == Placement::Attach {
            mark(report, "init cloned");
            if let Err(e) = cgroup.add(init_pid) {
                return Err(abandon_init(e));
            }
        }
        Ok(())
    };
    if !late {
        attach(report)?;
    }
    mark(report, "init cloned and in its cgroup");
    let mut launched = None;
    if request.pooled {
        // Warm: blocked in this read (no CPU) until a request takes the sandbox.
        match wait_for_launch(&control) {
            Ok(l) => launched = Some(l),
            Err(e) => {
                return Err(abandon_init(e));
            }
        }
        mark(report, "pooled: launch received");
    } else if request.gated {
        if let Err(e) = wait_for_go(&control) {
            return Err(abandon_init(e));
        }
        mark(report, "caller's go received");
    }
    let spec_launched;
    let spec = match &launched {
        Some(l) => {
            // The launch comes before the gate has passed: init prepares the
            // command meanwhile, and its exec waits for the go, which the pool
            // sends init directly.
            if let Err(e) = wait_for_go(&control) {
                return Err(abandon_init(e));
            }
            mark(report, "pooled: go received");
            let mut s = spec.clone();
            l.apply_to(&mut s);
            spec_launched = s;
            &spec_launched
        }
        None => {
            if let Some(w) = &go_w {
                let _ = sys::write_all(w.as_raw_fd(), b"g");
            }
            spec
        }
    };
    if late {
        std::thread::sleep(std::time::Duration::from_millis(300));
        attach(report)?;
    }

    let mut watch = Watch {
        kill: None,
        caller_gone: false,
        started: None,
        ended: None,
        exit: None,
        failure: None,
        violations: Vec::new(),
        init_timings: Vec::new(),
    };
    watch_run(spec, init_pid, &msg_r, &control, &cgroup, &mut watch);
    drop(go_w);
    // Init reports the command's end once it has reaped every other process of
    // the sandbox (as the PID namespace's init, every orphan is its child);
    // its own exit then tears its mount namespace down, which waits for an
    // RCU grace period: the outcome does not wait for that. Without that
    // report (setup failed, killed), or without a cgroup (the CPU time is
    // then the reaped children's), init is reaped first.
    let mut reaped = false;
    if watch.exit.is_none() || cgroup.is_none() {
        let _ = sys::waitpid(init_pid, 0);
        mark(report, "init reaped");
        reaped = true;
    }
    // Killing waits until the cgroup is empty, init included: only needed now
    // if something besides init is left (init reaped all it could see).
    if reaped || !cgroup.only_member(init_pid) {
        cgroup.kill_all();
    }
    let mut stats = cgroup.stats();
    if cgroup.is_none() {
        // Without a cgroup: the CPU time of init and everything it reaped
        // (init waits for every process of the sandbox).
        stats.cpu_ms = children_cpu_ms();
    }
    // The outcome is known once the command's processes are all dead and the
    // changes are collected: the report goes out then, and init's exit, the
    // cgroup and the run directory are removed after it, while the caller
    // already answers (it still reaps this helper; a pool's stop waits).
    let outcome = collect_outcome(spec, &upper_fs, &mut watch, &stats, t0, report);
    if outcome.is_ok() {
        mark(report, "outcome collected, report sent");
        // Init's steps arrive late; the profile reads in time order.
        report.timings.sort_by_key(|(_, us)| *us);
        reporter.send(report);
    }
    if !reaped {
        let _ = sys::waitpid(init_pid, 0);
    }
    if let Err(e) = cgroup.destroy() {
        report.notes.push(format!("cgroup teardown: {e}"));
    }
    outcome
}

/// Fills the report from what the run left: the exit, the kill reason, the
/// counters, the workspace changes.
fn collect_outcome(
    spec: &crate::SandboxSpec,
    upper_fs: &Option<OwnedFd>,
    watch: &mut Watch,
    stats: &super::cgroup_glue::RunStats,
    t0: Instant,
    report: &mut HelperReport,
) -> Result<(), SandboxError> {
    if let Some(f) = watch.failure.take() {
        report.failure = Some(f);
        return Ok(());
    }
    let (code, signal) = watch.exit.unwrap_or((None, Some(libc::SIGKILL)));
    report.exit_code = code;
    report.signal = signal;
    report.cpu_ms = stats.cpu_ms;
    report.peak_memory_bytes = stats.peak_memory_bytes;
    report.killed_by = watch.kill;
    report.violations.append(&mut watch.violations);
    if report.killed_by.is_none() {
        // v1 kills only the OOM victim: when it was a child of the command, the
        // command itself usually ends with 137 or an error, not SIGKILL.
        if stats.oom_killed && code != Some(0) {
            report.killed_by = Some(KillReason::Memory);
        } else if stats.pids_limit_hit {
            // A fork bomb's main process may exit before the helper's next look;
            // the limit was still hit and the rest of the tree was killed.
            report.killed_by = Some(KillReason::Pids);
        } else if signal == Some(libc::SIGXCPU)
            || (signal == Some(libc::SIGKILL) && stats.cpu_ms >= spec.limits.cpu_time_ms)
        {
            report.killed_by = Some(KillReason::CpuTime);
        }
    }
    report.timings.append(&mut watch.init_timings);
    if let Some(s) = watch.started {
        report.timings.push((
            "command exec'd".into(),
            s.duration_since(t0).as_micros() as u64,
        ));
    }
    if let Some(e) = watch.ended {
        report.timings.push((
            "command ended (init reported)".into(),
            e.duration_since(t0).as_micros() as u64,
        ));
    }
    if let (Some(s), Some(e)) = (watch.started, watch.ended) {
        report.duration_ms = e.duration_since(s).as_millis() as u64;
        report.setup_us = s.duration_since(t0).as_micros() as u64;
    }
    if watch.caller_gone {
        return Ok(());
    }
    if spec.workspace.mode == WorkspaceMode::Overlay {
        // The tmpfs outlives the sandbox's mount namespace through our fd.
        let Some(fs) = upper_fs else {
            return Ok(());
        };
        let upper = std::path::PathBuf::from(format!("/proc/self/fd/{}/upper", fs.as_raw_fd()));
        let f = workspace::finish(&upper, &spec.workspace, &spec.limits, spec.workspace.apply);
        report.applied = f.applied;
        report.violations.extend(f.violations);
        report.changes = f.changes;
        report.change_summary = Some(f.summary);
    }
    Ok(())
}

/// The sandbox's filesystem view, its `/etc` served by one prepared directory
/// when that shows the same thing (see [`prepared_etc`]); the second value
/// holds that directory for the run. Rootless, the copies could not keep the
/// host files' owners, so `/etc` keeps its per-entry binds.
fn filesystem_view(
    request: &HelperRequest,
    run_dir: &std::path::Path,
    rootless: bool,
    report: &mut HelperReport,
) -> (Vec<ViewOp>, Option<prepared_etc::PreparedEtc>) {
    let host = view::CachedHost::new(&view::RealHost);
    let ops = view::plan(
        &view::ViewInput {
            spec: &request.spec,
            run_dir,
            passwd: view::PASSWD,
            group: view::GROUP,
        },
        &host,
    );
    let Some(state) = request.runs_dir.parent().filter(|_| !rootless) else {
        return (ops, None);
    };
    let Some(split) = view::split_etc(ops.clone(), &host) else {
        return (ops, None);
    };
    match prepared_etc::prepare(&state.join("cache").join("etc"), &split.entries) {
        Ok(etc) => (split.join(etc.path().to_path_buf()), Some(etc)),
        Err(e) => {
            report.notes.push(format!(
                "/etc is bound entry by entry (slower start): its prepared copy could not be used: {e}"
            ));
            (ops, None)
        }
    }
}

/// Blocks until the caller lets the command start ([`protocol::CONTROL_GO`]);
/// EOF means the caller is gone or refused, and nothing may run.
fn wait_for_go(control: &OwnedFd) -> Result<(), SandboxError> {
    let mut b = [0u8; 1];
    loop {
        match sys::read(control.as_raw_fd(), &mut b) {
            Ok(1) if b[0] == protocol::CONTROL_GO => return Ok(()),
            Ok(1) => continue,
            Ok(_) | Err(_) => {
                return Err(SandboxError::Layer {
                    layer: Layer::Helper,
                    detail: "the caller did not let the command start (its audit record could not be made durable, or it went away)".into(),
                })
            }
        }
    }
}

/// A pooled sandbox's end of a pipe the pool keeps the other end of: the go
/// pipe's read end at [`protocol::FD_GO`], the prepared pipe's write end at
/// [`protocol::FD_PREPARED`].
fn pool_pipe(fd: RawFd, what: &str) -> Result<OwnedFd, SandboxError> {
    if !sys::is_fifo(fd) {
        return Err(SandboxError::Layer {
            layer: Layer::Helper,
            detail: format!("a pooled helper was started without its {what} pipe"),
        });
    }
    // SAFETY: the pool passed this pipe's end to us alone; nothing else in
    // this process owns the fd.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: F_SETFD on an fd we own.
    unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    Ok(fd)
}

/// Blocks until a request takes this pooled sandbox: [`protocol::CONTROL_LAUNCH`]
/// and its frame. EOF means the pool let it go, and nothing may run.
fn wait_for_launch(control: &OwnedFd) -> Result<protocol::Launch, SandboxError> {
    let gone = || SandboxError::Layer {
        layer: Layer::Helper,
        detail: "the pooled sandbox was released before any command ran in it".into(),
    };
    let mut b = [0u8; 1];
    loop {
        match sys::read(control.as_raw_fd(), &mut b) {
            Ok(1) if b[0] == protocol::CONTROL_LAUNCH => break,
            Ok(1) => continue,
            Ok(_) | Err(_) => return Err(gone()),
        }
    }
    let launch = protocol::Launch::read_after_tag(control.as_raw_fd()).map_err(spec_error)?;
    validate_command(&launch.argv, &launch.cwd)?;
    Ok(launch)
}

/// Rootless mode's cgroup: a delegated cgroup v2 subtree if this user has one
/// (holding `limits`), else none, which the policy must accept (`[limits]
/// enforcement = "best_effort"`); otherwise the run is refused here too (the
/// capability check refuses it first, this holds for any other caller of the
/// backend). `stand_ins` says what holds the limits instead, for the note.
/// Also the gVisor backend's rootless mode.
pub(crate) fn rootless_cgroup(
    spec: &crate::SandboxSpec,
    limits: &crate::Limits,
    needs: &str,
    stand_ins: &str,
    notes: &mut Vec<String>,
) -> Result<RunCgroup, SandboxError> {
    if let Some(dir) = super::cgroup::delegated_v2() {
        let host = super::cgroup::CgroupHost::v2_at(&dir);
        let cg = RunCgroup::create_on(&host, &spec.request_id, limits, notes)?;
        notes.push(format!(
            "rootless mode: limits enforced by the delegated cgroup v2 subtree {}",
            dir.display()
        ));
        return Ok(cg);
    }
    if spec.limit_enforcement != crate::spec::LimitEnforcement::BestEffort {
        return Err(SandboxError::Layer {
            layer: Layer::Cgroup,
            detail: format!(
                "{needs} cannot be enforced without a cgroup. {}",
                crate::capability::ROOTLESS_LIMITS_HINT
            ),
        });
    }
    notes.push(format!(
        "rootless mode without a cgroup: {needs} are best effort ({stand_ins}), \
         as limits.enforcement = \"best_effort\" accepts"
    ));
    Ok(RunCgroup::none())
}

/// CPU time, in ms, of this process's waited-for children and their waited-for
/// descendants.
fn children_cpu_ms() -> u64 {
    // SAFETY: ru is plain data that getrusage fills.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a live rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return 0;
    }
    let ms = |t: libc::timeval| t.tv_sec as u64 * 1000 + t.tv_usec as u64 / 1000;
    ms(ru.ru_utime) + ms(ru.ru_stime)
}

/// A detached tmpfs with `upper/` (owned by sandbox root) and `work/`. Its pages
/// are charged to the run's memory cgroup; capping it at three quarters of the
/// memory limit makes a command that fills the workspace see ENOSPC (which it
/// can report) before the OOM killer would stop it.
fn upper_layer_fs(limits: &crate::Limits, rootless: bool) -> Result<OwnedFd, SandboxError> {
    let size = (limits.memory_bytes / 4 * 3).max(1 << 20).to_string();
    let inodes = super::mounts::inode_cap(limits.memory_bytes);
    let fs = sys::new_fs(
        c"tmpfs",
        &[("mode", "0755"), ("size", &size), ("nr_inodes", &inodes)],
        sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV,
    )
    .map_err(|e| io_layer(Layer::Workspace, "upper layer tmpfs", e))?;
    let base = std::path::PathBuf::from(format!("/proc/self/fd/{}", fs.as_raw_fd()));
    let upper = base.join("upper");
    std::fs::create_dir(&upper).map_err(|e| io_layer(Layer::Workspace, "upper dir", e))?;
    std::fs::create_dir(base.join("work"))
        .map_err(|e| io_layer(Layer::Workspace, "work dir", e))?;
    if !rootless {
        // Rootless: the helper made it as its root, which is sandbox root too.
        std::os::unix::fs::chown(
            &upper,
            Some(namespaces::SANDBOX_HOST_UID),
            Some(namespaces::SANDBOX_HOST_GID),
        )
        .map_err(|e| io_layer(Layer::Workspace, "chown upper dir", e))?;
    }
    Ok(fs)
}

/// The stdio pipes were made by the caller (host root, mode 0600), so sandbox
/// root could use the fds it inherits but not reopen them (`> /dev/stdout`
/// goes through /proc/self/fd/1). Giving the pipes to sandbox root fixes that;
/// /dev/null and terminals are left alone.
fn give_stdio_pipes_to_sandbox_root() {
    for fd in 0..3 {
        if sys::is_fifo(fd) {
            // SAFETY: fchown on one of our own pipe fds.
            unsafe {
                libc::fchown(
                    fd,
                    namespaces::SANDBOX_HOST_UID,
                    namespaces::SANDBOX_HOST_GID,
                )
            };
        }
    }
}

fn io_layer(layer: Layer, what: &str, e: std::io::Error) -> SandboxError {
    SandboxError::Layer {
        layer,
        detail: format!("{what}: {e}"),
    }
}

/// How often the helper looks at the cgroup's counters (pids limit, CPU time).
const TICK: Duration = Duration::from_millis(50);

fn watch_run(
    spec: &crate::SandboxSpec,
    init_pid: libc::pid_t,
    msgs: &OwnedFd,
    control: &OwnedFd,
    cgroup: &RunCgroup,
    w: &mut Watch,
) {
    let timeout = Duration::from_millis(spec.limits.timeout_ms);
    // Setup gets its own bound so that a wedged setup cannot hang the caller.
    let setup_deadline = Instant::now() + Duration::from_secs(30);
    let mut buf: Vec<u8> = Vec::new();
    let mut control_open = true;
    let kill_all = |w: &mut Watch, reason: Option<KillReason>| {
        if w.kill.is_none() {
            w.kill = reason;
        }
        cgroup.kill_all();
        sys::kill(init_pid, libc::SIGKILL);
    };
    loop {
        let now = Instant::now();
        let deadline = match w.started {
            Some(s) => s + timeout,
            None => setup_deadline,
        };
        if now >= deadline {
            if w.started.is_some() {
                kill_all(w, Some(KillReason::Timeout));
            } else {
                w.failure.get_or_insert(LayerFailure {
                    layer: Layer::Helper,
                    detail: "sandbox setup did not finish within 30s".into(),
                });
                kill_all(w, None);
            }
        }
        let wait = deadline.saturating_duration_since(now).min(TICK);
        let fds: Vec<RawFd> = if control_open {
            vec![msgs.as_raw_fd(), control.as_raw_fd()]
        } else {
            vec![msgs.as_raw_fd()]
        };
        let revents =
            sys::poll(&fds, wait.as_millis().max(1) as i32).unwrap_or_else(|_| vec![0; fds.len()]);
        if control_open && revents[1] != 0 {
            let mut b = [0u8; 16];
            match sys::read(control.as_raw_fd(), &mut b) {
                Ok(0) | Err(_) => {
                    control_open = false;
                    w.caller_gone = true;
                    kill_all(w, None);
                }
                Ok(n) => {
                    if b[..n].contains(&protocol::CONTROL_KILL_OUTPUT) {
                        kill_all(w, Some(KillReason::Output));
                    }
                    if b[..n].contains(&protocol::CONTROL_KILL_CANCELLED) {
                        kill_all(w, Some(KillReason::Cancelled));
                    }
                }
            }
        }
        if revents[0] != 0 {
            let mut chunk = [0u8; 4096];
            let n = sys::read(msgs.as_raw_fd(), &mut chunk).unwrap_or(0);
            if n == 0 {
                w.ended.get_or_insert_with(Instant::now);
                if w.exit.is_none() && w.failure.is_none() && w.started.is_none() {
                    w.failure = Some(LayerFailure {
                        layer: Layer::Helper,
                        detail: "the sandbox init died during setup".into(),
                    });
                }
                return;
            }
            buf.extend_from_slice(&chunk[..n]);
            while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=pos).collect();
                match serde_json::from_slice::<InitMsg>(&line) {
                    Ok(InitMsg::Started { timings }) => {
                        w.started = Some(Instant::now());
                        w.init_timings = timings;
                    }
                    Ok(InitMsg::Failed { layer, detail }) => {
                        w.failure = Some(LayerFailure { layer, detail })
                    }
                    Ok(InitMsg::Exited {
                        code,
                        signal,
                        violations,
                    }) => {
                        w.ended = Some(Instant::now());
                        w.exit = Some((code, signal));
                        w.violations = violations;
                        // Init's last message: the command and every other
                        // process of the sandbox are reaped; init only exits
                        // now (its namespaces' teardown is not the run's).
                        return;
                    }
                    Err(e) => {
                        w.failure.get_or_insert(LayerFailure {
                            layer: Layer::Helper,
                            detail: format!("unreadable message from the sandbox's init: {e}"),
                        });
                    }
                }
            }
        }
        if w.started.is_some() && w.kill.is_none() && w.exit.is_none() {
            let s = cgroup.stats();
            if s.pids_limit_hit {
                kill_all(w, Some(KillReason::Pids));
            } else if s.cpu_ms > spec.limits.cpu_time_ms {
                kill_all(w, Some(KillReason::CpuTime));
            }
        }
    }
}
