//! The caller's side of the OCI and gVisor backends: choose the runtime,
//! start the helper, stream and cap its output, and turn its report into an
//! [`Outcome`].

use super::helper::{FD_CONTROL, FD_REPORT, FD_STDIN, HELPER_ARG};
use super::runtime::{self, Runtime};
use super::{HelperReport, Privilege, Request};
use crate::factory::OpenOptions;
use crate::native::protocol;
use crate::output::{self, Capture};
use crate::probe::{Probe, RuntimeFound};
use crate::sys;
use crate::Layer;
use crate::{Backend, BackendKind, Outcome, OutputSink, SandboxError, SandboxSpec};
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct OciBackend {
    /// `Oci` (crun, runc, youki) or `Gvisor` (runsc).
    pub kind: BackendKind,
    pub runtime: Runtime,
    pub runtime_exe: PathBuf,
    /// The executable that runs the helper when given [`HELPER_ARG`] first.
    pub helper_exe: PathBuf,
    /// Where per-run directories live (only used to hide the state directory
    /// when it lies inside the workspace).
    pub runs_dir: PathBuf,
    /// Stream this process's own stdin to the command when a spec brings no
    /// bytes of its own; it always reaches the command as a pipe.
    pub stdin_from_caller: bool,
    /// Root mode, or gVisor's rootless mode with its stage directory.
    pub privilege: Privilege,
}

fn io_err(context: &str) -> impl Fn(std::io::Error) -> SandboxError + '_ {
    move |source| SandboxError::Io {
        context: context.to_string(),
        source,
    }
}

impl OciBackend {
    /// The backend of `kind` (`Oci` or `Gvisor`) with the runtime chosen here.
    pub fn open(kind: BackendKind, opts: &OpenOptions) -> Result<OciBackend, SandboxError> {
        let (runtime, runtime_exe) =
            Self::choose(kind, opts).map_err(|detail| SandboxError::Layer {
                layer: Layer::Runtime,
                detail,
            })?;
        // Refused here, naming why, rather than by the helper's first mount.
        let privilege =
            privilege_for(runtime, &opts.runs_dir()).map_err(|detail| SandboxError::Layer {
                layer: Layer::Backend,
                detail,
            })?;
        let exe =
            std::fs::read_link("/proc/self/exe").map_err(io_err("resolving /proc/self/exe"))?;
        Ok(OciBackend {
            kind,
            runtime,
            runtime_exe,
            helper_exe: exe,
            runs_dir: opts.runs_dir(),
            stdin_from_caller: opts.stdin_from_caller,
            privilege,
        })
    }

    fn choose(kind: BackendKind, opts: &OpenOptions) -> Result<(Runtime, PathBuf), String> {
        match kind {
            BackendKind::Gvisor => runtime::choose_gvisor(),
            BackendKind::Oci => runtime::choose_oci(opts.oci_runtime.as_deref()),
            other => Err(format!("{other} is not an OCI backend")),
        }
    }

    /// Whether the backend can run here, and with what.
    pub fn probe(kind: BackendKind, opts: &OpenOptions) -> Probe {
        let (rt, exe) = match Self::choose(kind, opts) {
            Ok(found) => found,
            Err(why) => return Probe::unavailable(kind, why),
        };
        let privilege = match privilege_for(rt, &opts.runs_dir()) {
            Ok(p) => p,
            Err(why) => return Probe::unavailable(kind, why),
        };
        let platform = match rt {
            Runtime::Runsc(g) => Some(g.platform.as_str().to_string()),
            _ => None,
        };
        let found = RuntimeFound {
            name: rt.exe_name().to_string(),
            version: runtime::version(&exe),
            path: Some(exe),
            platform,
        };
        Probe::available(
            kind,
            found,
            super::caps::enforces(kind, privilege.is_rootless()).to_vec(),
        )
    }
}

