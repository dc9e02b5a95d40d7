//! The caller's side of the wasm backend (no wasmtime here): pick the module,
//! make sure it is precompiled, start the helper (`airlock-wasm`), stream and
//! cap its output, and turn its report into an [`Outcome`].

use super::helper::{FD_REPORT, HELPER_ARG, PRECOMPILE_ARG};
use super::program::{classify, Program};
use super::{cache, runtime, HelperReport, Request};
use crate::factory::OpenOptions;
use crate::output;
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
pub struct WasmBackend {
    /// The executable that runs the helper when given [`HELPER_ARG`] first.
    pub helper_exe: PathBuf,
    /// Where per-run directories live.
    pub runs_dir: PathBuf,
    /// The precompiled-module cache.
    pub cache_dir: PathBuf,
}

impl WasmBackend {
    /// `airlock-wasm` beside the running executable as helper; runs under the
    /// state directory, the cache where `opts` says.
    pub fn open(opts: &OpenOptions) -> Result<WasmBackend, SandboxError> {
        let cache_dir = opts
            .wasm_cache
            .clone()
            .unwrap_or_else(|| opts.state_dir.join("wasm-cache"));
        Ok(WasmBackend {
            helper_exe: helper_binary().map_err(|detail| SandboxError::Layer {
                layer: Layer::Wasm,
                detail,
            })?,
            runs_dir: opts.runs_dir(),
            cache_dir,
        })
    }

    /// Whether the backend can run here: the runtime is installed and the
    /// helper can build its view (it needs CAP_SYS_ADMIN for its mounts).
    pub fn probe() -> Probe {
        let kind = BackendKind::Wasm;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Probe::unavailable(
                kind,
                "the wasm helper builds its overlay view with mounts, which needs root; \
                 Hint: run airlock as root, as for the native backend"
                    .into(),
            );
        }
        if let Err(why) = helper_binary() {
            return Probe::unavailable(kind, why);
        }
        match runtime::locate_python() {
            Ok(python) => {
                let detail = format!(
                    "wasmtime {} (in airlock-wasm); CPython WASI runtime at {}",
                    cache::WASMTIME_VERSION,
                    python.display()
                );
                let found = RuntimeFound {
                    name: "wasmtime".into(),
                    path: Some(python),
                    version: cache::WASMTIME_VERSION.into(),
                    platform: None,
                };
                let mut probe = Probe::available(kind, found, super::caps::ENFORCES.to_vec());
                probe.detail = detail;
                probe
            }
            Err(why) => Probe::unavailable(kind, why),
        }
    }

    /// The cached `.cwasm` of `module`, compiled by the helper binary first
    /// when the cache has none (once per module and wasmtime version).
    fn precompiled(&self, module: &Path, pinned: Option<&str>) -> Result<PathBuf, SandboxError> {
        let entry = cache::locate(&self.cache_dir, module, pinned)?;
        if entry.present {
            return Ok(entry.cwasm);
        }
        let out = Command::new(&self.helper_exe)
            .arg(PRECOMPILE_ARG)
            .arg(module)
            .arg(&entry.cwasm)
            .arg(&entry.sha256)
            .env_clear()
            .stdin(Stdio::null())
            .output()
            .map_err(io_err("starting airlock-wasm to precompile the module"))?;
        if !out.status.success() {
            let why = String::from_utf8_lossy(&out.stderr);
            return Err(SandboxError::Layer {
                layer: Layer::Wasm,
                detail: format!(
                    "precompiling {} failed ({}): {}",
                    module.display(),
                    out.status,
                    why.trim()
                ),
            });
        }
        Ok(entry.cwasm)
    }

    /// The module and the guest's argv for `spec.argv`.
    fn program(&self, spec: &SandboxSpec) -> Result<(PathBuf, Vec<String>), SandboxError> {
        match classify(&spec.argv).map_err(SandboxError::Spec)? {
            Program::Python { args } => {
                let python = runtime::locate_python().map_err(|e| SandboxError::Layer {
                    layer: Layer::Wasm,
                    detail: e,
                })?;
                let cwasm = self.precompiled(&python, Some(runtime::PYTHON_SHA256))?;
                let mut argv = vec!["python3".to_string()];
                argv.extend(args);
                Ok((cwasm, argv))
            }
            Program::Module { path, args } => {
                let path = spec.cwd.join(path);
                let root = &spec.workspace.root;
                let real = std::fs::canonicalize(&path).map_err(|e| {
                    SandboxError::Spec(format!("WASI module {}: {e}", path.display()))
                })?;
                if !real.starts_with(root) {
                    return Err(SandboxError::Spec(format!(
                        "WASI module {} lies outside the workspace {}; Hint: put the module in the workspace",
                        path.display(),
                        root.display()
                    )));
                }
                let cwasm = self.precompiled(&real, None)?;
                let mut argv = vec![real.display().to_string()];
                argv.extend(args);
                Ok((cwasm, argv))
            }
        }
    }
}

