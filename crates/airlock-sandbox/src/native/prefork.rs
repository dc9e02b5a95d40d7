//! A helper forked in advance by a caller that is still single-threaded
//! (`airlock run`, first thing, [`fork_early`]): a fork costs a fraction of a
//! millisecond where re-executing the airlock binary costs 2–3 ms (dynamic
//! loading, relocations, CPU feature probing, which traps in a VM). Forked
//! before the policy and the knowledge base are loaded, its address space is
//! small, so init (a clone of it) forks the command quickly too. It then
//! waits, blocked reading its request pipe, while the caller judges the
//! command; a caller that never sends a request (denied, another backend)
//! closes the pipe and it exits.
//!
//! From inside the sandbox it must look like a re-executed helper: the
//! sandbox's PID 1 is a clone of it, and the command can read PID 1's
//! `/proc/1/cmdline` and `/proc/1/environ`, which show the bytes where the
//! process's argv and environment strings were when it was exec'd — the
//! caller's, secrets included (tests/escape `sec_proc_environ`). So the child,
//! before anything else:
//! - moves its pipes to fds 0–5 and closes every other fd (an exec would close
//!   only the close-on-exec ones);
//! - zeroes its argv and environment strings in place and empties its
//!   environment (keeping only the debug switches a spawned helper is given);
//! - changes to `/`.
//!
//! Forking a process with other threads would copy locks they hold, so a
//! caller with more than one thread gets no prefork: the helper is then
//! spawned as usual.

use super::helper_process::HelperProcess;
use super::protocol;
use super::teardowns::Teardowns;
use crate::sys;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Debug builds only: skip the scrub of argv and environment, so that the
/// escape corpus can show `sec_proc_cmdline` failing without it
/// (`run.py --prefork-scrub-off`). Release builds have no such switch.
#[cfg(debug_assertions)]
pub const PREFORK_SCRUB_OFF: &str = "AIRLOCK_TEST_PREFORK_SCRUB_OFF";

/// A helper waiting for its request, and the caller's ends of its pipes.
#[derive(Debug)]
pub(crate) struct Preforked {
    pub(crate) process: HelperProcess,
    pub(crate) request: OwnedFd,
    pub(crate) report: OwnedFd,
    pub(crate) control: OwnedFd,
}

/// The backend's slot for one preforked helper. A helper left in it when the
/// backend goes (the command was denied, or run elsewhere) gets EOF on its
/// request pipe, exits, and is reaped here. A helper that ran tears its
/// sandbox down after its report while the caller writes its audit record
/// and answers; the backend's end waits for that, so the sandbox's cgroup and
/// run directory are gone when `airlock run` exits.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    waiting: std::sync::Mutex<Option<Preforked>>,
    pub(crate) teardowns: Teardowns,
}

impl Slot {
    pub(crate) fn fill(&self, helper: Preforked) {
        if let Ok(mut slot) = self.waiting.lock() {
            *slot = Some(helper);
        }
    }

    pub(crate) fn take(&self) -> Option<Preforked> {
        self.waiting.lock().ok()?.take()
    }
}

impl Preforked {
    /// Lets an unused helper go: EOF on its request pipe makes it exit; reaps it.
    fn let_go(self) {
        let Preforked {
            mut process,
            request,
            ..
        } = self;
        drop(request);
        let _ = process.wait();
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(unused) = self.take() {
            unused.let_go();
        }
        let t = std::time::Instant::now();
        self.teardowns.wait();
        if std::env::var_os("AIRLOCK_PROFILE").is_some() {
            let line = format!(
                "airlock profile: caller waited {:.2} ms for the helper's teardown\n",
                t.elapsed().as_secs_f64() * 1000.0
            );
            eprint!("{line}"); // one write: stderr is unbuffered
        }
    }
}

/// The helper [`fork_early`] made, until a native backend takes it.
static EARLY: std::sync::Mutex<Option<Preforked>> = std::sync::Mutex::new(None);

/// Forks the helper of this process's one run now, at the start of a one-shot
/// command (`airlock run`), before the policy and the knowledge base are
/// loaded: the child's address space is then small, and init, a clone of it,
/// forks the command faster. A native backend opened with
/// [`crate::OpenOptions::prefork_helper`] takes it; opening any other backend
/// lets it go. Does nothing where forking is not safe.
pub fn fork_early() {
    if let Some(helper) = prefork() {
        if let Ok(mut early) = EARLY.lock() {
            *early = Some(helper);
        }
    }
}

/// The helper [`fork_early`] made, if any.
pub(crate) fn take_early() -> Option<Preforked> {
    EARLY.lock().ok()?.take()
}

/// Lets the early helper go (another backend runs the command) and reaps it.
pub(crate) fn discard_early() {
    if let Some(unused) = take_early() {
        unused.let_go();
    }
}

