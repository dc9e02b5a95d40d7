//! Orderly shutdown on SIGTERM/SIGINT: stop accepting, let running sandboxes
//! finish up to a deadline, then kill what is left and wait for the backend to
//! tear it down, so that nothing outlives the server.

use crate::serve::service::Service;
use std::time::{Duration, Instant};

/// Resolves on the first SIGTERM or SIGINT.
pub async fn signalled() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    let mut int = match signal(SignalKind::interrupt()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
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
    let killed = kill_sandbox_helpers();
    eprintln!("airlock serve: sent SIGKILL to {killed} sandbox helper(s)");
    // The backend reaps its helper and removes cgroups, mounts and temp dirs on
    // its way out of `run`; wait for that so nothing is left behind.
    let teardown = Instant::now() + Duration::from_secs(10);
    while service.admission.running() > 0 && Instant::now() < teardown {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    left
}

/// SIGKILL every direct child of this process. The server starts no process
/// of its own: its only children are the sandbox helpers the backend started,
/// each PID 1 of its sandbox, so killing one ends its whole sandbox.
fn kill_sandbox_helpers() -> usize {
    let me = std::process::id();
    let mut killed = 0;
    for pid in child_pids(me) {
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

/// Direct children, from `/proc/self/task/*/children` (every thread may have
/// forked one).
pub fn child_pids(_me: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
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
