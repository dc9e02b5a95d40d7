//! The warm path of `airlock serve`: a few native sandboxes built ahead of
//! demand, each consumed by exactly one command.
//!
//! A warm sandbox is a helper started with [`HelperRequest::pooled`]: it
//! builds everything a cold run builds (namespaces, view, cgroup, seccomp
//! program, landlock rules) for a *template* spec (the request's spec without
//! argv, cwd, env and kept-set place, see [`Launch::template_of`]), then
//! blocks in a read of its control pipe. A request whose template is equal
//! takes one, the caller's gate runs (the audit record is durable), and one
//! [`Launch`] frame starts the command. The helper reports and tears the
//! sandbox down as after a cold run, but the run returns with the report,
//! before the teardown ends (a reaper thread waits for the helper, and
//! [`PoolHandle::stop`] for the reapers); nothing ever puts a sandbox back.
//!
//! Equivalence with a cold run: the view depends on the host paths it binds,
//! protects and hides, some only if they exist when it is built. A
//! [`ViewStamp`] of those paths is taken before the build and compared when a
//! request takes the sandbox; any difference discards the whole pool and the
//! request runs cold. Everything else a request brings is in the template.
//!
//! An idle pool costs no CPU: the helpers and their inits block in reads, the
//! refill thread waits on a condition variable.
//!
//! Its memory can be bounded ([`PoolLimits::memory`]): each warm sandbox's
//! helper and init are measured ([`super::pool_memory`]) on the refill thread
//! once it has had [`MEASURE_SETTLE`] to finish building; no sandbox is built
//! while the ready ones and one more of the largest size measured would pass
//! the bound, and the newest are let go while the ready ones pass it.
//!
//! [`HelperRequest::pooled`]: super::protocol::HelperRequest::pooled

use super::caller::{Helper, NativeBackend, Reap};
use super::protocol::{self, Launch};
use super::teardowns::Teardowns;
use crate::sys;
use crate::{Backend, Outcome, OutputSink, SandboxError, SandboxSpec};
use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Why a request ran cold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColdReason {
    /// Pool size 0.
    Disabled,
    /// No warm sandbox for this spec is ready yet (first request, or a burst
    /// faster than the refill).
    Empty,
    /// The pool was built for another spec (policy, workspace, limits,
    /// network...); it is rebuilt for this one.
    OtherSpec,
    /// A path the view binds, protects or hides changed since the warm
    /// sandboxes were built; they are discarded.
    ViewChanged,
}

impl ColdReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ColdReason::Disabled => "pool disabled",
            ColdReason::Empty => "no warm sandbox ready",
            ColdReason::OtherSpec => "the pool was built for another spec",
            ColdReason::ViewChanged => "a path of the view changed since the pool was built",
        }
    }
}

/// Which path one run took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunPath {
    /// A warm sandbox, by its pool id, built this long before it was taken.
    Warm {
        id: String,
        age_ms: u64,
    },
    Cold(ColdReason),
}

/// Counters since the pool started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Runs that took a warm sandbox.
    pub warm: u64,
    /// Runs that went the cold way (size 0, empty, other spec, view changed).
    pub cold: u64,
    /// Warm sandboxes started.
    pub built: u64,
    /// Warm sandboxes let go without running anything (spec or view changed,
    /// helper found dead, shutdown).
    pub discarded: u64,
    /// Warm sandboxes built and waiting for a command now: their init has
    /// built the view ([`protocol::PREPARED`]), and a run that takes one
    /// only launches its command.
    pub ready: u64,
    /// Warm sandboxes started whose view is still being built: a run that
    /// takes one (when none is ready) waits for the rest of its build.
    pub building: u64,
    /// What the ready sandboxes hold, as last measured (bytes of Pss; 0
    /// unless the pool's memory is bounded).
    pub memory_bytes: u64,
}

/// How many warm sandboxes a pool keeps, and how much memory they may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolLimits {
    /// Warm sandboxes at most (0: every run is cold).
    pub size: usize,
    /// Bytes the waiting sandboxes may hold together (Pss of their
    /// processes), if bounded.
    pub memory: Option<u64>,
}

