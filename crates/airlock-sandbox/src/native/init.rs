//! The sandbox's PID 1.
//!
//! Cloned by the helper into fresh mount, PID, IPC, UTS (and network)
//! namespaces, it builds the filesystem view as real root, enters the sandbox's
//! user namespace, drops every privilege, forks the command, then reaps every
//! process, forwards signals to the command, and when the command ends kills
//! whatever it left behind before reporting to the helper. If the helper dies,
//! the kernel kills init (`PR_SET_PDEATHSIG`), and with PID 1 gone the kernel
//! kills every process of the namespace.

use super::cgroup::CgroupJoin;
use super::landlock::FsRules;
use super::mounts::{self, ViewPlan};
use super::protocol::{self, InitMsg, Launch, CONTROL_LAUNCH};
use super::rlimits::RlimitSpec;
use super::seccomp::SeccompProgram;
use super::{caps, landlock, namespaces, netwatch, rlimits, seccomp};
use crate::relay;
use crate::sys;
use crate::view::ViewOp;
use crate::Layer;
use crate::{NetworkSpec, SandboxError, SandboxSpec, WorkspaceMode};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Signals PID 1 passes on to the command.
pub const FORWARDED: &[libc::c_int] = &[
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGCONT,
    libc::SIGWINCH,
];

/// Everything init needs, prepared by the helper before the clone.
pub struct InitPlan<'a> {
    pub spec: &'a SandboxSpec,
    /// The run's cgroup files init writes itself into before anything else
    /// (cgroup v1); `None` when init was born there or the helper moves it.
    pub cgroup_join: Option<&'a CgroupJoin>,
    /// The filesystem view to build.
    pub view: &'a [ViewOp],
    pub sandbox_userns: &'a OwnedFd,
    /// A network namespace made in advance ([`namespaces::net_ns`]): joined
    /// instead of one made by init's clone (flags without `CLONE_NEWNET`).
    /// `None`: the clone made one, or the network is open.
    pub net_ns: Option<&'a OwnedFd>,
    /// Idmapping user namespaces by host owner uid.
    pub idmaps: &'a [(u32, OwnedFd)],
    pub seccomp: &'a SeccompProgram,
    /// The detached tmpfs for the overlay's upper layer (overlay mode).
    pub upper_fs: Option<&'a OwnedFd>,
    /// The prepared `/etc`'s detached tree, if the view has one.
    pub prepared: Option<&'a OwnedFd>,
    pub rlimits: RlimitSpec,
    /// Rootless mode: rlimits that stand in for the cgroup.
    pub stand_ins: rlimits::StandIns,
    pub landlock: FsRules,
    /// Helper -> init: one byte once init is in its cgroup; EOF if the helper died.
    pub go: RawFd,
    /// A pooled sandbox's: init -> pool, [`protocol::PREPARED`] once the view
    /// is built (then closed).
    pub built_signal: Option<RawFd>,
    /// Init -> helper messages.
    pub report: RawFd,
    /// Rootless mode (see [`super::rootless`]): init is root of the helper's
    /// user namespace, not of the host.
    pub rootless: bool,
    /// The helper's start (init is its fork, so the clock is shared): init's
    /// setup steps are timed from it for the profile.
    pub t0: Instant,
}

/// Init's setup steps, timed for the profile (`AIRLOCK_PROFILE=1`).
struct Marks {
    t0: Instant,
    steps: Vec<(String, u64)>,
}

impl Marks {
    fn mark(&mut self, what: &str) {
        let us = self.t0.elapsed().as_micros() as u64;
        self.steps.push((format!("init: {what}"), us));
    }
}

fn send(fd: RawFd, msg: &InitMsg) {
    if let Ok(mut line) = serde_json::to_vec(msg) {
        line.push(b'\n');
        let _ = sys::write_all(fd, &line);
    }
}

