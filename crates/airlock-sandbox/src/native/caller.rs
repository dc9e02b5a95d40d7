//! The caller's side: spawn the helper, hand it the spec, stream and cap the
//! output, turn the helper's report into an [`Outcome`].
//!
//! The caller may be a multi-threaded server, so it never forks into the
//! sandbox: it spawns the helper (fork+exec via std, with an empty
//! environment) and talks to it over pipes; only a caller that is still
//! single-threaded may have forked one in advance ([`super::prefork`]). Its
//! end of the control pipe is the helper's lifeline: when the caller dies, the helper sees EOF and kills
//! everything (PR_SET_PDEATHSIG would be tied to the spawning thread instead).

use super::forker::Forker;
use super::helper_process::{helper_command, HelperProcess};
use super::prefork::{self, Preforked};
use super::protocol::{self, HelperReport, HelperRequest};
use super::teardowns::Teardowns;
use crate::output;
use crate::sys;
use crate::{Backend, Outcome, OutputSink, SandboxError, SandboxSpec};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The native Linux backend.
#[derive(Debug, Clone)]
pub struct NativeBackend {
    /// The executable that runs [`super::helper_main`] when given
    /// [`protocol::HELPER_ARG`] first (the airlock binary itself).
    pub helper_exe: PathBuf,
    /// Where per-run directories live.
    pub runs_dir: PathBuf,
    /// Stream this process's own stdin to the command when a spec brings no
    /// bytes of its own (`airlock run` with piped input). It always reaches the
    /// command as a pipe, never as the caller's fd: a host file behind fd 0
    /// could otherwise be reopened through `/proc/self/fd/0`.
    pub stdin_from_caller: bool,
    /// The next run's helper, when one was forked in advance
    /// ([`NativeBackend::prefork_helper`]).
    preforked: Arc<prefork::Slot>,
    /// Where helpers come from in a multi-threaded caller that asked for it
    /// ([`NativeBackend::use_forker`]); `None`: each one is spawned.
    forker: Option<Arc<Forker>>,
    /// When a helper of this backend last swept for crashed runs' leftovers.
    last_sweep: Arc<std::sync::Mutex<Option<Instant>>>,
    /// How long past a run's timeout the caller waits for a helper that
    /// stopped working before killing it ([`STUCK_HELPER_GRACE`]).
    stuck_helper_grace: Duration,
}

/// The default of [`NativeBackend::set_stuck_helper_grace`]: the helper
/// enforces the timeout itself, and tears down within this.
pub const STUCK_HELPER_GRACE: Duration = Duration::from_secs(60);

impl NativeBackend {
    pub fn new(helper_exe: PathBuf, runs_dir: PathBuf) -> NativeBackend {
        NativeBackend {
            helper_exe,
            runs_dir,
            stdin_from_caller: false,
            preforked: Arc::default(),
            forker: None,
            last_sweep: Arc::default(),
            stuck_helper_grace: STUCK_HELPER_GRACE,
        }
    }

    /// How long past a run's timeout, counted from when the run was handed
    /// to its sandbox, the caller waits for a helper that stopped responding
    /// before it kills it. Tests shorten it; a server keeps the default.
    pub fn set_stuck_helper_grace(&mut self, grace: Duration) {
        self.stuck_helper_grace = grace;
    }

    /// Whether the next helper should sweep for crashed runs' leftovers: the
    /// first one, then one every [`protocol::STALE_SWEEP_EVERY`].
    fn sweep_due(&self) -> bool {
        let Ok(mut last) = self.last_sweep.lock() else {
            return true;
        };
        let due = last.is_none_or(|t| t.elapsed() >= protocol::STALE_SWEEP_EVERY);
        if due {
            *last = Some(Instant::now());
        }
        due
    }

    /// Helpers are forked by one long-lived forker process instead of
    /// spawned (fork and exec of the airlock binary) per run: for a server,
    /// which builds many sandboxes and cannot fork helpers itself (see
    /// [`super::forker`]). The forker starts with the first helper.
    pub fn use_forker(&mut self) {
        self.forker = Some(Arc::new(Forker::new(self.helper_exe.clone())));
    }