impl PoolLimits {
    /// `size` sandboxes, memory unbounded.
    pub fn size(size: usize) -> PoolLimits {
        PoolLimits { size, memory: None }
    }
}

/// What the view of a template depends on besides the template itself: the
/// identity (device, inode, type) of each host path it binds, protects or
/// hides, or its absence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewStamp(Vec<(PathBuf, Option<FileId>, Option<FileId>)>);

/// Device, inode and file type.
type FileId = (u64, u64, u32);

impl ViewStamp {
    pub fn of(spec: &SandboxSpec) -> ViewStamp {
        let ws = &spec.workspace;
        let proxy = match &spec.network {
            crate::NetworkSpec::Proxy { socket } => Some(socket.clone()),
            _ => None,
        };
        let id = |m: std::fs::Metadata| (m.dev(), m.ino(), m.mode() & libc::S_IFMT);
        let paths = std::iter::once(ws.root.clone())
            .chain(ws.protect.iter().map(|p| ws.root.join(p)))
            .chain(spec.read_paths.iter().cloned())
            .chain(spec.write_paths.iter().cloned())
            .chain(spec.hide_paths.iter().cloned())
            .chain(proxy);
        ViewStamp(
            paths
                .map(|p| {
                    let link = std::fs::symlink_metadata(&p).ok().map(id);
                    let target = std::fs::metadata(&p).ok().map(id);
                    (p, link, target)
                })
                .collect(),
        )
    }
}

/// One warm sandbox: a helper waiting for its launch.
struct Warm {
    helper: Helper,
    id: String,
    stamp: ViewStamp,
    built: Instant,
    /// Its init said [`protocol::PREPARED`] (seen once, remembered).
    prepared: bool,
    /// Bytes it held, measured once it had [`MEASURE_SETTLE`] (bounded
    /// pools only; `None` until then).
    held: Option<u64>,
}

impl Warm {
    /// Whether its helper is still waiting (it exits if its build failed).
    fn alive(&mut self) -> bool {
        matches!(self.helper.child.try_wait(), Ok(None))
    }

    /// Whether its view is built: [`protocol::PREPARED`] is waiting on the
    /// prepared pipe (the byte stays there; a poll per look until seen).
    fn prepared(&mut self) -> bool {
        if !self.prepared {
            self.prepared = self.helper.prepared_r.as_ref().is_some_and(said_prepared);
        }
        self.prepared
    }

    /// Tears it down off the caller's thread (the helper cleans up and
    /// exits), counted in `teardowns` so that the pool's stop waits for it.
    fn release(self, teardowns: &Teardowns) {
        teardowns.abandon(self.helper);
    }
}

/// Whether a byte waits on `fd`, a prepared pipe's read end: init wrote
/// [`protocol::PREPARED`] (an init that died first leaves EOF alone).
fn said_prepared(fd: &std::os::fd::OwnedFd) -> bool {
    matches!(sys::poll(&[fd.as_raw_fd()], 0), Ok(r) if r[0] & libc::POLLIN != 0)
}

struct State {
    /// The spec warm sandboxes are built for (learnt from the last request).
    template: Option<SandboxSpec>,
    ready: VecDeque<Warm>,
    stopping: bool,
    stats: PoolStats,
    /// Runs between their take and their outcome (warm or cold).
    running: usize,
    /// When the last run got its outcome.
    last_end: Option<Instant>,
    /// The most a warm sandbox has measured (bounded pools only): what the
    /// next one is expected to hold.
    largest: u64,
}

impl State {
    fn held(&self) -> u64 {
        self.ready.iter().filter_map(|w| w.held).sum()
    }
}

