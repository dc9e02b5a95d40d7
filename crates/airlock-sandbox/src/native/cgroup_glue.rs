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

pub struct RunCgroup {
    cgroup: RefCell<Cgroup>,
}

impl RunCgroup {
    /// Detects the host's layout, removes crashed runs' cgroups and creates
    /// this run's with the limits in force.
    pub fn create(request_id: &str, limits: &Limits) -> Result<RunCgroup, SandboxError> {
        let host = CgroupHost::detect()?;
        let _ = host.clean_stale(PREFIX);
        let name = format!("{PREFIX}{}-{request_id}", std::process::id());
        let cgroup = host.create(&name, &CgroupLimits::from_limits(limits))?;
        Ok(RunCgroup {
            cgroup: RefCell::new(cgroup),
        })
    }

    pub fn add(&self, pid: libc::pid_t) -> Result<(), SandboxError> {
        self.cgroup.borrow().add_pid(pid)
    }

    pub fn kill_all(&self) {
        let _ = self.cgroup.borrow().kill_all();
    }

    pub fn stats(&self) -> RunStats {
        match self.cgroup.borrow().stats() {
            Ok(s) => RunStats {
                cpu_ms: s.cpu_usage_ns / 1_000_000,
                peak_memory_bytes: s.peak_memory_bytes,
                oom_killed: s.oom_killed,
                pids_limit_hit: s.pids_limit_hit,
            },
            Err(_) => RunStats::default(),
        }
    }

    /// Kills what is left and removes the cgroup; errors go to the caller's notes.
    pub fn destroy(&self) -> Result<(), SandboxError> {
        self.cgroup.borrow_mut().destroy()
    }
}
