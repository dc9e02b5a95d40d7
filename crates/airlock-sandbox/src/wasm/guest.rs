//! The guest's process: loads the precompiled module, builds the WASI context
//! from the view, walls itself in (rlimits, landlock, no capabilities,
//! seccomp), and runs the module's `_start` with a watchdog for time and CPU.
//!
//! It runs in a child of the helper, so that anything that goes wrong in it
//! (or a guest that escapes wasmtime) stays behind those walls while the
//! helper reports and cleans up.

use super::output::{CappedFd, OutputState};
use super::scratch::View;
use super::{engine, GuestResult, Request};
use crate::native::{caps, landlock, seccomp};
use crate::Layer;
use crate::{KillReason, SandboxError};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::{Linker, Module, ResourceLimiter, Store};
use wasmtime_wasi::p1::{self, WasiP1Ctx};
use wasmtime_wasi::p2::pipe::MemoryInputPipe;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

/// Linear memory and table growth, bounded by `limits.memory`.
struct Limiter {
    memory: usize,
    peak: usize,
    hit: bool,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory {
            self.hit = true;
            wasmtime::bail!("airlock: memory limit of {} bytes reached", self.memory);
        }
        self.peak = self.peak.max(desired);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // A table entry costs the host a pointer or more: bound them by the same budget.
        if desired.saturating_mul(16) > self.memory {
            self.hit = true;
            wasmtime::bail!("airlock: table growth past the memory limit");
        }
        Ok(true)
    }
}

struct State {
    wasi: WasiP1Ctx,
    limiter: Limiter,
}

const NONE: u8 = 0;
const TIMEOUT: u8 = 1;
const CPU: u8 = 2;
const OUTPUT: u8 = 3;

fn process_cpu_ms() -> u64 {
    // SAFETY: ts is written by clock_gettime before it is read.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: ts is a live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

fn layer(what: &str, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Layer {
        layer: Layer::Wasm,
        detail: format!("{what}: {e}"),
    }
}

/// Runs the guest to the end. Only returns `Err` when the sandbox could not
/// be built; whatever the guest does is a `GuestResult`.
pub fn run(req: &Request, view: &View) -> Result<GuestResult, SandboxError> {
    let spec = &req.spec;
    let started = Instant::now();

    // Step 1: load the module (before landlock: the cache is outside the view).
    let engine = engine::new()?;
    // The .cwasm comes from our own cache (a 0700 directory owned by this user,
    // files checked by cache::locate), written by this wasmtime version.
    // SAFETY: deserializing trusts the bytes; these are our own, named by the module's hash.
    let module = unsafe { Module::deserialize_file(&engine, &req.cwasm) }
        .map_err(|e| layer("loading the precompiled module", format!("{e:#}")))?;

    // Step 2: the WASI context: args, environment, stdio, preopens; no sockets.
    let out_state = Arc::new(OutputState {
        cap: spec.limits.output_bytes,
        over: AtomicBool::new(false),
    });
    let mut b = WasiCtxBuilder::new();
    b.args(&req.guest_argv)
        .envs(&spec.env)
        .stdin(MemoryInputPipe::new(spec.stdin.clone().unwrap_or_default()))
        .stdout(CappedFd::new(1, out_state.clone()))
        .stderr(CappedFd::new(2, out_state.clone()))
        .allow_blocking_current_thread(true)
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
    for p in &view.preopens {
        let perms = if p.writable {
            FsPerms::ReadWrite
        } else {
            FsPerms::ReadOnly
        };
        b.preopened_dir(&p.host, &p.guest, perms)
            .map_err(|e| layer(&format!("preopen {}", p.host.display()), format!("{e:#}")))?;
    }
    let mut linker: Linker<State> = Linker::new(&engine);
    p1::add_to_linker_sync(&mut linker, |s: &mut State| &mut s.wasi)
        .map_err(|e| layer("linking WASI", format!("{e:#}")))?;
    let mut store = Store::new(
        &engine,
        State {
            wasi: b.build_p1(),
            limiter: Limiter {
                memory: usize::try_from(spec.limits.memory_bytes).unwrap_or(usize::MAX),
                peak: 0,
                hit: false,
            },
        },
    );
    store.limiter(|s| &mut s.limiter);
    store.set_epoch_deadline(1);
    store.epoch_deadline_trap();

    // Step 3: the walls around this process. rlimits first (a file-size hit is
    // an EFBIG for the guest, not a signal), then landlock over the view, then
    // no capabilities and the native seccomp filter.
    super::limits::apply(&spec.limits)?;
    let prepared = landlock::prepare(&view.landlock)?;
    caps::set_no_new_privs()?;
    prepared.restrict_self()?;
    caps::drop_all_capabilities()?;
    // Without the set-id rule, as before the filters were merged: WASI has no
    // mode bits, and wasmtime opens files with openat2 where it can.
    let filter = seccomp::compile(seccomp::SocketRule::UnixOnly, seccomp::SetIdRule::Leave)?;

    // Step 4: the watchdog: wall clock, CPU clock and the output flag, checked
    // every few ms; a hit records why and bumps the epoch so the guest traps.
    let reason = Arc::new(AtomicU8::new(NONE));
    let done = Arc::new(AtomicBool::new(false));
    {
        let (engine, reason, done, out_state) = (
            engine.clone(),
            reason.clone(),
            done.clone(),
            out_state.clone(),
        );
        let timeout = Duration::from_millis(spec.limits.timeout_ms);
        let cpu_ms = spec.limits.cpu_time_ms;
        std::thread::Builder::new()
            .name("airlock-wasm-watchdog".into())
            .spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    let why = if out_state.over.load(Ordering::SeqCst) {
                        OUTPUT
                    } else if started.elapsed() >= timeout {
                        TIMEOUT
                    } else if process_cpu_ms() >= cpu_ms {
                        CPU
                    } else {
                        NONE
                    };
                    if why != NONE {
                        reason.store(why, Ordering::SeqCst);
                        engine.increment_epoch();
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
            .map_err(|e| layer("watchdog thread", e))?;
    }
    seccomp::install(&filter)?;

    // Step 5: run.
    let outcome = linker
        .instantiate(&mut store, &module)
        .and_then(|instance| instance.get_typed_func::<(), ()>(&mut store, "_start"))
        .and_then(|start| start.call(&mut store, ()));
    done.store(true, Ordering::SeqCst);
    let limiter = &store.data().limiter;
    let mut result = GuestResult {
        exit_code: None,
        signal: None,
        killed_by: None,
        cpu_ms: process_cpu_ms(),
        peak_memory_bytes: limiter.peak as u64,
        trap: None,
    };
    let killed = match reason.load(Ordering::SeqCst) {
        TIMEOUT => Some(KillReason::Timeout),
        CPU => Some(KillReason::CpuTime),
        OUTPUT => Some(KillReason::Output),
        _ if limiter.hit => Some(KillReason::Memory),
        _ if out_state.over.load(Ordering::SeqCst) => Some(KillReason::Output),
        _ => None,
    };
    match outcome {
        Ok(()) => result.exit_code = Some(0),
        Err(e) => {
            if let Some(exit) = e.downcast_ref::<wasmtime_wasi::I32Exit>() {
                result.exit_code = Some(exit.0);
            } else if let Some(k) = killed {
                result.killed_by = Some(k);
                result.signal = Some(libc::SIGKILL);
            } else {
                // A trap (unreachable, out-of-bounds access, stack overflow):
                // the guest crashed, as a native program that aborts.
                result.signal = Some(libc::SIGABRT);
                result.trap = Some(format!("{e:#}"));
            }
        }
    }
    Ok(result)
}
