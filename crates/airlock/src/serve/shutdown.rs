//! Orderly shutdown on SIGTERM/SIGINT: stop accepting, let running sandboxes
//! finish up to a deadline, then kill what is left and wait for the backend to
//! tear it down, so that nothing outlives the server.

use crate::serve::service::Service;
use std::time::{Duration, Instant};

/// SIGTERM and SIGINT, caught from [`Signals::install`] on: installed before
/// the server's socket exists, so that a supervisor that sees the socket and
/// stops the server gets a drain, not the default action's sudden death (which
/// would leave the socket file and any running sandbox's state behind).
pub struct Signals {
    term: Option<tokio::signal::unix::Signal>,
    int: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Catches both from now on (inside the runtime). A signal that cannot be
    /// caught keeps its default action and is never reported.
    pub fn install() -> Signals {
        use tokio::signal::unix::{signal, SignalKind};
        Signals {
            term: signal(SignalKind::terminate()).ok(),
            int: signal(SignalKind::interrupt()).ok(),
        }
    }

    /// Resolves on the first SIGTERM or SIGINT.
    pub async fn recv(mut self) -> &'static str {
        let (Some(term), Some(int)) = (self.term.as_mut(), self.int.as_mut()) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        }
    }
}

/// Wait for running sandboxes; past `grace`, kill them. Returns how many were
/// still running at the deadline.
pub async fn drain(service: &Service, grace: Duration) -> usize {
    let deadline = Instant::now() + grace;
    while service.admission.running() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let left = service.admission.running();
    if left == 0 {
        return 0;
    }
    eprintln!("airlock serve: {left} sandbox(es) still running after {grace:?}; killing them");
    // Kill each sandbox's PID 1 (the helper's child): the whole PID namespace
    // dies with it, and the helper, still alive, tears down the cgroup, mounts
    // and run directory as after any other end, and reports the outcome.
    let killed = kill(&sandbox_inits());
    eprintln!("airlock serve: sent SIGKILL to {killed} sandbox init process(es)");
    let teardown = Instant::now() + Duration::from_secs(5);
    while service.admission.running() > 0 && Instant::now() < teardown {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A helper still building its sandbox has no init yet: kill the helper
    // itself (its half-built state is cleaned at the next start).
    if service.admission.running() > 0 {
        let helpers = kill(&child_pids(std::process::id()));
        eprintln!("airlock serve: sent SIGKILL to {helpers} sandbox helper(s) still setting up");
        let teardown = Instant::now() + Duration::from_secs(5);
        while service.admission.running() > 0 && Instant::now() < teardown {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    left
}

/// The server starts no process of its own: its only children are the sandbox
/// helpers the backend started, and their children are the sandboxes' PID 1.
fn sandbox_inits() -> Vec<u32> {
    child_pids(std::process::id())
        .into_iter()
        .flat_map(child_pids)
        .collect()
}

fn kill(pids: &[u32]) -> usize {
    let mut killed = 0;
    for &pid in pids {
        let pid = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw);
        if let Some(pid) = pid {
            if rustix::process::kill_process(pid, rustix::process::Signal::KILL).is_ok() {
                killed += 1;
            }
        }
    }
    killed
}

/// Direct children of `pid`, from `/proc/PID/task/*/children` (every thread
/// may have forked one).
pub fn child_pids(pid: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return pids;
    };
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            pids.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    pids.sort_unstable();
    pids.dedup();
    pids
}