    /// Forks the next run's helper now, while this process is still
    /// single-threaded (a one-shot CLI run), instead of re-executing the
    /// airlock binary when the run starts (see [`super::prefork`]). Does
    /// nothing where that is not safe; the run then spawns one as usual.
    pub fn prefork_helper(&self) {
        if let Some(helper) = prefork::take_early().or_else(prefork::prefork) {
            self.preforked.fill(helper);
        }
    }

    /// The running executable as helper and the default runs directory.
    pub fn current_exe() -> Result<NativeBackend, SandboxError> {
        let exe = std::fs::read_link("/proc/self/exe").map_err(|e| SandboxError::Io {
            context: "resolving /proc/self/exe".into(),
            source: e,
        })?;
        Ok(NativeBackend::new(exe, super::rundir::default_runs_dir()))
    }
}

fn io_err(context: &str) -> impl Fn(std::io::Error) -> SandboxError + '_ {
    move |source| SandboxError::Io {
        context: context.to_string(),
        source,
    }
}

impl Backend for NativeBackend {
    fn name(&self) -> &'static str {
        "native"
    }

    fn run(&self, spec: &SandboxSpec, sink: &mut dyn OutputSink) -> Result<Outcome, SandboxError> {
        self.run_with(spec, sink, None)
    }

    /// The helper builds the sandbox while `gate` runs here; it lets the
    /// command start only once the gate said yes (a control byte).
    fn run_gated(
        &self,
        spec: &SandboxSpec,
        sink: &mut dyn OutputSink,
        gate: &mut dyn FnMut() -> Result<(), SandboxError>,
    ) -> Result<Outcome, SandboxError> {
        self.run_with(spec, sink, Some(gate))
    }
}

impl NativeBackend {
    fn run_with(
        &self,
        spec: &SandboxSpec,
        sink: &mut dyn OutputSink,
        gate: Option<&mut dyn FnMut() -> Result<(), SandboxError>>,
    ) -> Result<Outcome, SandboxError> {
        if spec.argv.is_empty() {
            return Err(SandboxError::Spec("argv is empty".into()));
        }
        let helper = self.spawn(spec, gate.is_some(), false)?;
        if let Some(gate) = gate {
            let t = Instant::now();
            let opened = gate();
            if std::env::var_os("AIRLOCK_PROFILE").is_some() {
                let line = format!(
                    "airlock profile: {:>8.2} ms  caller: gate passed after {:.2} ms of waiting\n",
                    helper.started.elapsed().as_secs_f64() * 1000.0,
                    t.elapsed().as_secs_f64() * 1000.0
                );
                eprint!("{line}"); // one write: stderr is unbuffered
            }
            if let Err(e) = opened {
                // EOF on the control pipe: the helper tears the sandbox down
                // before the command was started, and exits.
                helper.abandon();
                return Err(e);
            }
            let _ = sys::write_all(helper.ctl_w.as_raw_fd(), &[protocol::CONTROL_GO]);
        }
        // A one-shot caller's helper tears down while the caller records and
        // answers; the backend's end waits for it (prefork::Slot).
        let reap = match helper.forked_in_advance {
            true => Reap::Background(&self.preforked.teardowns),
            false => Reap::Here,
        };
        self.drive(helper, spec, sink, reap)
    }

