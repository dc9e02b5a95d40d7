//! What crosses the pipes between the caller, the helper and the sandbox's init.
//!
//! Caller -> helper: one [`HelperRequest`] as JSON on fd [`FD_REQUEST`], then EOF.
//! Caller -> helper: control bytes on fd [`FD_CONTROL`]; EOF means the caller is
//! gone and everything must die.
//! Helper -> caller: one [`HelperReport`] as JSON on fd [`FD_REPORT`], then EOF.
//! Init -> helper: [`InitMsg`] lines of JSON.
//! Pool <-> init of a pooled sandbox: the launch and go on [`FD_GO`]'s pipe,
//! and [`PREPARED`] back on [`FD_PREPARED`]'s.

use crate::{FileChange, KillReason, Layer, SandboxSpec, Violation};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The hidden first argument that turns the airlock binary into the helper.
pub const HELPER_ARG: &str = "__sandbox-helper";

/// The only variables a helper's environment holds, when the caller has them:
/// debug builds' test switches. Release builds give it none.
#[cfg(debug_assertions)]
pub const HELPER_ENV: &[&str] = &[
    crate::workspace::RETURN_PATH_OFF,
    super::cgroup_glue::CGROUP_ATTACH_LATE,
];
#[cfg(not(debug_assertions))]
pub const HELPER_ENV: &[&str] = &[];

pub const FD_REQUEST: i32 = 3;
pub const FD_REPORT: i32 = 4;
pub const FD_CONTROL: i32 = 5;
/// Pooled helpers only: the read end of the sandbox init's go pipe, whose
/// write end the pool keeps. The pool sends the launch and the go to init
/// itself, so that no wake-up of the helper lies between the gate's yes and
/// the command's exec; the helper gets the same bytes on its control pipe.
pub const FD_GO: i32 = 6;
/// Pooled helpers only: the write end of the pipe on which the sandbox's init
/// says [`PREPARED`] once its view is built and it waits for a launch; the
/// pool keeps the read end. A warm sandbox counts as ready only then: until
/// that byte, a run that takes it waits for the rest of its build.
pub const FD_PREPARED: i32 = 7;

/// Init -> pool, on [`FD_PREPARED`]: the sandbox is built.
pub const PREPARED: u8 = b'p';

/// Control byte: the output cap was exceeded; kill with reason `output`.
pub const CONTROL_KILL_OUTPUT: u8 = b'o';
/// Control byte: the caller stopped waiting (a server's client went away);
/// kill with reason `cancelled`.
pub const CONTROL_KILL_CANCELLED: u8 = b'c';
/// Asks a helper, on its control pipe `ctl`, to kill its run for `reason`:
/// the output cap, or a caller that stopped waiting (a helper that is gone
/// already needs no telling).
pub fn send_kill(ctl: &impl std::os::fd::AsRawFd, reason: KillReason) {
    let byte = match reason {
        KillReason::Cancelled => CONTROL_KILL_CANCELLED,
        _ => CONTROL_KILL_OUTPUT,
    };
    let _ = crate::sys::write_all(ctl.as_raw_fd(), &[byte]);
}

/// Control byte: the command may start (only with [`HelperRequest::gated`]).
pub const CONTROL_GO: u8 = b'g';
/// Control byte: a [`Launch`] frame follows and the command may start with it
/// (only with [`HelperRequest::pooled`]).
pub const CONTROL_LAUNCH: u8 = b'l';

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HelperRequest {
    pub spec: SandboxSpec,
    /// Directory holding one subdirectory per run (upper layers, lock files).
    pub runs_dir: PathBuf,
    /// Rootless mode only: the caller's private runtime directory for airlock
    /// (`$XDG_RUNTIME_DIR/airlock`, else beside the runs directory), which
    /// holds the shared mount points instead of `/run/airlock/mnt`.
    #[serde(default)]
    pub runtime_dir: Option<PathBuf>,
    /// The command starts only after [`CONTROL_GO`] arrives on the control
    /// pipe (the caller's audit record is durable by then); the sandbox is
    /// built meanwhile.
    #[serde(default)]
    pub gated: bool,
    /// A warm sandbox of `airlock serve`'s pool: built for a template spec
    /// (no argv, cwd, env or kept-set place yet), then waiting, blocked in a
    /// read, for one [`CONTROL_LAUNCH`] frame that brings them, then for
    /// [`CONTROL_GO`]: the command is prepared between the two and execs only
    /// after the go. Implies `gated`.
    #[serde(default)]
    pub pooled: bool,
    /// The caller's CLOCK_MONOTONIC ([`crate::sys::monotonic_ns`]) just before
    /// it spawned the helper: the profile's times count from there, so the
    /// helper's own start (fork, exec, dynamic loading) shows as a step.
    #[serde(default)]
    pub caller_clock_ns: u64,
    /// The command reads no stdin: the helper points its own fd 0 at
    /// /dev/null first (a preforked helper was given a pipe, not knowing yet).
    #[serde(default)]
    pub stdin_null: bool,
    /// Remove what crashed runs left (run directories, cgroups) around this
    /// one. A one-shot caller asks every time; a server, which builds
    /// sandboxes back to back, at most every [`STALE_SWEEP_EVERY`]: the scans
    /// list directories that its own warm sandboxes keep non-empty.
    #[serde(default = "yes")]
    pub sweep_stale: bool,
}