/// How the helper runs `rt` for this process: as root, root mode; as an
/// ordinary user, gVisor's rootless mode (staged below the caller's runtime
/// directory, as the native backend's rootless mode) and a refusal for the
/// other runtimes.
fn privilege_for(rt: Runtime, runs_dir: &Path) -> Result<Privilege, String> {
    if !crate::native::rootless::is_rootless() {
        return Ok(Privilege::Root);
    }
    if !rt.is_gvisor() {
        return Err(unprivileged_refusal(rt));
    }
    let fallback = runs_dir.parent().unwrap_or(runs_dir).join("run");
    let base = crate::native::rootless::runtime_dir(
        std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .as_deref(),
        &fallback,
    );
    Ok(Privilege::Rootless {
        stage_base: base.join("oci"),
    })
}

/// Why `rt` (crun, runc, youki) cannot run for an ordinary user: the helper
/// shows the workspace to sandbox root (host uid 2000000000) through idmapped
/// mounts and runs the runtime as root. gVisor has a rootless mode instead
/// (runsc runs the Sentry unprivileged), see [`Privilege::Rootless`].
pub fn unprivileged_refusal(rt: Runtime) -> String {
    format!(
        "the {} backend stages the workspace with idmapped mounts and runs {} as root; \
         Hint: run airlock as root, use the gvisor backend (which has a rootless mode) or the \
         native backend (which runs unprivileged)",
        crate::BackendKind::Oci,
        rt.exe_name()
    )
}

impl Backend for OciBackend {
    fn name(&self) -> &'static str {
        self.kind.as_str()
    }

    fn run(&self, spec: &SandboxSpec, sink: &mut dyn OutputSink) -> Result<Outcome, SandboxError> {
        if spec.argv.is_empty() {
            return Err(SandboxError::Spec("argv is empty".into()));
        }
        // gVisor's allowlist mode runs the relay inside the sandbox.
        let relay = match (&spec.network, self.runtime.is_gvisor()) {
            (crate::NetworkSpec::Proxy { .. }, true) => Some(crate::relay::relay_binary()?),
            _ => None,
        };
        let request = Request {
            spec: spec.clone(),
            runs_dir: self.runs_dir.clone(),
            runtime: self.runtime,
            runtime_exe: self.runtime_exe.clone(),
            relay,
            privilege: self.privilege.clone(),
        };
        let bytes = serde_json::to_vec(&request).map_err(|e| SandboxError::Spec(e.to_string()))?;
        let helper = Helper {
            exe: &self.helper_exe,
            arg: HELPER_ARG,
            what: "OCI",
            backend: crate::Layer::Oci,
            stdin_from_caller: self.stdin_from_caller,
        };
        let driven = drive(&helper, &bytes, spec, sink)?;
        if std::env::var_os("AIRLOCK_PROFILE").is_some() {
            for n in &driven.report.notes {
                eprintln!("airlock profile: note: {n}");
            }
            eprintln!(
                "airlock profile: {:>8.2} ms  caller total ({})",
                driven.started.elapsed().as_secs_f64() * 1000.0,
                self.runtime.exe_name()
            );
        }
        Ok(outcome(driven))
    }
}

/// How to start one backend's helper process.
pub(crate) struct Helper<'a> {
    pub exe: &'a Path,
    /// The first argument that makes the binary this helper.
    pub arg: &'a str,
    /// The helper's name in errors ("OCI", "Docker").
    pub what: &'a str,
    /// The layer charged with failures that name none.
    pub backend: crate::Layer,
    pub stdin_from_caller: bool,
}

/// What [`drive`] returns: the helper's report, the captured streams, when
/// the helper started, and what the caller's stdin streamed in.
pub(crate) struct Driven {
    pub report: HelperReport,
    pub out: Capture,
    pub err: Capture,
    pub started: Instant,
    pub stdin: Option<crate::stdin_tap::StreamedStdin>,
}

/// The outcome of a run from the helper's report and the captured output.
pub(crate) fn outcome(driven: Driven) -> Outcome {
    let Driven {
        report,
        out,
        err,
        stdin,
        ..
    } = driven;
    Outcome {
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
        stdin_streamed: stdin,
    }
}