    /// Starts a helper for `spec` and hands it the request. `pooled`: a warm
    /// sandbox for [`super::pool`], built from `spec` as a template.
    pub(crate) fn spawn(
        &self,
        spec: &SandboxSpec,
        gated: bool,
        pooled: bool,
    ) -> Result<Helper, SandboxError> {
        let started = Instant::now();
        let stdin_wanted = spec.stdin.is_some() || self.stdin_from_caller;
        let mut request = HelperRequest {
            spec: spec.clone(),
            runs_dir: self.runs_dir.clone(),
            runtime_dir: self.rootless_runtime_dir(),
            gated,
            pooled,
            caller_clock_ns: sys::monotonic_ns(),
            stdin_null: false,
            sweep_stale: self.sweep_due(),
        };
        let bytes = |r: &HelperRequest| {
            serde_json::to_vec(r).map_err(|e| SandboxError::Spec(e.to_string()))
        };
        // A helper forked in advance took the migration's wait itself, while
        // the caller judged the command (cgroup_glue::prepare_early).
        if let Some(waiting) = self.preforked.take().filter(|_| !pooled) {
            request.stdin_null = !stdin_wanted;
            match hand_over(waiting, &bytes(&request)?, stdin_wanted) {
                Ok((child, ctl_w, rep_r)) => {
                    return Ok(Helper {
                        child,
                        ctl_w,
                        go_w: None,
                        prepared_r: None,
                        rep_r,
                        started,
                        forked_in_advance: true,
                    })
                }
                // It is gone (killed from outside): spawn one as usual.
                Err(_) => request.stdin_null = false,
            }
        }

        let (req_r, req_w) = sys::pipe().map_err(io_err("pipe"))?;
        let (rep_r, rep_w) = sys::pipe().map_err(io_err("pipe"))?;
        let (ctl_r, ctl_w) = sys::pipe().map_err(io_err("pipe"))?;
        let (go, prepared) = if pooled {
            let go = sys::pipe().map_err(io_err("pipe"))?;
            let prepared = sys::pipe().map_err(io_err("pipe"))?;
            (Some(go), Some(prepared))
        } else {
            (None, None)
        };
        // The helper's ends, in the protocol's order from FD_REQUEST on.
        let ends: Vec<&OwnedFd> = [&req_r, &rep_w, &ctl_r]
            .into_iter()
            .chain(go.as_ref().map(|(r, _)| r))
            .chain(prepared.as_ref().map(|(_, w)| w))
            .collect();
        let mut child = match self.fork_helper(stdin_wanted, &ends) {
            Some(child) => child,
            None => self.spawn_helper(stdin_wanted, &ends)?,
        };
        drop(req_r);
        drop(rep_w);
        drop(ctl_r);
        let go_w = go.map(|(_, w)| w);
        let prepared_r = prepared.map(|(r, _)| r);
        // The helper reads the whole request before anything else.
        let wrote = sys::write_all(req_w.as_raw_fd(), &bytes(&request)?);
        drop(req_w);
        if let Err(e) = wrote {
            child.kill();
            let _ = child.wait();
            return Err(SandboxError::Helper(format!("sending the spec: {e}")));
        }
        Ok(Helper {
            child,
            ctl_w,
            go_w,
            prepared_r,
            rep_r,
            started,
            forked_in_advance: false,
        })
    }