struct Shared {
    size: usize,
    memory: Option<u64>,
    backend: NativeBackend,
    state: Mutex<State>,
    wake: Condvar,
    /// Helpers of finished warm runs still removing their cgroup and run
    /// directory (the outcome did not wait for that), and of warm sandboxes
    /// let go.
    teardowns: Teardowns,
    /// The refill thread: a stop joins it, so that a sandbox it was building
    /// meanwhile is torn down before the stop returns.
    refill: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// Building a sandbox costs a few ms of CPU on a host that may have two cores,
/// and starting its helper forks this process: while a sandbox is still ready
/// the refill waits until no run is between its take and its outcome, and
/// this long after the last one ended (the audit record and the response
/// go out then), so that it does not compete with the runs it is for.
const REFILL_SETTLE: Duration = Duration::from_millis(2);

/// Under a steady stream of overlapping runs the pool never goes quiet: the
/// refill waits at most this long. An empty pool refills at once (the next
/// run would be cold anyway).
const REFILL_MAX_DEFER: Duration = Duration::from_millis(100);

/// How long a warm sandbox has to finish building before its measure counts
/// (a build takes 5-20 ms here; one measured mid-build holds less than it
/// will). Until then the refill thread wakes once more to measure it.
const MEASURE_SETTLE: Duration = Duration::from_millis(300);

/// The native backend with a pool of warm sandboxes in front of it. Runs
/// whose spec matches the pool's template take a warm sandbox; every other
/// run is the native backend's cold run.
pub struct WarmPool {
    shared: Arc<Shared>,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

fn pool_id() -> String {
    format!(
        "warm-{:05x}-{:x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn profile(line: std::fmt::Arguments<'_>) {
    if std::env::var_os("AIRLOCK_PROFILE").is_some() {
        let line = format!("airlock profile: {line}\n");
        eprint!("{line}"); // one write: stderr is unbuffered
    }
}

impl WarmPool {
    /// A pool within `limits` (size 0: every run is cold) in front of
    /// `backend`. The refill thread starts now and builds nothing until a
    /// request shows which spec to build for.
    pub fn new(backend: NativeBackend, limits: PoolLimits) -> WarmPool {
        let size = limits.size;
        let shared = Arc::new(Shared {
            size,
            memory: limits.memory,
            backend,
            state: Mutex::new(State {
                template: None,
                ready: VecDeque::new(),
                stopping: false,
                stats: PoolStats::default(),
                running: 0,
                last_end: None,
                largest: 0,
            }),
            wake: Condvar::new(),
            teardowns: Teardowns::default(),
            refill: Mutex::new(None),
        });
        if size > 0 {
            let refill = shared.clone();
            let thread = std::thread::Builder::new()
                .name("airlock-pool".into())
                .spawn(move || refill_loop(&refill));
            match thread {
                Ok(t) => {
                    if let Ok(mut slot) = shared.refill.lock() {
                        *slot = Some(t);
                    }
                }
                Err(e) => eprintln!(
                    "airlock: warm sandbox pool: cannot start its refill thread ({e}); \
                     every run is built on demand"
                ),
            }
        }
        WarmPool { shared }
    }

    pub fn size(&self) -> usize {
        self.shared.size
    }

    pub fn stats(&self) -> PoolStats {
        self.handle().stats()
    }

    /// A handle that reads the counters (for metrics) without owning the pool.
    pub fn handle(&self) -> PoolHandle {
        PoolHandle(self.shared.clone())
    }

    /// Builds warm sandboxes for `spec` now, before the first request.
    pub fn prime(&self, spec: &SandboxSpec) {
        if self.shared.size == 0 {
            return;
        }
        if let Ok(mut state) = self.shared.state.lock() {
            retarget(
                &mut state,
                Launch::template_of(spec),
                &self.shared.teardowns,
            );
            self.shared.wake.notify_all();
        }
    }

    /// A warm sandbox built for `spec`'s template, or why there is none. The
    /// pool learns the template and is refilled either way.
    fn take(&self, spec: &SandboxSpec) -> Result<Warm, ColdReason> {
        let Ok(mut state) = self.shared.state.lock() else {
            return Err(ColdReason::Empty);
        };
        // Ended in run_reporting, whichever path the run takes.
        state.running += 1;
        if self.shared.size == 0 {
            state.stats.cold += 1;
            return Err(ColdReason::Disabled);
        }
        let template = Launch::template_of(spec);
        let taken = if state.template.as_ref() != Some(&template) {
            let had = state.template.is_some();
            retarget(&mut state, template, &self.shared.teardowns);
            Err(if had {
                ColdReason::OtherSpec
            } else {
                ColdReason::Empty
            })
        } else {
            // The oldest built one; else the oldest, whose build the run
            // then waits for.
            let pick = state.ready.iter_mut().position(Warm::prepared);
            let next = state.ready.remove(pick.unwrap_or(0)).map(|mut w| {
                let alive = w.alive();
                (w, alive)
            });
            match next {
                None => Err(ColdReason::Empty),
                Some((warm, false)) => {
                    // Its build failed: stop building for this spec until a
                    // request asks again (no rebuild loop on a broken host).
                    state.stats.discarded += 1;
                    state.template = None;
                    warm.release(&self.shared.teardowns);
                    drain(&mut state, &self.shared.teardowns);
                    Err(ColdReason::Empty)
                }
                Some((warm, _)) if warm.stamp != ViewStamp::of(spec) => {
                    state.stats.discarded += 1;
                    warm.release(&self.shared.teardowns);
                    // The others were built on the same stale view.
                    drain(&mut state, &self.shared.teardowns);
                    Err(ColdReason::ViewChanged)
                }
                Some((warm, _)) => Ok(warm),
            }
        };
        match taken {
            Ok(_) => state.stats.warm += 1,
            Err(_) => state.stats.cold += 1,
        }
        self.shared.wake.notify_all();
        taken
    }

    /// Runs `spec` in `warm`: the launch, the gate, the go, then the same
    /// streaming and report as a cold run.
    fn run_warm(
        &self,
        warm: Warm,
        spec: &SandboxSpec,
        sink: &mut dyn OutputSink,
        gate: &mut dyn FnMut() -> Result<(), SandboxError>,
    ) -> Result<Outcome, SandboxError> {
        let t = Instant::now();
        profile(format_args!(
            "{:>8.2} ms  pool: warm sandbox {} taken (started {:.1} ms before, {})",
            0.0,
            warm.id,
            warm.built.elapsed().as_secs_f64() * 1000.0,
            match warm.prepared {
                true => "built",
                false => "still building",
            }
        ));
        // The launch goes first: the sandbox prepares the command while the
        // gate works, and execs it only on the go that follows the gate's yes
        // (on a no, init and the helper see EOF and nothing runs). Init gets
        // both on its own pipe, the helper on its control pipe.
        let frame = Launch::of(spec).frame(protocol::CONTROL_LAUNCH);
        let to_init = |bytes: &[u8]| match &warm.helper.go_w {
            Some(w) => sys::write_all(w.as_raw_fd(), bytes),
            None => Ok(()),
        };
        let sent =
            to_init(&frame).and_then(|()| sys::write_all(warm.helper.ctl_w.as_raw_fd(), &frame));
        if let Err(e) = sent {
            warm.helper.abandon();
            return Err(SandboxError::Helper(format!(
                "the warm sandbox {} went away before its launch: {e}",
                warm.id
            )));
        }
        profile(format_args!(
            "{:>8.2} ms  pool: launch sent",
            t.elapsed().as_secs_f64() * 1000.0
        ));
        if let Err(e) = gate() {
            warm.helper.abandon();
            return Err(e);
        }
        let _ = to_init(b"g");
        let _ = sys::write_all(warm.helper.ctl_w.as_raw_fd(), &[protocol::CONTROL_GO]);
        profile(format_args!(
            "{:>8.2} ms  pool: gate passed, go sent",
            t.elapsed().as_secs_f64() * 1000.0
        ));
        let outcome = self.shared.backend.drive(
            warm.helper,
            spec,
            sink,
            Reap::Background(&self.shared.teardowns),
        );
        profile(format_args!(
            "{:>8.2} ms  pool: warm run total",
            t.elapsed().as_secs_f64() * 1000.0
        ));
        outcome
    }

    /// [`Backend::run_gated`], and which path the run took.
    pub fn run_reporting(
        &self,
        spec: &SandboxSpec,
        sink: &mut dyn OutputSink,
        gate: &mut dyn FnMut() -> Result<(), SandboxError>,
    ) -> (RunPath, Result<Outcome, SandboxError>) {
        if spec.argv.is_empty() {
            return (
                RunPath::Cold(ColdReason::Empty),
                Err(SandboxError::Spec("argv is empty".into())),
            );
        }
        let ran = match self.take(spec) {
            Ok(warm) => {
                let path = RunPath::Warm {
                    id: warm.id.clone(),
                    age_ms: warm.built.elapsed().as_millis() as u64,
                };
                (path, self.run_warm(warm, spec, sink, gate))
            }
            Err(why) => {
                profile(format_args!(
                    "{:>8.2} ms  pool: cold path ({})",
                    0.0,
                    why.as_str()
                ));
                (
                    RunPath::Cold(why),
                    self.shared.backend.run_gated(spec, sink, gate),
                )
            }
        };
        if let Ok(mut state) = self.shared.state.lock() {
            state.running = state.running.saturating_sub(1);
            state.last_end = Some(Instant::now());
        }
        self.shared.wake.notify_all();
        ran
    }
}

/// Reads a pool's counters; the pool stops when its [`WarmPool`] is dropped.
#[derive(Clone)]
pub struct PoolHandle(Arc<Shared>);

impl std::fmt::Debug for PoolHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PoolHandle(size {})", self.0.size)
    }
}

impl PoolHandle {
    pub fn size(&self) -> usize {
        self.0.size
    }