/// How often a caller that builds many sandboxes has a helper sweep for
/// crashed runs' leftovers ([`HelperRequest::sweep_stale`]).
pub const STALE_SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

fn yes() -> bool {
    true
}

/// What a request adds to the template a pooled sandbox was built for: read
/// only when the command starts (exec, chdir, its rlimits, the helper's
/// timers) or after it ended (keep), never while the view is built, so a
/// sandbox built without them is the one a cold run would have built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Launch {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub keep: Option<PathBuf>,
    /// Where a long change set's full list goes ([`crate::WorkspaceSpec::list`]).
    #[serde(default)]
    pub list: Option<PathBuf>,
    /// The run's wall-clock limit: a request may lower its policy's
    /// (`timeout_s`, `airlock run --server --timeout`), and a warm sandbox
    /// built for one request's limit must serve the next one's.
    pub timeout_ms: u64,
    /// The run's CPU time limit (tree-wide, and RLIMIT_CPU per process),
    /// lowered with the timeout.
    pub cpu_time_ms: u64,
    /// Whether the command reads the bytes its request brings, on the stdin
    /// pipe every pooled sandbox has. If not, init points the command's fd 0
    /// at the sandbox's `/dev/null`, as a cold run without stdin has it.
    pub stdin: bool,
}

/// The time limits a template carries in place of a request's (see
/// [`Launch::template_of`]); no pooled sandbox runs under them, because every
/// launch brings its own and a launch without them is refused.
pub const TEMPLATE_TIME_LIMIT_MS: u64 = u32::MAX as u64;

/// Frames bigger than this are refused (an argv and environment of this size
/// would not pass `execve` anyway).
pub const LAUNCH_MAX_BYTES: usize = 8 << 20;

impl Launch {
    /// The per-request part of `spec`.
    pub fn of(spec: &SandboxSpec) -> Launch {
        Launch {
            argv: spec.argv.clone(),
            cwd: spec.cwd.clone(),
            env: spec.env.clone(),
            keep: spec.workspace.keep.clone(),
            list: spec.workspace.list.clone(),
            timeout_ms: spec.limits.timeout_ms,
            cpu_time_ms: spec.limits.cpu_time_ms,
            stdin: spec.stdin.is_some(),
        }
    }

    /// `spec` without its per-request part: what a pooled sandbox is built
    /// for, and what a request must match to take one.
    pub fn template_of(spec: &SandboxSpec) -> SandboxSpec {
        let mut t = spec.clone();
        t.request_id = String::new();
        t.argv = Vec::new();
        t.cwd = PathBuf::new();
        t.env = Vec::new();
        t.workspace.keep = None;
        t.workspace.list = None;
        t.limits.timeout_ms = TEMPLATE_TIME_LIMIT_MS;
        t.limits.cpu_time_ms = TEMPLATE_TIME_LIMIT_MS;
        // Every pooled sandbox is built with a stdin pipe; whether its
        // command reads it or /dev/null comes with the launch. So requests
        // with and without stdin take the same warm sandboxes.
        t.stdin = Some(Vec::new());
        t
    }

    pub fn apply_to(&self, spec: &mut SandboxSpec) {
        spec.argv = self.argv.clone();
        spec.cwd = self.cwd.clone();
        spec.env = self.env.clone();
        spec.workspace.keep = self.keep.clone();
        spec.workspace.list = self.list.clone();
        spec.limits.timeout_ms = self.timeout_ms;
        spec.limits.cpu_time_ms = self.cpu_time_ms;
        spec.stdin = self.stdin.then(Vec::new);
    }

    /// What a sandbox must refuse before it runs the command: a launch
    /// without time limits would run under the template's placeholders.
    pub fn check(&self) -> Result<(), String> {
        if self.timeout_ms == 0 || self.cpu_time_ms == 0 {
            return Err(
                "a launch without its time limits (timeout and CPU time) is refused".into(),
            );
        }
        Ok(())
    }

    /// `tag`, the JSON's length (u32, little endian), the JSON.
    pub fn frame(&self, tag: u8) -> Vec<u8> {
        let json = serde_json::to_vec(self).unwrap_or_default();
        let mut out = Vec::with_capacity(json.len() + 5);
        out.push(tag);
        out.extend_from_slice(&(json.len() as u32).to_le_bytes());
        out.extend_from_slice(&json);
        out
    }