/// Where this process's argv and environment strings live, from
/// `/proc/self/stat` (fields 48–51), if this process has no other thread.
fn single_threaded_strings() -> Option<[(usize, usize); 2]> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the command name, which may itself hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<usize> = rest
        .split_ascii_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // fields[0] is field 3 (state): field N is fields[N - 3].
    let field = |n: usize| fields.get(n - 3).copied();
    if field(20)? != 1 {
        return None;
    }
    let (arg_start, arg_end) = (field(48)?, field(49)?);
    let (env_start, env_end) = (field(50)?, field(51)?);
    if arg_start == 0 || arg_end < arg_start || env_start == 0 || env_end < env_start {
        return None;
    }
    Some([(arg_start, arg_end), (env_start, env_end)])
}

/// Forks a helper that waits for its request, or `None` where that cannot be
/// done safely (another thread exists, `/proc` unreadable) or the fork failed:
/// the caller then spawns one as usual.
pub(crate) fn prefork() -> Option<Preforked> {
    let strings = single_threaded_strings()?;
    let keep_env = kept_env();
    let scrub = scrub_enabled();
    let (stdin_r, stdin_w) = sys::pipe().ok()?;
    let (stdout_r, stdout_w) = sys::pipe().ok()?;
    let (stderr_r, stderr_w) = sys::pipe().ok()?;
    let (req_r, req_w) = sys::pipe().ok()?;
    let (rep_r, rep_w) = sys::pipe().ok()?;
    let (ctl_r, ctl_w) = sys::pipe().ok()?;
    // The child inherits this process's buffered output; it must not write it.
    let _ = io::stdout().flush();
    let pid = sys::fork().ok()?;
    if pid == 0 {
        let passed: [RawFd; 6] = [
            stdin_r.as_raw_fd(),
            stdout_w.as_raw_fd(),
            stderr_w.as_raw_fd(),
            req_r.as_raw_fd(),
            rep_w.as_raw_fd(),
            ctl_r.as_raw_fd(),
        ];
        become_helper(&passed, strings, scrub, &keep_env);
    }
    drop((stdin_r, stdout_w, stderr_w, req_r, rep_w, ctl_r));
    // Its preparation runs beside this process's judgment of the command,
    // not after it (it restores the mask once prepared).
    sys::run_beside_me(pid);
    Some(Preforked {
        process: HelperProcess::forked(pid, Some(File::from(stdin_w)), stdout_r, stderr_r),
        request: req_w,
        report: rep_r,
        control: ctl_w,
    })
}

/// The child's side: never returns.
fn become_helper(
    passed: &[RawFd; 6],
    strings: [(usize, usize); 2],
    scrub: bool,
    keep_env: &[(CString, CString)],
) -> ! {
    // Fds first: the pipes to 0..=5, then nothing else stays open.
    let pairs: [(RawFd, RawFd); 6] = std::array::from_fn(|i| (passed[i], i as RawFd));
    if sys::place_fds(&pairs).is_err() {
        sys::exit_now(127);
    }
    sys::close_from(6);
    if scrub {
        for (start, end) in strings {
            // Zeroing them changes only what /proc shows and what std::env
            // reads, and the environment is emptied right after.
            // SAFETY: [start, end) is where the kernel says this process's argv and environment strings are: its initial stack, mapped writable, a private copy since the fork.
            unsafe { std::ptr::write_bytes(start as *mut u8, 0, end - start) };
        }
        // SAFETY: this process has one thread (checked before the fork), so
        // nothing else reads the environment while it changes.
        unsafe {
            libc::clearenv();
            for (name, value) in keep_env {
                libc::setenv(name.as_ptr(), value.as_ptr(), 1);
            }
        }
    }
    // SAFETY: chdir with a NUL-terminated literal.
    unsafe { libc::chdir(c"/".as_ptr()) };
    super::helper::preforked_helper_main()
}

/// The variables a spawned helper is given ([`protocol::HELPER_ENV`]), read
/// before the fork: the child empties its environment before it sets them.
fn kept_env() -> Vec<(CString, CString)> {
    use std::os::unix::ffi::OsStrExt;
    protocol::HELPER_ENV
        .iter()
        .filter_map(|name| {
            let value = std::env::var_os(name)?;
            Some((
                CString::new(*name).ok()?,
                CString::new(value.as_bytes()).ok()?,
            ))
        })
        .collect()
}

fn scrub_enabled() -> bool {
    #[cfg(debug_assertions)]
    {
        std::env::var_os(PREFORK_SCRUB_OFF).is_none_or(|v| v != "1")
    }
    #[cfg(not(debug_assertions))]
    {
        true
    }
}

/// The protocol's fd numbers are the ones [`become_helper`] fills.
const _: () =
    assert!(protocol::FD_REQUEST == 3 && protocol::FD_REPORT == 4 && protocol::FD_CONTROL == 5);
