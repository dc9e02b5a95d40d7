//! The helper's view of the cgroup layer: one cgroup per run, named
//! `run-<helper pid>-<request id>` so that a later helper can tell a crashed
//! run (its helper pid is gone) from a live one.

use super::cgroup::{Cgroup, CgroupHost, CgroupLimits};
use crate::{Limits, SandboxError};
use std::cell::RefCell;

/// The prefix of every run cgroup's name.
pub const PREFIX: &str = "run-";

#[derive(Debug, Default, Clone, Copy)]
pub struct RunStats {
    pub cpu_ms: u64,
    pub peak_memory_bytes: u64,
    pub oom_killed: bool,
    pub pids_limit_hit: bool,
}

/// The run's cgroup, or none (rootless mode without a cgroup this user may
/// manage, accepted by `[limits] enforcement = "best_effort"`): then every
/// method does nothing, the PID namespace still takes the whole tree down with
/// init, and rlimits stand in for the limits.
pub struct RunCgroup {
    cgroup: RefCell<Option<Cgroup>>,
}

impl RunCgroup {
    /// Detects the host's layout, removes crashed runs' cgroups and creates
    /// this run's with the limits in force.
    pub fn create(request_id: &str, limits: &Limits) -> Result<RunCgroup, SandboxError> {
        Self::create_on(&CgroupHost::detect()?, request_id, limits)
    }

    /// As [`RunCgroup::create`], on a given layout (a delegated v2 subtree).
    pub fn create_on(
        host: &CgroupHost,
        request_id: &str,
        limits: &Limits,
    ) -> Result<RunCgroup, SandboxError> {
        let _ = host.clean_stale(PREFIX);
        let name = format!("{PREFIX}{}-{request_id}", std::process::id());
        let cgroup = host.create(&name, &CgroupLimits::from_limits(limits))?;
        Ok(RunCgroup {
            cgroup: RefCell::new(Some(cgroup)),
        })
    }

    /// No cgroup at all (see the type's docs).
    pub fn none() -> RunCgroup {
        RunCgroup {
            cgroup: RefCell::new(None),
        }
    }

    pub fn is_none(&self) -> bool {
        self.cgroup.borrow().is_none()
    }

    pub fn add(&self, pid: libc::pid_t) -> Result<(), SandboxError> {
        match &*self.cgroup.borrow() {
            Some(c) => c.add_pid(pid),
            None => Ok(()),
        }
    }

    pub fn kill_all(&self) {
        if let Some(c) = &*self.cgroup.borrow() {
            let _ = c.kill_all();
        }
    }

    pub fn stats(&self) -> RunStats {
        match self.cgroup.borrow().as_ref().map(|c| c.stats()) {
            Some(Ok(s)) => RunStats {
                cpu_ms: s.cpu_usage_ns / 1_000_000,
                peak_memory_bytes: s.peak_memory_bytes,
                oom_killed: s.oom_killed,
                pids_limit_hit: s.pids_limit_hit,
            },
            _ => RunStats::default(),
        }
    }

    /// Kills what is left and removes the cgroup; errors go to the caller's notes.
    pub fn destroy(&self) -> Result<(), SandboxError> {
        match &mut *self.cgroup.borrow_mut() {
            Some(c) => c.destroy(),
            None => Ok(()),
        }
    }
}