fn fail_msg(e: SandboxError) -> InitMsg {
    match e {
        SandboxError::Layer { layer, detail } => InitMsg::Failed { layer, detail },
        other => InitMsg::Failed {
            layer: Layer::Helper,
            detail: other.to_string(),
        },
    }
}

/// When the command's side is made and what it waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// A cold run: the go came before the fork; exec at once.
    Now,
    /// A pooled sandbox whose launch init read: exec on the go byte.
    AfterGo,
    /// A pooled sandbox made ready ahead: the command's side is forked and
    /// set up before any request, reads the launch itself, then execs on the
    /// go byte (see [`run`]).
    LaunchThenGo,
}

/// Runs init. Never returns.
///
/// `prepare_early` (a pooled sandbox whose init is in its cgroup from its
/// birth or by its own join, so that nothing moves it later): the command's
/// side is forked, its process state set and its landlock rules opened while
/// the sandbox waits in the pool, and a request only has to bring its argv,
/// cwd, environment and CPU limit. Where the helper moves init into its
/// cgroup after the clone, nothing forks before the launch, so that the
/// command cannot be born outside the cgroup.
pub fn run(plan: &InitPlan, prepare_early: bool) -> ! {
    let _ = sys::set_pdeathsig(libc::SIGKILL);
    // The helper's report pipe came along with the clone: the caller reads
    // the report to EOF, which must not wait for init's own exit.
    // SAFETY: closing an fd number this process never uses.
    unsafe { libc::close(super::protocol::FD_REPORT) };
    // The helper ignores these; init forwards them to the command instead
    // (an ignored signal would never reach init's signalfd).
    for sig in FORWARDED {
        // SAFETY: resetting a disposition in this single-threaded process.
        unsafe { libc::signal(*sig, libc::SIG_DFL) };
    }
    let mut marks = Marks {
        t0: plan.t0,
        steps: Vec::new(),
    };
    marks.mark("started");
    let early = prepare_early && plan.built_signal.is_some();
    let launch = match setup(plan, &mut marks, early) {
        Ok(l) => l,
        Err(e) => {
            send(plan.report, &fail_msg(e));
            sys::exit_now(1);
        }
    };
    // A pooled sandbox gets its command before the gate has passed: the
    // command's side is prepared meanwhile and execs only on the go byte.
    match launch {
        _ if early => supervise(plan, plan.spec, Start::LaunchThenGo, marks),
        Some(l) => {
            let mut spec = plan.spec.clone();
            l.apply_to(&mut spec);
            supervise(plan, &spec, Start::AfterGo, marks)
        }
        None => supervise(plan, plan.spec, Start::Now, marks),
    }
}

fn layer(layer: Layer, what: &str, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Layer {
        layer,
        detail: format!("{what}: {e}"),
    }
}