    /// The bound on the ready sandboxes' memory, if any.
    pub fn memory_limit(&self) -> Option<u64> {
        self.0.memory
    }

    /// Builds no more, and tears down every ready sandbox, waiting for each
    /// helper to have removed its cgroup and run directory, including one
    /// the refill thread was building when the stop came.
    pub fn stop(&self) {
        let ready: Vec<Warm> = match self.0.state.lock() {
            Ok(mut state) => {
                state.stopping = true;
                state.stats.discarded += state.ready.len() as u64;
                state.ready.drain(..).collect()
            }
            Err(_) => Vec::new(),
        };
        self.0.wake.notify_all();
        // Torn down side by side; the wait below covers them.
        for w in ready {
            w.release(&self.0.teardowns);
        }
        // A build under way ends in an abandon on the refill thread (it sees
        // `stopping`), and the thread returns.
        let refill = self.0.refill.lock().ok().and_then(|mut slot| slot.take());
        if let Some(t) = refill {
            let _ = t.join();
        }
        // Finished runs, and sandboxes let go, whose helpers are still
        // removing what they built.
        self.0.teardowns.wait();
    }

    pub fn stats(&self) -> PoolStats {
        let Ok(mut state) = self.0.state.lock() else {
            return PoolStats::default();
        };
        let ready = state
            .ready
            .iter_mut()
            .map(Warm::prepared)
            .filter(|p| *p)
            .count() as u64;
        PoolStats {
            ready,
            building: state.ready.len() as u64 - ready,
            memory_bytes: state.held(),
            ..state.stats
        }
    }
}

impl Drop for WarmPool {
    fn drop(&mut self) {
        self.handle().stop();
    }
}

impl Backend for WarmPool {
    fn name(&self) -> &'static str {
        "native"
    }

