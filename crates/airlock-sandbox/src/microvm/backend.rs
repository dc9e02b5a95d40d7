//! The caller's side of the microVM backend: find the guest, start the
//! helper, keep its lifeline open, and turn its report into an [`Outcome`].

use super::guest;
use super::helper::HELPER_ARG;
use super::{HelperReport, Request};
use crate::output;
use crate::Layer;
use crate::{Backend, Outcome, OutputSink, SandboxError, SandboxSpec};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

#[derive(Debug, Clone)]
pub struct MicrovmBackend {
    pub image: guest::Image,
    /// The executable that runs the helper when given [`HELPER_ARG`] first.
    pub helper_exe: PathBuf,
    pub runs_dir: PathBuf,
}

fn io_err(context: &str) -> impl Fn(std::io::Error) -> SandboxError + '_ {
    move |source| SandboxError::Io {
        context: context.to_string(),
        source,
    }
}

impl MicrovmBackend {
    pub fn current_exe(state_dir: &Path) -> Result<MicrovmBackend, SandboxError> {
        let image = Self::probe_image().map_err(|detail| SandboxError::Layer {
            layer: Layer::Microvm,
            detail,
        })?;
        let exe =
            std::fs::read_link("/proc/self/exe").map_err(io_err("resolving /proc/self/exe"))?;
        Ok(MicrovmBackend {
            image,
            helper_exe: exe,
            runs_dir: state_dir.join("runs"),
        })
    }

    fn probe_image() -> Result<guest::Image, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(
                "the microvm backend stages the workspace with idmapped mounts \
                 and starts QEMU as the sandbox uid, which takes root; \
                 Hint: run airlock as root, or use the native backend (which runs unprivileged)"
                    .into(),
            );
        }
        guest::locate()
    }

    /// Whether the backend can run here, and with what.
    pub fn probe() -> Result<String, String> {
        let image = Self::probe_image()?;
        Ok(format!(
            "{} -M microvm, accelerator {} ({}), guest kernel {}",
            image.qemu.display(),
            image.accel.as_str(),
            image.accel_why,
            image.vmlinux.display()
        ))
    }
}

/// The outcome's text for captured bytes, with the marker the other backends
/// put at a cut.
fn text(bytes: &[u8], truncated: bool, cap: u64) -> String {
    let mut s = String::from_utf8_lossy(bytes).into_owned();
    if truncated {
        s.push_str(&format!("\n[airlock: output truncated at {cap} bytes]\n"));
    }
    s
}

/// Reads the helper's report to its end, asking `sink` every
/// [`output::CANCEL_POLL`] whether its reader stopped waiting; the first time
/// it did, `cancel` runs (it closes the helper's lifeline, and the helper
/// kills the VM and reports).
fn read_report(
    mut out: std::process::ChildStdout,
    bytes: &mut Vec<u8>,
    sink: &mut dyn OutputSink,
    mut cancel: impl FnMut(),
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut cancelled = false;
    let mut buf = [0u8; 64 * 1024];
    loop {
        if !cancelled && sink.cancelled() {
            cancelled = true;
            cancel();
        }
        let ready = crate::sys::poll(&[out.as_raw_fd()], output::CANCEL_POLL.as_millis() as i32)?;
        if ready[0] == 0 {
            continue;
        }
        match out.read(&mut buf)? {
            0 => return Ok(()),
            n => bytes.extend_from_slice(&buf[..n]),
        }
    }
}

impl Backend for MicrovmBackend {
    fn name(&self) -> &'static str {
        "microvm"
    }

    fn run(&self, spec: &SandboxSpec, sink: &mut dyn OutputSink) -> Result<Outcome, SandboxError> {
        if spec.argv.is_empty() {
            return Err(SandboxError::Spec("argv is empty".into()));
        }
        let request = Request {
            spec: spec.clone(),
            runs_dir: self.runs_dir.clone(),
            image: self.image.clone(),
        };
        let mut line =
            serde_json::to_vec(&request).map_err(|e| SandboxError::Spec(e.to_string()))?;
        line.push(b'\n');
        let started = Instant::now();
        let mut child = Command::new(&self.helper_exe)
            .arg(HELPER_ARG)
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(io_err("spawning the microVM helper"))?;
        // stdin stays open until the report is read: its EOF tells the helper
        // that the caller is gone, or cancelled the run.
        let mut stdin = child.stdin.take();
        if let Some(w) = stdin.as_mut() {
            if let Err(e) = w.write_all(&line) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(SandboxError::Helper(format!("sending the spec: {e}")));
            }
        }
        let mut report_bytes = Vec::new();
        if let Some(out) = child.stdout.take() {
            read_report(out, &mut report_bytes, sink, || drop(stdin.take()))
                .map_err(io_err("reading the microVM helper's report"))?;
        }
        drop(stdin);
        let status = child
            .wait()
            .map_err(io_err("waiting for the microVM helper"))?;
        let report: HelperReport =
            output::parse_report(&report_bytes, "microVM", &format!("exited ({status})"))?;
        if report.failure.is_some() {
            return Err(report.into_error());
        }
        if !report.stdout.is_empty() {
            sink.stdout(&report.stdout);
        }
        if !report.stderr.is_empty() {
            sink.stderr(&report.stderr);
        }
        if std::env::var_os("AIRLOCK_PROFILE").is_some() {
            for n in &report.notes {
                eprintln!("airlock profile: note: {n}");
            }
            if let Some(b) = report.boot_ms {
                eprintln!("airlock profile: {b:>8} ms  QEMU start to guest init");
            }
            eprintln!(
                "airlock profile: {:>8} ms  QEMU start to exit (boot to power-off)",
                report.vm_ms
            );
            eprintln!(
                "airlock profile: {:>8.2} ms  caller total (microvm)",
                started.elapsed().as_secs_f64() * 1000.0
            );
        }
        let cap = spec.limits.output_bytes;
        Ok(Outcome {
            exit_code: report.exit_code,
            signal: report.signal,
            killed_by: report.killed_by,
            duration_ms: report.duration_ms,
            cpu_ms: report.cpu_ms,
            peak_memory_bytes: report.peak_memory_bytes,
            stdout: text(&report.stdout, report.stdout_truncated, cap),
            stderr: text(&report.stderr, report.stderr_truncated, cap),
            truncated: report.stdout_truncated || report.stderr_truncated,
            changes: report.changes,
            applied: report.applied,
            violations: report.violations,
            change_summary: report.change_summary,
            // This backend takes no stdin from its caller (the spec's, if any).
            stdin_streamed: None,
        })
    }
}

/// The factory's probe: [`MicrovmBackend::probe`] as a typed [`crate::probe::Probe`].
pub fn probe() -> crate::probe::Probe {
    use crate::probe::{Probe, RuntimeFound};
    let kind = crate::BackendKind::Microvm;
    match MicrovmBackend::probe() {
        Ok(found) => {
            let runtime = RuntimeFound {
                name: "qemu-system-x86_64 -M microvm".into(),
                path: None,
                version: found,
                platform: None,
            };
            Probe::available(kind, runtime, super::caps::ENFORCES.to_vec())
        }
        Err(why) => Probe::unavailable(kind, why),
    }
}