/// The binary that embeds wasmtime: `airlock-wasm` next to the running
/// executable (`cargo install --path crates/airlock` installs both).
fn helper_binary() -> Result<PathBuf, String> {
    let exe = std::fs::read_link("/proc/self/exe")
        .map_err(|e| format!("locating the wasm helper: resolving /proc/self/exe: {e}"))?;
    let helper = exe.with_file_name(HELPER_BINARY);
    if !helper.is_file() {
        return Err(format!(
            "the wasm backend runs in {HELPER_BINARY}, which is not next to {}; \
             Hint: install both binaries with `cargo install --locked --path crates/airlock`, \
             or copy {HELPER_BINARY} from the same build beside airlock",
            exe.display()
        ));
    }
    Ok(helper)
}

/// The name of the binary that embeds wasmtime.
pub const HELPER_BINARY: &str = "airlock-wasm";

fn io_err(context: &str) -> impl Fn(std::io::Error) -> SandboxError + '_ {
    move |source| SandboxError::Io {
        context: context.to_string(),
        source,
    }
}

impl Backend for WasmBackend {
    fn name(&self) -> &'static str {
        "wasm"
    }

    fn run(&self, spec: &SandboxSpec, sink: &mut dyn OutputSink) -> Result<Outcome, SandboxError> {
        // Step 1: the module, precompiled (once per wasmtime version).
        let (cwasm, guest_argv) = self.program(spec)?;
        let request = Request {
            spec: spec.clone(),
            runs_dir: self.runs_dir.clone(),
            cwasm,
            guest_argv,
        };
        let mut bytes =
            serde_json::to_vec(&request).map_err(|e| SandboxError::Spec(e.to_string()))?;
        bytes.push(b'\n');

        // Step 2: the helper, with an empty environment and the report on fd 3.
        let (rep_r, rep_w) = sys::pipe().map_err(io_err("pipe"))?;
        let src = rep_w.as_raw_fd();
        let mut cmd = Command::new(&self.helper_exe);
        cmd.arg(HELPER_ARG)
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // The pipe's fds are far above 3 in practice; dup2 onto itself would
        // keep CLOEXEC, so a source that is already 3 is moved first.
        // SAFETY: the closure runs between fork and exec and only calls fcntl and dup2 (async-signal-safe); it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                let mut from: RawFd = src;
                if from == FD_REPORT {
                    from = sys::cvt(libc::fcntl(from, libc::F_DUPFD_CLOEXEC, 10))?;
                }
                sys::cvt(libc::dup2(from, FD_REPORT))?;
                Ok(())
            });
        }
        let started = Instant::now();
        let mut child = cmd.spawn().map_err(io_err("spawning the wasm helper"))?;
        drop(rep_w);
        // The request is one line; stdin then stays open as the helper's
        // lifeline: closing it (the run is cancelled) makes the helper kill
        // the guest and report.
        let mut lifeline = child.stdin.take();
        if let Some(stdin) = lifeline.as_mut() {
            if let Err(e) = stdin.write_all(&bytes) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(SandboxError::Helper(format!("sending the spec: {e}")));
            }
        }
        let stdout = output::take_pipe(child.stdout.take(), "stdout")?;
        let stderr = output::take_pipe(child.stderr.take(), "stderr")?;

        // Step 3: relay output as it comes, capped; collect the report.
        let backstop =
            started + Duration::from_millis(spec.limits.timeout_ms) + Duration::from_secs(60);
        let pipes = output::Pipes {
            stdout: &stdout,
            stderr: &stderr,
            report: &rep_r,
        };
        // The guest traps itself at the cap (see `output`): nothing to tell the
        // helper then. A cancelled run's helper loses its lifeline.
        let relayed = output::relay_helper(
            pipes,
            spec.limits.output_bytes,
            backstop,
            sink,
            &mut |reason| {
                if reason == crate::KillReason::Cancelled {
                    lifeline = None;
                }
            },
            "wasm",
            &mut || {
                let _ = child.kill();
                let _ = child.wait();
            },
        )?;
        let (mut out, err) = (relayed.stdout, relayed.stderr);
        drop(lifeline);
        let status = child
            .wait()
            .map_err(io_err("waiting for the wasm helper"))?;
        let report: HelperReport =
            output::parse_report(&relayed.report, "wasm", &format!("exited ({status})"))?;
        if report.failure.is_some() {
            return Err(report.into_error());
        }
        // A guest trapped at the output cap wrote exactly the cap: it was cut.
        if report.killed_by == Some(crate::KillReason::Output) && !out.truncated && !err.truncated {
            out.truncated = true;
        }
        let mut stderr_text = err.text();
        if let Some(trap) = &report.trap {
            let note = format!("[airlock: the WebAssembly guest trapped: {trap}]\n");
            sink.stderr(note.as_bytes());
            stderr_text.push_str(&note);
        }
        Ok(Outcome {
            exit_code: report.exit_code,
            signal: report.signal,
            killed_by: report.killed_by,
            duration_ms: report.duration_ms,
            cpu_ms: report.cpu_ms,
            peak_memory_bytes: report.peak_memory_bytes,
            stdout: out.text(),
            stderr: stderr_text,
            truncated: out.truncated || err.truncated,
            changes: report.changes,
            applied: report.applied,
            violations: report.violations,
            change_summary: report.change_summary,
            // This backend takes no stdin from its caller (the spec's, if any).
            stdin_streamed: None,
        })
    }
}