/// Starts `helper` with the request `bytes` on its stdin, relays its output to
/// `sink` (capped at the spec's output limit; the helper is told to kill the
/// command at the cap), and returns its report and the captured streams.
pub(crate) fn drive(
    helper: &Helper,
    bytes: &[u8],
    spec: &SandboxSpec,
    sink: &mut dyn OutputSink,
) -> Result<Driven, SandboxError> {
    // The helper, with an empty environment, the report on fd 3 and the
    // control pipe (its lifeline) on fd 4.
    let (rep_r, rep_w) = sys::pipe().map_err(io_err("pipe"))?;
    let (ctl_r, ctl_w) = sys::pipe().map_err(io_err("pipe"))?;
    let (in_r, in_w) = sys::pipe().map_err(io_err("pipe"))?;
    let passed: [(RawFd, RawFd); 3] = [
        (rep_w.as_raw_fd(), FD_REPORT),
        (ctl_r.as_raw_fd(), FD_CONTROL),
        (in_r.as_raw_fd(), FD_STDIN),
    ];
    let mut cmd = Command::new(helper.exe);
    cmd.arg(helper.arg)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: the closure runs between fork and exec and only calls fcntl
    // and dup2 (async-signal-safe); it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            // Every source is moved above the targets first, so that no
            // dup2 clobbers a source that is itself a target number.
            let mut high = [0 as RawFd; 3];
            for (i, (src, _)) in passed.iter().enumerate() {
                high[i] = sys::cvt(libc::fcntl(*src, libc::F_DUPFD_CLOEXEC, 10))?;
            }
            for (i, (_, target)) in passed.iter().enumerate() {
                sys::cvt(libc::dup2(high[i], *target))?;
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(io_err("spawning the helper"))?;
    drop(rep_w);
    drop(ctl_r);
    drop(in_r);
    // The command's stdin: the spec's bytes, or this process's own stdin,
    // pumped by a thread of its own (EPIPE ends it when the command is done).
    let mut in_w = std::fs::File::from(in_w);
    let mut tap = None;
    match (spec.stdin.clone(), helper.stdin_from_caller) {
        (Some(data), _) => {
            std::thread::spawn(move || {
                let _ = in_w.write_all(&data);
            });
        }
        (None, true) => tap = Some(crate::stdin_tap::pump_own_stdin(in_w)),
        (None, false) => drop(in_w),
    }
    if let Some(mut stdin) = child.stdin.take() {
        if let Err(e) = stdin.write_all(bytes) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(SandboxError::Helper(format!("sending the spec: {e}")));
        }
    }
    let stdout = output::take_pipe(child.stdout.take(), "stdout")?;
    let stderr = output::take_pipe(child.stderr.take(), "stderr")?;

    // Relay output as it comes, capped; collect the report.
    let backstop =
        started + Duration::from_millis(spec.limits.timeout_ms) + Duration::from_secs(90);
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
        helper.what,
        &mut || {
            let _ = child.kill();
            let _ = child.wait();
        },
    )?;
    let (out, err) = (relayed.stdout, relayed.stderr);
    let status = child.wait().map_err(io_err("waiting for the helper"))?;
    drop(ctl_w);
    if std::os::unix::process::ExitStatusExt::signal(&status).is_some() {
        // Killed outright, the helper tore nothing down: the container it
        // ran lives on in its cgroup slot (in the runtime's group below it).
        if let Ok(host) = crate::native::cgroup::CgroupHost::detect() {
            host.empty_stray_slots();
        }
    }
    let report: HelperReport =
        output::parse_report(&relayed.report, helper.what, &format!("exited ({status})"))?;
    if report.failure.is_some() {
        return Err(crate::failure::error(report.failure, helper.backend));
    }
    Ok(Driven {
        report,
        out,
        err,
        started,
        // The helper has exited: the command's side of the pipe is closed.
        stdin: tap.map(|t| t.snapshot()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unprivileged_refusals_name_what_needs_root_and_a_way_out() {
        let c = unprivileged_refusal(Runtime::Crun);
        assert!(
            c.contains("the oci backend") && c.contains("crun as root") && c.contains("Hint:"),
            "{c}"
        );
        assert!(c.contains("gvisor backend"), "{c}");
    }
}