    fn run(&self, spec: &SandboxSpec, sink: &mut dyn OutputSink) -> Result<Outcome, SandboxError> {
        self.run_gated(spec, sink, &mut || Ok(()))
    }

    fn run_gated(
        &self,
        spec: &SandboxSpec,
        sink: &mut dyn OutputSink,
        gate: &mut dyn FnMut() -> Result<(), SandboxError>,
    ) -> Result<Outcome, SandboxError> {
        self.run_reporting(spec, sink, gate).1
    }
}

/// Lets every ready sandbox go.
fn drain(state: &mut State, teardowns: &Teardowns) {
    while let Some(w) = state.ready.pop_front() {
        state.stats.discarded += 1;
        w.release(teardowns);
    }
}

/// Builds for `template` from now on; what was built for another is let go.
fn retarget(state: &mut State, template: SandboxSpec, teardowns: &Teardowns) {
    drain(state, teardowns);
    state.template = Some(template);
}

/// How long the refill should still wait before building (`None`: build now),
/// see [`REFILL_SETTLE`] and [`REFILL_MAX_DEFER`].
fn refill_delay(state: &State, wanted_since: Instant) -> Option<Duration> {
    let deferred = wanted_since.elapsed();
    if state.ready.is_empty() || deferred >= REFILL_MAX_DEFER {
        return None;
    }
    let left = REFILL_MAX_DEFER - deferred;
    if state.running > 0 {
        // A run's end wakes the refill.
        return Some(left);
    }
    let settled = state.last_end.map_or(REFILL_SETTLE, |t| t.elapsed());
    match REFILL_SETTLE.checked_sub(settled) {
        Some(d) if !d.is_zero() => Some(d.min(left)),
        _ => None,
    }
}