/// Builds the sandbox, then waits for the helper's go: a plain go byte, or a
/// [`Launch`] frame for a pooled sandbox (returned). With `early`, nothing is
/// read here: the command's side reads the launch.
fn setup(plan: &InitPlan, marks: &mut Marks, early: bool) -> Result<Option<Launch>, SandboxError> {
    let spec = plan.spec;
    // First, so that everything init allocates and every process of the
    // sandbox is counted against the run's limits.
    if let Some(join) = plan.cgroup_join {
        join.join_self()?;
        marks.mark("in its cgroup");
    }
    namespaces::set_hostname("airlock")?;
    let isolated = !matches!(spec.network, NetworkSpec::Open);
    if let Some(ns) = plan.net_ns {
        sys::setns(ns.as_raw_fd(), libc::CLONE_NEWNET)
            .map_err(|e| layer(Layer::Network, "setns(net)", e))?;
    }
    if isolated {
        namespaces::loopback_up()?;
    }
    let idmaps = |p: &Path| -> Option<RawFd> {
        let (uid, _) = crate::sys::owner(p)?;
        plan.idmaps
            .iter()
            .find(|(u, _)| *u == uid)
            .map(|(_, fd)| fd.as_raw_fd())
    };
    let view = ViewPlan {
        spec,
        ops: plan.view,
        idmaps: &idmaps,
        upper_fs: plan.upper_fs,
        prepared: plan.prepared,
        rootless: plan.rootless,
    };
    // Nothing forks before the helper's go: where the helper moves init into
    // its cgroup (a fallback), it says go once that is done.
    mounts::build(&view)?;
    marks.mark("view built");
    // Only the pool's bookkeeping depends on it: a pool that is gone shows on
    // the go pipe next. Early, the command's side says it, once it is ready.
    if let Some(fd) = plan.built_signal.filter(|_| !early) {
        let _ = sys::write_all(fd, &[protocol::PREPARED]);
        sys::close(fd);
    }
    let mut b = [0u8; 1];
    let launch = if early {
        None
    } else {
        if !matches!(sys::read(plan.go, &mut b), Ok(1)) {
            sys::exit_now(1);
        }
        marks.mark("go received");
        match b[0] {
            CONTROL_LAUNCH => Some(
                Launch::read_after_tag(plan.go)
                    .map_err(|e| layer(Layer::Helper, "pooled launch", e))?,
            ),
            _ => None,
        }
    };
    sys::unshare(libc::CLONE_NEWCGROUP)
        .map_err(|e| layer(Layer::Namespaces, "unshare(CLONE_NEWCGROUP)", e))?;
    namespaces::enter_user_ns(plan.sandbox_userns, !plan.rootless)?;
    // Credentials changed: the kernel cleared the parent-death signal.
    sys::set_pdeathsig(libc::SIGKILL)
        .map_err(|e| layer(Layer::Namespaces, "PR_SET_PDEATHSIG", e))?;
    // (A pooled sandbox's next byte is its go, read by the command's side.)
    if launch.is_none() && !early {
        if let Ok(r) = sys::poll(&[plan.go], 0) {
            if r[0] & (libc::POLLHUP | libc::POLLIN) != 0
                && sys::read(plan.go, &mut b).unwrap_or(0) == 0
            {
                sys::exit_now(1);
            }
        }
    }
    caps::set_no_new_privs()?;
    caps::drop_all_capabilities()?;
    marks.mark("user namespace entered, capabilities dropped");
    Ok(launch)
}

/// Tell PID 1 which layer failed (`layer\0detail` on the error pipe) and exit
/// without running anything.
fn report_exec_failure(err_w: RawFd, e: SandboxError) -> ! {
    let (l, d) = match e {
        SandboxError::Layer { layer, detail } => (layer, detail),
        other => (Layer::Exec, other.to_string()),
    };
    let _ = sys::write_all(err_w, format!("{l}\0{d}").as_bytes());
    sys::exit_now(126)
}

/// Where the command's side keeps the go pipe while it waits for its go.
const GO_FD: RawFd = 4;

/// Where an early-prepared command's side keeps the pool's "prepared" pipe
/// until it is ready for its launch.
const PREPARED_FD: RawFd = GO_FD + 1;

/// What the command's side of an early-prepared sandbox writes on the error
/// pipe when the pool closed its launch pipe without a launch (the sandbox
/// was dropped): init then leaves without a report, as a sandbox that never
/// ran anything.
const ABANDONED: &str = "abandoned";

/// How long the init of a pooled (warm) sandbox stays after its last report
/// before it exits. Its exit starts the sandbox's teardown (its mount and
/// network namespaces, then the helper's cgroup and run directory), and that
/// kernel work, while the server still writes the run's execution record and
/// answers, made the warm path's median 0.2-0.7 ms slower here
/// (bench/results/warm-teardown-2026-12-05.txt). Nothing of the command is
/// left by then: init has killed and reaped every other process. A cold run's
/// caller waits for the teardown, so there the delay would only add time.
const POOLED_TEARDOWN_DELAY: Duration = Duration::from_millis(3);