    /// Reads the rest of a frame whose tag was already read from `fd`.
    pub fn read_after_tag(fd: i32) -> Result<Launch, String> {
        let mut len = [0u8; 4];
        crate::sys::read_exact(fd, &mut len).map_err(|e| format!("reading the launch: {e}"))?;
        let len = u32::from_le_bytes(len) as usize;
        if len > LAUNCH_MAX_BYTES {
            return Err(format!(
                "launch of {len} bytes refused (at most {LAUNCH_MAX_BYTES})"
            ));
        }
        let mut json = vec![0u8; len];
        crate::sys::read_exact(fd, &mut json).map_err(|e| format!("reading the launch: {e}"))?;
        let launch: Launch =
            serde_json::from_slice(&json).map_err(|e| format!("bad launch: {e}"))?;
        launch.check()?;
        Ok(launch)
    }
}

/// A layer that failed, by name, with the kernel's words.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LayerFailure {
    pub layer: Layer,
    pub detail: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HelperReport {
    /// Set when the sandbox could not be built: nothing ran.
    pub failure: Option<LayerFailure>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub killed_by: Option<KillReason>,
    pub duration_ms: u64,
    pub cpu_ms: u64,
    pub peak_memory_bytes: u64,
    pub changes: Vec<FileChange>,
    pub applied: bool,
    pub violations: Vec<Violation>,
    #[serde(default)]
    pub change_summary: Option<crate::ChangeSummary>,
    /// Setup time from helper start to the command's exec, for profiling.
    pub setup_us: u64,
    /// Microseconds since helper start at each step, for profiling the setup path.
    #[serde(default)]
    pub timings: Vec<(String, u64)>,
    /// Non-fatal notes for the caller (cleanup trouble, skipped paths).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum InitMsg {
    /// The command was exec'd.
    Started {
        /// Microseconds since helper start at each of init's setup steps, for
        /// profiling (`AIRLOCK_PROFILE=1`).
        #[serde(default)]
        timings: Vec<(String, u64)>,
    },
    /// Building the sandbox failed; nothing ran.
    Failed { layer: Layer, detail: String },
    /// The command ended (all other processes were killed after it).
    Exited {
        code: Option<i32>,
        signal: Option<i32>,
        /// What PID 1 saw and refused (netwatch in proxy mode).
        #[serde(default)]
        violations: Vec<Violation>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> SandboxSpec {
        crate::capability::tests::spec()
    }

    /// Requests that differ only in their time limits take the same warm
    /// sandboxes, and each gets its own limits back at launch.
    #[test]
    fn time_limits_travel_with_the_launch_not_the_template() {
        let a = spec();
        let mut b = spec();
        b.limits.timeout_ms = 500;
        b.limits.cpu_time_ms = 400;
        assert_eq!(Launch::template_of(&a), Launch::template_of(&b));
        let mut built = Launch::template_of(&a);
        assert_eq!(built.limits.timeout_ms, TEMPLATE_TIME_LIMIT_MS);
        Launch::of(&b).apply_to(&mut built);
        assert_eq!(
            (built.limits.timeout_ms, built.limits.cpu_time_ms),
            (500, 400)
        );
    }

    /// Requests with and without stdin take the same warm sandboxes (each
    /// built with a stdin pipe); the launch says which kind it is.
    #[test]
    fn stdin_travels_with_the_launch_not_the_template() {
        let a = spec();
        let mut b = spec();
        b.stdin = Some(b"data".to_vec());
        assert_eq!(Launch::template_of(&a), Launch::template_of(&b));
        assert_eq!(Launch::template_of(&a).stdin, Some(Vec::new()));
        let mut built = Launch::template_of(&a);
        Launch::of(&a).apply_to(&mut built);
        assert_eq!(built.stdin, None, "no stdin: the command reads /dev/null");
        Launch::of(&b).apply_to(&mut built);
        assert!(built.stdin.is_some());
    }

    /// A launch without time limits would leave the template's placeholders
    /// in force: it is refused as it is read.
    #[test]
    fn a_launch_without_time_limits_is_refused() {
        let (r, w) = crate::sys::pipe().unwrap();
        let mut launch = Launch::of(&spec());
        launch.timeout_ms = 0;
        let frame = launch.frame(CONTROL_LAUNCH);
        crate::sys::write_all(std::os::fd::AsRawFd::as_raw_fd(&w), &frame[1..]).unwrap();
        let err = Launch::read_after_tag(std::os::fd::AsRawFd::as_raw_fd(&r)).unwrap_err();
        assert!(err.contains("without its time limits"), "{err}");
    }
}