/// What the refill thread does next.
enum Next {
    Build(Box<SandboxSpec>),
    /// Some warm sandbox has had [`MEASURE_SETTLE`]: measure it.
    Measure,
}

/// Keeps `size` sandboxes ready for the current template (within the memory
/// bound); blocks (no CPU) while the pool is full or has no template.
fn refill_loop(shared: &Shared) {
    loop {
        measure_ready(shared);
        let next = {
            let Ok(mut state) = shared.state.lock() else {
                return;
            };
            // Since when a build has been wanted but deferred.
            let mut wanted_since: Option<Instant> = None;
            loop {
                if state.stopping {
                    return;
                }
                let settle = until_settled(&state, shared.memory);
                if settle == Some(Duration::ZERO) {
                    break Next::Measure;
                }
                let wait = match &state.template {
                    Some(t) if state.ready.len() < shared.size && fits(&state, shared.memory) => {
                        let since = *wanted_since.get_or_insert_with(Instant::now);
                        match refill_delay(&state, since) {
                            None => break Next::Build(Box::new(t.clone())),
                            Some(d) => Some(d),
                        }
                    }
                    _ => {
                        wanted_since = None;
                        None
                    }
                };
                let wait = match (wait, settle) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                state = match wait {
                    None => match shared.wake.wait(state) {
                        Ok(s) => s,
                        Err(_) => return,
                    },
                    Some(d) => match shared.wake.wait_timeout(state, d) {
                        Ok((s, _)) => s,
                        Err(_) => return,
                    },
                };
            }
        };
        let template = match next {
            Next::Measure => continue,
            Next::Build(t) => *t,
        };
        let mut spec = template.clone();
        spec.request_id = pool_id();
        let stamp = ViewStamp::of(&spec);
        let built = shared.backend.spawn(&spec, true, true);
        let Ok(mut state) = shared.state.lock() else {
            return;
        };
        match built {
            Ok(helper) => {
                state.stats.built += 1;
                let warm = Warm {
                    helper,
                    id: spec.request_id,
                    stamp,
                    built: Instant::now(),
                    prepared: false,
                    held: None,
                };
                if !state.stopping
                    && state.template.as_ref() == Some(&template)
                    && state.ready.len() < shared.size
                {
                    state.ready.push_back(warm);
                } else {
                    state.stats.discarded += 1;
                    drop(state);
                    warm.helper.abandon();
                }
            }
            Err(e) => {
                // Cold runs still work; build again only when asked again.
                eprintln!("airlock: warm sandbox pool: cannot start a helper: {e}");
                state.template = None;
            }
        }
    }
}

/// Whether one more warm sandbox fits `memory`.
fn fits(state: &State, memory: Option<u64>) -> bool {
    let Some(limit) = memory else {
        return true;
    };
    let ready = state.ready.iter().map(|w| w.held);
    one_more_fits(ready, state.largest, limit)
}

/// Whether one more sandbox of the `largest` size measured fits `limit`
/// beside the `ready` ones (bytes held, if measured yet). Nothing measured
/// yet: one is built and measured before a second; one not measured yet is
/// expected to hold what the largest did.
fn one_more_fits(ready: impl Iterator<Item = Option<u64>>, largest: u64, limit: u64) -> bool {
    let mut held = 0u64;
    let mut any = false;
    for bytes in ready {
        any = true;
        held = held.saturating_add(bytes.unwrap_or(largest));
    }
    if largest == 0 {
        return !any;
    }
    held.saturating_add(largest) <= limit
}

