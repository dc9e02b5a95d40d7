//! The helper: the `airlock-wasm` binary (the one that embeds wasmtime) run
//! with [`HELPER_ARG`]. It reads the request, one line, on stdin, makes private
//! mount, network, IPC and UTS namespaces, builds the view, forks the guest's
//! process and waits for it (killing it at the timeout if a host call holds
//! it, or when the caller closes stdin: the caller is gone or cancelled the
//! run), then reads the change report from the overlay's upper layer, applies
//! it when asked, tears the view down and writes its report on fd 3.

use super::{guest, scratch, GuestResult, HelperReport, Request};
use crate::Layer;
use crate::{sys, workspace};
use crate::{KillReason, SandboxError, WorkspaceMode};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// First argument that makes `airlock-wasm` the wasm helper.
pub const HELPER_ARG: &str = "__airlock-wasm-helper";
/// First argument that makes `airlock-wasm` compile one module into the
/// cache: `__airlock-wasm-precompile MODULE CWASM SHA256`.
pub const PRECOMPILE_ARG: &str = "__airlock-wasm-precompile";
/// The fd the report is written to.
pub const FD_REPORT: i32 = 3;
/// How long past the timeout a guest stuck in a host call is given before SIGKILL.
const GRACE: Duration = Duration::from_millis(500);

pub fn helper_main() -> ! {
    // One line: stdin stays open after it, as the caller's lifeline.
    let mut line = String::new();
    let read = std::io::BufRead::read_line(&mut std::io::stdin().lock(), &mut line);
    let report = match read {
        Ok(_) => match serde_json::from_str::<Request>(&line) {
            Ok(req) => run(&req),
            Err(e) => HelperReport::failed(Layer::Spec, format!("unreadable request: {e}")),
        },
        Err(e) => HelperReport::failed(Layer::Spec, format!("reading the request: {e}")),
    };
    let bytes = serde_json::to_vec(&report).unwrap_or_default();
    let _ = sys::write_all(FD_REPORT, &bytes);
    sys::exit_now(0)
}

/// Compiles the module named by the arguments after [`PRECOMPILE_ARG`] into
/// the cache; the error, if any, on stderr and exit status 1.
pub fn precompile_main() -> ! {
    let args: Vec<std::path::PathBuf> = std::env::args_os().skip(2).map(Into::into).collect();
    let [module, cwasm, sha256] = args.as_slice() else {
        eprintln!("usage: airlock-wasm {PRECOMPILE_ARG} MODULE CWASM SHA256");
        sys::exit_now(2);
    };
    match super::cache::compile(module, cwasm, &sha256.to_string_lossy()) {
        Ok(()) => sys::exit_now(0),
        Err(e) => {
            eprintln!("{e}");
            sys::exit_now(1)
        }
    }
}

fn run(req: &Request) -> HelperReport {
    // Step 1: namespaces of our own: nothing mounted here is seen outside, and
    // the guest's process starts with no network at all.
    if let Err(e) = sys::unshare(
        libc::CLONE_NEWNS | libc::CLONE_NEWNET | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS,
    ) {
        return HelperReport::failed(Layer::Namespaces, format!("unshare: {e}"));
    }
    // Step 2: the view.
    let view = match scratch::build(&req.spec, &req.runs_dir) {
        Ok(v) => v,
        Err(e) => return HelperReport::from_error(e),
    };
    // Step 3: the guest, in a child process behind its own walls.
    let started = Instant::now();
    let result = run_guest(req, &view);
    let duration_ms = started.elapsed().as_millis() as u64;
    // Step 4: the change report and apply, from the overlay's upper layer.
    let spec = &req.spec;
    let mut report = match result {
        Ok(g) => HelperReport::ran(g, duration_ms),
        Err(e) => {
            scratch::teardown(&view);
            return HelperReport::from_error(e);
        }
    };
    // Nobody waits for a cancelled run's changes, and none is applied.
    let cancelled = report.killed_by == Some(KillReason::Cancelled);
    if let Some(upper) = view.upper.as_ref().filter(|_| !cancelled) {
        let apply = spec.workspace.apply || spec.workspace.mode == WorkspaceMode::Rw;
        let f = workspace::finish(upper, &spec.workspace, &spec.limits, apply);
        report.applied = f.applied;
        report.violations.extend(f.violations);
        report.changes = f.changes;
        report.change_summary = Some(f.summary);
    }
    // Step 5: teardown.
    scratch::teardown(&view);
    report
}

fn run_guest(req: &Request, view: &scratch::View) -> Result<GuestResult, SandboxError> {
    let (r, w) = sys::pipe().map_err(|e| io("pipe", e))?;
    let pid = sys::fork().map_err(|e| io("fork", e))?;
    if pid == 0 {
        drop(r);
        let out = match guest::run(req, view) {
            Ok(g) => Ok(g),
            Err(e) => Err(HelperReport::from_error(e)),
        };
        let bytes = serde_json::to_vec(&out).unwrap_or_default();
        let _ = sys::write_all(w.as_raw_fd(), &bytes);
        sys::exit_now(0);
    }
    drop(w);
    // The guest enforces its own limits; this is the backstop for a guest
    // whose thread is held in a host call (a long sleep, a blocking read).
    let deadline = Instant::now() + Duration::from_millis(req.spec.limits.timeout_ms) + GRACE;
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    let mut killed = None;
    let mut lifeline = true;
    loop {
        let wait = deadline.saturating_duration_since(Instant::now());
        if wait.is_zero() {
            sys::kill(pid, libc::SIGKILL);
            killed = Some(KillReason::Timeout);
            break;
        }
        let fds: &[i32] = if lifeline {
            &[r.as_raw_fd(), 0]
        } else {
            &[r.as_raw_fd()]
        };
        let ready = sys::poll(fds, wait.as_millis().min(1000) as i32).map_err(|e| io("poll", e))?;
        // The lifeline: EOF or an error on stdin means the caller is gone
        // (or cancelled the run).
        if lifeline && ready[1] != 0 {
            match sys::read(0, &mut buf) {
                Ok(0) | Err(_) => {
                    sys::kill(pid, libc::SIGKILL);
                    killed = Some(KillReason::Cancelled);
                    break;
                }
                // Bytes after the request are not part of the protocol: stop
                // watching stdin rather than spin on them.
                Ok(_) => lifeline = false,
            }
        }
        if ready[0] == 0 {
            continue;
        }
        match sys::read(r.as_raw_fd(), &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
        }
    }
    let (_, status) = sys::waitpid(pid, 0).map_err(|e| io("waitpid", e))?;
    if let Some(reason) = killed {
        return Ok(GuestResult::killed(reason));
    }
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        // RLIMIT_CPU behind the watchdog.
        if sig == libc::SIGXCPU {
            return Ok(GuestResult::killed(KillReason::CpuTime));
        }
        let mut g = GuestResult::killed(KillReason::Timeout);
        g.killed_by = None;
        g.signal = Some(sig);
        return Ok(g);
    }
    match serde_json::from_slice::<Result<GuestResult, HelperReport>>(&bytes) {
        Ok(Ok(g)) => Ok(g),
        Ok(Err(failed)) => Err(failed.into_error()),
        Err(e) => Err(SandboxError::Helper(format!(
            "the guest process gave no result ({e})"
        ))),
    }
}

fn io(what: &str, e: std::io::Error) -> SandboxError {
    SandboxError::Io {
        context: what.into(),
        source: e,
    }
}