    /// A helper from the forker, holding its stdio pipes and `ends` (the
    /// request, report, control and go pipes' ends, in the protocol's
    /// order); `None` without a forker or when it failed (spawn one then).
    fn fork_helper(&self, stdin_wanted: bool, ends: &[&OwnedFd]) -> Option<HelperProcess> {
        let forker = self.forker.as_ref()?;
        let made = (|| {
            let (stdin_r, stdin_w) = if stdin_wanted {
                let (r, w) = sys::pipe()?;
                (r, Some(File::from(w)))
            } else {
                (OwnedFd::from(File::open("/dev/null")?), None)
            };
            let (stdout_r, stdout_w) = sys::pipe()?;
            let (stderr_r, stderr_w) = sys::pipe()?;
            let mut fds = vec![stdin_r.as_fd(), stdout_w.as_fd(), stderr_w.as_fd()];
            fds.extend(ends.iter().map(|fd| fd.as_fd()));
            let pid = forker.fork_helper(&fds)?;
            Ok::<_, std::io::Error>(HelperProcess::forked(pid, stdin_w, stdout_r, stderr_r))
        })();
        match made {
            Ok(child) => Some(child),
            Err(e) => {
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| {
                    eprintln!(
                        "airlock: the sandbox helper forker failed ({e}); \
                         helpers are spawned one by one instead (slower, same isolation)"
                    )
                });
                None
            }
        }
    }

    /// A helper spawned the classic way: fork and exec of the helper binary,
    /// `ends` placed from [`protocol::FD_REQUEST`] on.
    fn spawn_helper(
        &self,
        stdin_wanted: bool,
        ends: &[&OwnedFd],
    ) -> Result<HelperProcess, SandboxError> {
        let passed = (protocol::FD_REQUEST..)
            .zip(ends)
            .map(|(target, fd)| (fd.as_raw_fd(), target))
            .collect();
        let mut cmd = helper_command(&self.helper_exe, protocol::HELPER_ARG, passed);
        cmd.stdin(if stdin_wanted {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let child = cmd.spawn().map_err(io_err("spawning the sandbox helper"))?;
        Ok(HelperProcess::from_child(child))
    }

    /// Rootless mode: the caller's private runtime directory for airlock.
    fn rootless_runtime_dir(&self) -> Option<PathBuf> {
        super::rootless::is_rootless().then(|| {
            let fallback = self.runs_dir.parent().unwrap_or(&self.runs_dir).join("run");
            super::rootless::runtime_dir(
                std::env::var_os("XDG_RUNTIME_DIR")
                    .map(PathBuf::from)
                    .as_deref(),
                &fallback,
            )
        })
    }

    /// Feeds the command's stdin, streams and caps its output, reads the
    /// helper's report and turns it into the outcome.
    pub(crate) fn drive(
        &self,
        helper: Helper,
        spec: &SandboxSpec,
        sink: &mut dyn OutputSink,
        reap: Reap<'_>,
    ) -> Result<Outcome, SandboxError> {
        let Helper {
            mut child,
            ctl_w,
            rep_r,
            started,
            ..
        } = helper;
        let handed = Instant::now();
        let mut tap = None;
        let stdin_thread = match (child.stdin.take(), spec.stdin.clone()) {
            (Some(mut pipe), Some(data)) => Some(std::thread::spawn(move || {
                let _ = pipe.write_all(&data);
            })),
            (Some(pipe), None) if self.stdin_from_caller => {
                tap = Some(crate::stdin_tap::pump_own_stdin(pipe));
                None
            }
            // A pooled sandbox's pipe, for a command that reads /dev/null
            // (its launch said so): closed unused.
            _ => None,
        };
        let stdout = output::take_pipe(child.stdout.take(), "stdout")?;
        let stderr = output::take_pipe(child.stderr.take(), "stderr")?;

        // A backstop if the helper itself wedges: it enforces the timeout, this
        // only catches a helper that stopped working. It counts from now, when
        // the run is handed over (the helper's own setup and timeout clocks
        // start after the go), not from the helper's start: a warm sandbox
        // may have waited in its pool far longer than any timeout.
        let backstop =
            handed + Duration::from_millis(spec.limits.timeout_ms) + self.stuck_helper_grace;
        let pipes = output::Pipes {
            stdout: &stdout,
            stderr: &stderr,
            report: &rep_r,
        };
        let mut tell = |reason| protocol::send_kill(&ctl_w, reason);
        let relayed = output::relay_helper(
            pipes,
            spec.limits.output_bytes,
            backstop,
            sink,
            &mut tell,
            "sandbox",
            &mut || {
                child.kill();
                let _ = child.wait();
            },
        )?;
        let (out, err) = (relayed.stdout, relayed.stderr);
        let ended = match reap {
            Reap::Here => {
                let status = child
                    .wait()
                    .map_err(io_err("waiting for the sandbox helper"))?;
                drop(ctl_w);
                format!("exited ({status})")
            }
            Reap::Background(teardowns) => {
                teardowns.reap(child, ctl_w);
                "closed its report pipe".to_string()
            }
        };
        if let Some(t) = stdin_thread {
            let _ = t.join();
        }
        let report: HelperReport = output::parse_report(&relayed.report, "sandbox", &ended)?;
        if std::env::var_os("AIRLOCK_PROFILE").is_some() {
            // Timed before printing, and printed in one write: stderr is
            // unbuffered, and a write per fragment cost milliseconds that the
            // total then counted as the run's.
            let total_ms = started.elapsed().as_secs_f64() * 1000.0;
            let mut lines = String::new();
            for note in &report.notes {
                lines.push_str(&format!("airlock profile: note: {note}\n"));
            }
            for (what, us) in &report.timings {
                let ms = *us as f64 / 1000.0;
                lines.push_str(&format!("airlock profile: {ms:>8.2} ms  {what}\n"));
            }
            lines.push_str(&format!(
                "airlock profile: {total_ms:>8.2} ms  caller total\n"
            ));
            let _ = std::io::stderr().write_all(lines.as_bytes());
        }
        if let Some(f) = report.failure {
            let failure = Some((f.layer, f.detail));
            return Err(crate::failure::error(failure, crate::Layer::Helper));
        }
        Ok(Outcome {
            exit_code: report.exit_code,
            signal: report.signal,
            killed_by: report.killed_by,
            duration_ms: report.duration_ms,
            cpu_ms: report.cpu_ms,
            peak_memory_bytes: report.peak_memory_bytes,
            stdout: out.text(),
            stderr: err.text(),
            truncated: out.truncated || err.truncated,
            changes: report.changes,
            applied: report.applied,
            violations: report.violations,
            change_summary: report.change_summary,
            // Every process of the sandbox is dead by the report: nothing
            // reads the pipe any more.
            stdin_streamed: tap.map(|t| t.snapshot()),
        })
    }
}

/// Who waits for a helper's exit once its report is complete.
pub(crate) enum Reap<'a> {
    /// The run itself, before it returns: the sandbox's cgroup and run
    /// directory are gone when the outcome is (`airlock run`, cold runs).
    Here,
    /// A thread of its own, counted by `Teardowns`: the outcome returns as
    /// soon as the report is complete (the command and every process of the
    /// sandbox are dead by then) while the helper removes the cgroup and run
    /// directory.
    Background(&'a Teardowns),
}

/// A started helper: its process, the caller's ends of the control and
/// report pipes (stdin, stdout and stderr stay in `child`).
pub(crate) struct Helper {
    pub(crate) child: HelperProcess,
    pub(crate) ctl_w: OwnedFd,
    /// A pooled helper's: the write end of its init's go pipe
    /// ([`protocol::FD_GO`]).
    pub(crate) go_w: Option<OwnedFd>,
    /// A pooled helper's: the read end of its init's prepared pipe
    /// ([`protocol::FD_PREPARED`]).
    pub(crate) prepared_r: Option<OwnedFd>,
    pub(crate) rep_r: OwnedFd,
    pub(crate) started: Instant,
    /// Forked by a one-shot caller ([`super::prefork`]), not spawned.
    pub(crate) forked_in_advance: bool,
}

impl Helper {
    /// Lets the helper go before any command ran: EOF on the control pipe
    /// makes it tear the sandbox down and exit; this waits for that.
    pub(crate) fn abandon(self) {
        let Helper {
            mut child,
            ctl_w,
            go_w,
            ..
        } = self;
        drop(go_w);
        drop(ctl_w);
        drop(child.stdin.take());
        let _ = child.wait();
    }
}

/// Sends a preforked helper its request. Its stdin pipe is closed at once
/// when the command reads none (the request then has it use /dev/null).
fn hand_over(
    waiting: Preforked,
    request: &[u8],
    stdin_wanted: bool,
) -> std::io::Result<(HelperProcess, OwnedFd, OwnedFd)> {
    let Preforked {
        mut process,
        request: req_w,
        report,
        control,
    } = waiting;
    if let Err(e) = sys::write_all(req_w.as_raw_fd(), request) {
        drop(req_w);
        process.kill();
        let _ = process.wait();
        return Err(e);
    }
    if !stdin_wanted {
        process.stdin = None;
    }
    Ok((process, control, report))
}