/// How long until the next warm sandbox not yet measured has had
/// [`MEASURE_SETTLE`] (zero: now); `None` when there is none or no bound.
fn until_settled(state: &State, memory: Option<u64>) -> Option<Duration> {
    memory?;
    state
        .ready
        .iter()
        .filter(|w| w.held.is_none())
        .map(|w| MEASURE_SETTLE.saturating_sub(w.built.elapsed()))
        .min()
}

/// Measures the warm sandboxes that have had [`MEASURE_SETTLE`] (off the
/// lock: a request may take one meanwhile), then lets the newest go while the
/// ready ones hold more than the bound.
fn measure_ready(shared: &Shared) {
    let Some(limit) = shared.memory else {
        return;
    };
    let due: Vec<(String, Option<libc::pid_t>)> = match shared.state.lock() {
        Ok(state) => state
            .ready
            .iter()
            .filter(|w| w.held.is_none() && w.built.elapsed() >= MEASURE_SETTLE)
            .map(|w| (w.id.clone(), w.helper.child.pid()))
            .collect(),
        Err(_) => return,
    };
    if due.is_empty() {
        return;
    }
    let measured: Vec<(String, Option<u64>)> = due
        .into_iter()
        .map(|(id, pid)| (id, pid.and_then(super::pool_memory::tree_pss)))
        .collect();
    let Ok(mut state) = shared.state.lock() else {
        return;
    };
    for (id, bytes) in measured {
        // Taken by a request meanwhile: its measure is of another moment.
        let Some(w) = state.ready.iter_mut().find(|w| w.id == id) else {
            continue;
        };
        // A helper gone (its build failed) holds nothing; take() finds it dead.
        w.held = Some(bytes.unwrap_or(0));
        state.largest = state.largest.max(bytes.unwrap_or(0));
    }
    let mut trimmed = false;
    while state.held() > limit {
        let Some(w) = state.ready.pop_back() else {
            break;
        };
        state.stats.discarded += 1;
        w.release(&shared.teardowns);
        trimmed = true;
    }
    if trimmed && state.ready.is_empty() && state.largest > limit {
        eprintln!(
            "airlock: warm sandbox pool: one warm sandbox holds {} KiB, more than --pool-memory \
             ({} KiB); every run is built on demand",
            state.largest / 1024,
            limit / 1024
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{one_more_fits, said_prepared};
    use crate::sys;

    /// A warm sandbox is ready once its init's byte is there, not when its
    /// helper starts, nor when an init that failed closed the pipe.
    #[test]
    fn ready_means_init_said_its_view_is_built() {
        let (r, w) = sys::pipe().unwrap();
        assert!(!said_prepared(&r), "nothing written yet");
        sys::write_all(
            std::os::fd::AsRawFd::as_raw_fd(&w),
            &[super::protocol::PREPARED],
        )
        .unwrap();
        drop(w);
        assert!(said_prepared(&r), "the byte, then EOF");
        assert!(said_prepared(&r), "looking does not consume it");

        let (r, w) = sys::pipe().unwrap();
        drop(w);
        assert!(!said_prepared(&r), "EOF alone: init died before its view");
    }

    const MIB: u64 = 1 << 20;

    #[test]
    fn the_first_sandbox_is_measured_before_a_second_is_built() {
        assert!(one_more_fits([].into_iter(), 0, MIB));
        assert!(one_more_fits([].into_iter(), 0, 1));
        assert!(!one_more_fits([None].into_iter(), 0, 100 * MIB));
    }

    #[test]
    fn a_sandbox_is_built_only_while_one_more_of_the_largest_fits() {
        let three = 3 * MIB;
        // Two measured at 3 MiB: a third fits 9 MiB, not 8.
        let ready = || [Some(three), Some(three)].into_iter();
        assert!(one_more_fits(ready(), three, 9 * MIB));
        assert!(!one_more_fits(ready(), three, 9 * MIB - 1));
        // One not measured yet counts as the largest.
        let ready = || [Some(three), None].into_iter();
        assert!(!one_more_fits(ready(), three, 8 * MIB));
        assert!(one_more_fits(ready(), three, 9 * MIB));
        // A bound below one sandbox: none.
        assert!(!one_more_fits([].into_iter(), three, MIB));
        assert!(!one_more_fits([].into_iter(), u64::MAX, u64::MAX - 1));
    }
}