/// The command's side of the fork: privileges, limits, walls, exec, in the
/// order `start` sets (see [`Start`]). An early-prepared one reads its launch
/// before the limits that depend on it and before landlock and seccomp close
/// the process down; every other step is done while it waits in the pool.
fn exec_command(
    plan: &InitPlan,
    template: &SandboxSpec,
    err_w: RawFd,
    sigmask: &libc::sigset_t,
    start: Start,
) -> ! {
    let report = |e: SandboxError| -> ! { report_exec_failure(err_w, e) };
    // SAFETY: restoring the mask and default dispositions before exec; the
    // pointers are to a live sigset_t.
    unsafe {
        libc::sigprocmask(libc::SIG_SETMASK, sigmask, std::ptr::null_mut());
        for sig in 1..32 {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
    }
    // SAFETY: setsid takes no arguments.
    if unsafe { libc::setsid() } < 0 {
        report(layer(
            Layer::Session,
            "setsid",
            std::io::Error::last_os_error(),
        ));
    }
    if let Err(e) = rlimits::apply_stand_ins(&plan.stand_ins) {
        report(e);
    }
    let waits_for_go = start != Start::Now;
    // Only 0-2 and the error pipe survive (the pipe closes itself at exec).
    // SAFETY: dup3 takes integers only.
    if unsafe { libc::dup3(err_w, 3, libc::O_CLOEXEC) } < 0 {
        report(layer(
            Layer::Privileges,
            "dup3 error pipe",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: dup3 takes integers only.
    if waits_for_go && unsafe { libc::dup3(plan.go, GO_FD, libc::O_CLOEXEC) } < 0 {
        report(layer(
            Layer::Helper,
            "dup3 go pipe",
            std::io::Error::last_os_error(),
        ));
    }
    let early = start == Start::LaunchThenGo;
    if let Some(fd) = plan.built_signal.filter(|_| early) {
        // SAFETY: dup3 takes integers only.
        if unsafe { libc::dup3(fd, PREPARED_FD, libc::O_CLOEXEC) } < 0 {
            report(layer(
                Layer::Helper,
                "dup3 prepared pipe",
                std::io::Error::last_os_error(),
            ));
        }
    }
    sys::close_from(match start {
        Start::LaunchThenGo => PREPARED_FD as u32 + 1,
        Start::AfterGo => GO_FD as u32 + 1,
        Start::Now => GO_FD as u32,
    });
    reopen_dev_null_stdio();
    let err_w = 3;
    let report = |e: SandboxError| -> ! { report_exec_failure(err_w, e) };
    // The landlock rules: each path opened now, enforced last.
    let landlock = landlock::prepare(&plan.landlock).unwrap_or_else(|e| report(e));
    // An early-prepared sandbox waits here, in the pool, for its command.
    let launched;
    let spec = if early {
        // (`early` is a pooled sandbox's, which has the pipe.)
        let _ = sys::write_all(PREPARED_FD, &[protocol::PREPARED]);
        sys::close(PREPARED_FD);
        let mut b = [0u8; 1];
        if !matches!(sys::read(GO_FD, &mut b), Ok(1)) || b[0] != CONTROL_LAUNCH {
            let _ = sys::write_all(err_w, format!("{ABANDONED}\0").as_bytes());
            sys::exit_now(1);
        }
        let launch = Launch::read_after_tag(GO_FD)
            .unwrap_or_else(|e| report(layer(Layer::Helper, "pooled launch", e)));
        let mut s = template.clone();
        launch.apply_to(&mut s);
        launched = s;
        &launched
    } else {
        template
    };
    if spec.argv.is_empty() {
        report(layer(Layer::Exec, "argv", "no program to run"));
    }
    // A pooled sandbox learns its run's CPU time limit with the launch.
    if let Err(e) = rlimits::apply(&plan.rlimits.with_cpu_time_of(&spec.limits)) {
        report(e);
    }
    let cwd = match sys::cpath(&spec.cwd) {
        Ok(c) => c,
        Err(e) => report(layer(Layer::Exec, "cwd", e)),
    };
    // SAFETY: cwd is a live C string.
    if unsafe { libc::chdir(cwd.as_ptr()) } < 0 {
        report(layer(
            Layer::Exec,
            &format!("chdir {}", spec.cwd.display()),
            std::io::Error::last_os_error(),
        ));
    }
    // A pooled sandbox (the one that waits for its go here) always has a
    // stdin pipe; a launch without stdin gets /dev/null, as a cold run does.
    if waits_for_go && spec.stdin.is_none() {
        let null = sys::open(Path::new("/dev/null"), libc::O_RDONLY, 0)
            .unwrap_or_else(|e| report(layer(Layer::Exec, "open /dev/null for stdin", e)));
        if let Err(e) = sys::dup_to(null.as_raw_fd(), 0) {
            report(layer(Layer::Exec, "stdin from /dev/null", e));
        }
    }
    let argv: Vec<CString> = match spec
        .argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect()
    {
        Ok(v) => v,
        Err(e) => report(layer(Layer::Exec, "argv", e)),
    };
    let mut env = spec.env.clone();
    if let NetworkSpec::Proxy { .. } = spec.network {
        for (k, v) in relay::proxy_env(relay::HTTP_PORT, relay::SOCKS_PORT) {
            env.retain(|(n, _)| *n != k);
            env.push((k, v));
        }
    }
    let envp: Vec<CString> = env
        .iter()
        .filter_map(|(k, v)| CString::new(format!("{k}={v}")).ok())
        .collect();
    let candidates = program_candidates(&spec.argv[0], &spec.env);
    if let Err(e) = landlock.restrict_self() {
        report(e);
    }
    if let Err(e) = seccomp::install(plan.seccomp) {
        report(e);
    }
    let mut argv_p: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_p.push(std::ptr::null());
    let mut envp_p: Vec<*const libc::c_char> = envp.iter().map(|a| a.as_ptr()).collect();
    envp_p.push(std::ptr::null());
    if waits_for_go {
        let mut b = [0u8; 1];
        if !matches!(sys::read(GO_FD, &mut b), Ok(1)) || b[0] != b'g' {
            report(SandboxError::Layer {
                layer: Layer::Helper,
                detail: "the command was not started: its decision record was not made durable, or the caller went away".into(),
            });
        }
        // SAFETY: closing the go pipe's copy made above; nothing else uses it.
        unsafe { libc::close(GO_FD) };
    }
    let mut last_err = libc::ENOENT;
    for prog in &candidates {
        // SAFETY: prog, argv_p and envp_p are NULL-terminated arrays of live C strings.
        unsafe { libc::execve(prog.as_ptr(), argv_p.as_ptr(), envp_p.as_ptr()) };
        let e = sys::last_errno();
        if e != libc::ENOENT && e != libc::ENOTDIR {
            last_err = e;
        }
    }
    let msg = if last_err == libc::ENOENT {
        format!("airlock: {}: command not found\n", spec.argv[0])
    } else {
        format!(
            "airlock: {}: {}\n",
            spec.argv[0],
            std::io::Error::from_raw_os_error(last_err)
        )
    };
    let _ = sys::write_all(2, msg.as_bytes());
    sys::exit_now(if last_err == libc::ENOENT { 127 } else { 126 })
}

/// A stdio fd that is the host's /dev/null (the caller's default stdin) is
/// swapped for the sandbox's own: same device, but reopening the host's
/// through /proc/self/fd (`cat /dev/stdin`) lies outside landlock's view.
fn reopen_dev_null_stdio() {
    for fd in 0..3 {
        // SAFETY: st is plain data that fstat fills before it is read.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat on fds 0-2 with a live out pointer.
        let is_null = unsafe { libc::fstat(fd, &mut st) } == 0
            && st.st_mode & libc::S_IFMT == libc::S_IFCHR
            && st.st_rdev == libc::makedev(1, 3);
        if is_null {
            if let Ok(null) = sys::open(Path::new("/dev/null"), libc::O_RDWR, 0) {
                let _ = sys::dup_to(null.as_raw_fd(), fd);
            }
        }
    }
}

/// argv[0] as given if it has a '/', else each PATH entry joined with it.
fn program_candidates(prog: &str, env: &[(String, String)]) -> Vec<CString> {
    if prog.contains('/') {
        return CString::new(prog).into_iter().collect();
    }
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str())
        .unwrap_or("/usr/local/bin:/usr/bin:/bin");
    path.split(':')
        .filter(|d| !d.is_empty())
        .filter_map(|d| CString::new(format!("{d}/{prog}")).ok())
        .collect()
}

fn supervise(plan: &InitPlan, spec: &SandboxSpec, start: Start, mut marks: Marks) -> ! {
    // Block the signals we handle; they are read from a signalfd.
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: set and old are live sigset_t values.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        for s in FORWARDED {
            libc::sigaddset(&mut set, *s);
        }
        libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old);
    }
    // SAFETY: set is a live sigset_t.
    let sfd = unsafe { libc::signalfd(-1, &set, libc::SFD_CLOEXEC) };
    if sfd < 0 {
        send(
            plan.report,
            &fail_msg(layer(
                Layer::Helper,
                "signalfd",
                std::io::Error::last_os_error(),
            )),
        );
        sys::exit_now(1);
    }
    let (err_r, err_w) = match sys::pipe() {
        Ok(p) => p,
        Err(e) => {
            send(plan.report, &fail_msg(layer(Layer::Helper, "pipe", e)));
            sys::exit_now(1);
        }
    };
    // Proxy mode: the relay listens before the command exists (so its first
    // connect finds it) and netwatch's filter is installed while PID 1 is still
    // single-threaded, so that the command inherits it.
    let proxy = match spec.network {
        NetworkSpec::Proxy { .. } => {
            let relay = match relay::Relay::bind_standard(Path::new(relay::SOCKET_IN_SANDBOX)) {
                Ok(r) => r,
                Err(e) => {
                    send(
                        plan.report,
                        &fail_msg(layer(Layer::Network, "relay bind", e)),
                    );
                    sys::exit_now(1);
                }
            };
            let watch = match netwatch::install() {
                Ok(fd) => fd,
                Err(e) => {
                    send(plan.report, &fail_msg(e.into()));
                    sys::exit_now(1);
                }
            };
            Some((relay, watch))
        }
        _ => None,
    };
    marks.mark("forking the command");
    // Sharing init's memory until its exec: no page-table copy, no address
    // space torn down by the exec (the command's setup allocates in init's
    // heap, which init, suspended meanwhile, keeps).
    let (err_r_fd, err_w_fd) = (err_r.as_raw_fd(), err_w.as_raw_fd());
    let mut command = || -> std::convert::Infallible {
        // SAFETY: closes this child's copy of the pipe's read end (its fd
        // table is its own: no CLONE_FILES).
        unsafe { libc::close(err_r_fd) };
        exec_command(plan, spec, err_w_fd, &old, start)
    };
    let child = match sys::spawn_sharing_memory(&mut command) {
        Ok(pid) => pid,
        Err(e) => {
            send(plan.report, &fail_msg(layer(Layer::Helper, "fork", e)));
            sys::exit_now(1);
        }
    };
    drop(err_w);
    let err = sys::read_to_end(err_r.as_raw_fd()).unwrap_or_default();
    drop(err_r);
    if !err.is_empty() {
        let text = String::from_utf8_lossy(&err);
        let (l, d) = text.split_once('\0').unwrap_or(("exec", &text));
        let _ = sys::waitpid(child, 0);
        if l == ABANDONED {
            // The pool dropped this sandbox before any launch: nothing ran.
            sys::exit_now(1);
        }
        let failed = match Layer::from_name(l) {
            Some(layer) => InitMsg::Failed {
                layer,
                detail: d.into(),
            },
            None => InitMsg::Failed {
                layer: Layer::Helper,
                detail: format!("the command's side named an unknown layer `{l}`: {d}"),
            },
        };
        send(plan.report, &failed);
        sys::exit_now(1);
    }
    let mut supervisor = None;
    if let Some((relay, watch)) = proxy {
        let pass = relay.local_addrs().unwrap_or_default();
        let started = relay
            .start()
            .map_err(|e| layer(Layer::Network, "relay start", e))
            .and_then(|()| {
                netwatch::Supervisor::spawn(
                    watch,
                    netwatch::WatchRules {
                        pass,
                        pass_loopback: false,
                    },
                )
                .map_err(SandboxError::from)
            });
        match started {
            Ok(s) => supervisor = Some(s),
            Err(e) => {
                sys::kill(child, libc::SIGKILL);
                let _ = sys::waitpid(child, 0);
                send(plan.report, &fail_msg(e));
                sys::exit_now(1);
            }
        }
    }
    marks.mark("command exec'd");
    send(
        plan.report,
        &InitMsg::Started {
            timings: marks.steps,
        },
    );
    // Init keeps no end of the command's stdio pipes.
    sys::stdio_to_devnull();
    let mut info = [0u8; std::mem::size_of::<libc::signalfd_siginfo>()];
    loop {
        let n = sys::read(sfd, &mut info).unwrap_or(0);
        if n < info.len() {
            continue;
        }
        // SAFETY: the kernel filled a whole signalfd_siginfo; read it unaligned.
        let si: libc::signalfd_siginfo = unsafe { std::ptr::read_unaligned(info.as_ptr().cast()) };
        let sig = si.ssi_signo as libc::c_int;
        if sig != libc::SIGCHLD {
            sys::kill(child, sig);
            continue;
        }
        while let Ok((pid, status)) = sys::waitpid(-1, libc::WNOHANG) {
            if pid <= 0 {
                break;
            }
            if pid == child {
                let (code, signal) = decode(status);
                // Whatever the command left behind dies with it.
                sys::kill(-1, libc::SIGKILL);
                while let Ok((p, _)) = sys::waitpid(-1, 0) {
                    if p <= 0 {
                        break;
                    }
                }
                let violations = supervisor.take().map(|s| s.stop()).unwrap_or_default();
                send(
                    plan.report,
                    &InitMsg::Exited {
                        code,
                        signal,
                        violations,
                    },
                );
                if start != Start::Now {
                    std::thread::sleep(POOLED_TEARDOWN_DELAY);
                }
                sys::exit_now(0);
            }
        }
    }
}

pub fn decode(status: libc::c_int) -> (Option<i32>, Option<i32>) {
    if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else if libc::WIFSIGNALED(status) {
        (None, Some(libc::WTERMSIG(status)))
    } else {
        (None, None)
    }
}

/// The landlock rules for a spec: the same view as the mounts.
pub fn landlock_rules(spec: &SandboxSpec) -> FsRules {
    let mut read_only: Vec<PathBuf> = [
        "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    let mut read_write: Vec<PathBuf> = ["/tmp", crate::SANDBOX_HOME, "/dev", "/proc"]
        .iter()
        .map(PathBuf::from)
        .collect();
    read_only.extend(spec.read_paths.iter().cloned());
    read_write.extend(spec.write_paths.iter().cloned());
    match spec.workspace.mode {
        WorkspaceMode::Ro => read_only.push(spec.workspace.root.clone()),
        WorkspaceMode::Rw | WorkspaceMode::Overlay => read_write.push(spec.workspace.root.clone()),
    }
    if let NetworkSpec::Proxy { .. } = spec.network {
        read_write.push(PathBuf::from("/run/airlock"));
    }
    // Only paths that are absolute and exist on the host side are kept: landlock
    // skips missing paths itself, this only avoids non-absolute input.
    read_only.retain(|p| p.is_absolute());
    read_write.retain(|p| p.is_absolute());
    FsRules {
        read_only,
        read_write,
    }
}
