//! The helper's view of the cgroup layer: one cgroup per run, named
//! `run-<helper pid>-<request id>` so that a later helper can tell a crashed
//! run (its helper pid is gone) from a live one.

use super::cgroup::{Cgroup, CgroupHost, CgroupJoin, CgroupLimits};
use crate::sys;
use crate::{Limits, SandboxError};
use std::cell::{Cell, RefCell};
use std::os::fd::{AsFd, OwnedFd};

/// The prefix of every run cgroup's name.
pub const PREFIX: &str = "run-";

#[derive(Debug, Default, Clone, Copy)]
pub struct RunStats {
    pub cpu_ms: u64,
    pub peak_memory_bytes: u64,
    pub oom_killed: bool,
    pub pids_limit_hit: bool,
}

/// Debug builds only: with this variable set to `1` (passed from the caller to
/// the helper), init does not join its cgroup itself; the helper lets init go
/// on before moving it into its cgroup and moves it 300 ms later, so that init
/// forks the command outside the run's cgroup (v1; on v2 init is born in it):
/// the ordering as it would be without the wait, so that the escape corpus can show
/// `res_memory_first_instruction` failing (`run.py --cgroup-attach-late`).
/// Release builds have no such switch.
#[cfg(debug_assertions)]
pub const CGROUP_ATTACH_LATE: &str = "AIRLOCK_TEST_CGROUP_ATTACH_LATE";

/// See [`CGROUP_ATTACH_LATE`].
pub fn attach_late() -> bool {
    #[cfg(debug_assertions)]
    {
        std::env::var_os(CGROUP_ATTACH_LATE).is_some_and(|v| v == "1")
    }
    #[cfg(not(debug_assertions))]
    {
        false
    }
}

/// What a helper forked in advance makes of the cgroup layer while the caller
/// judges the command (root mode; [`prepare_early`]). A request that never
/// comes, or fails before the group is used, drops it: `Cgroup`'s own drop
/// removes the group.
pub struct Prepared {
    host: CgroupHost,
    /// A free slot (v1, [`CgroupHost::claim_slot`]), else
    /// `run-<helper pid>-forked`; no limits yet: the request brings them.
    cgroup: Option<Cgroup>,
}

/// Detects the layout and creates this run's group, off the critical path.
/// `None` when there is no usable layout: the run then detects it again and
/// reports why.
pub fn prepare_early() -> Option<Prepared> {
    let host = CgroupHost::detect().ok()?;
    let cgroup = host
        .claim_slot()
        .or_else(|| host.create_empty(&run_name("forked")).ok());
    Some(Prepared { host, cgroup })
}

/// `slot` with `limits` written; if they cannot be (an earlier run's memory
/// charge above a lower limit), a group of the run's own instead, and a note
/// says so (slower, not weaker; `AIRLOCK_PROFILE=1` shows the notes).
fn limited_slot(
    host: &CgroupHost,
    mut slot: Cgroup,
    request_id: &str,
    limits: &CgroupLimits,
    notes: &mut Vec<String>,
) -> Result<Cgroup, SandboxError> {
    let Err(e) = slot.limit(limits) else {
        return Ok(slot);
    };
    notes.push(format!(
        "cgroup {} could not take this run's limits ({e}); a group of the run's own instead",
        slot.name()
    ));
    let _ = slot.destroy();
    host.create(&run_name(request_id), limits)
}

/// A run's group: `run-<helper pid>-<request id>`.
fn run_name(request_id: &str) -> String {
    format!("{PREFIX}{}-{request_id}", std::process::id())
}

/// How init comes into the run's cgroup ([`RunCgroup::entry`]), decided
/// before it is cloned.
pub enum Entry {
    /// No cgroup: nothing to enter.
    None,
    /// cgroup v2: born in it, `clone3(CLONE_INTO_CGROUP)` into this directory.
    Born(OwnedFd),
    /// cgroup v1: init moves itself in, first thing, through these files
    /// (see [`CgroupJoin::join_self`]: no kernel-wide lock, so no RCU grace
    /// period to wait for).
    JoinsItself(CgroupJoin),
    /// The helper moves init in ([`RunCgroup::add`]) before letting it fork.
    Attach,
}

impl Entry {
    /// The files init writes to join its cgroup, if it joins itself.
    pub fn join(&self) -> Option<&CgroupJoin> {
        match self {
            Entry::JoinsItself(j) => Some(j),
            _ => None,
        }
    }
}

/// Where a freshly cloned init stands (see [`RunCgroup::clone_init`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// In its cgroup before it may fork, with nothing for the helper to do:
    /// born there, joining itself, or there is no cgroup.
    Settled,
    /// Outside it (clone3 refused, or the helper moves it): [`RunCgroup::add`]
    /// it before it may fork.
    Attach,
}

/// The run's cgroup, or none (rootless mode without a cgroup this user may
/// manage, accepted by `[limits] enforcement = "best_effort"`): then every
/// method does nothing, the PID namespace still takes the whole tree down with
/// init, and rlimits stand in for the limits.
pub struct RunCgroup {
    cgroup: RefCell<Option<Cgroup>>,
    /// [`RunCgroup::destroy`] also removes crashed runs' groups.
    sweep_stale: Cell<bool>,
}

impl RunCgroup {
    /// Detects the host's layout and creates this run's cgroup with the
    /// limits in force.
    pub fn create(
        request_id: &str,
        limits: &Limits,
        notes: &mut Vec<String>,
    ) -> Result<RunCgroup, SandboxError> {
        Self::create_on(&CgroupHost::detect()?, request_id, limits, notes)
    }

    /// As [`RunCgroup::create`], on a given layout (a delegated v2 subtree).
    pub fn create_on(
        host: &CgroupHost,
        request_id: &str,
        limits: &Limits,
        notes: &mut Vec<String>,
    ) -> Result<RunCgroup, SandboxError> {
        let limits = CgroupLimits::from_limits(limits);
        let cgroup = match host.claim_slot() {
            Some(slot) => limited_slot(host, slot, request_id, &limits, notes)?,
            None => host.create(&run_name(request_id), &limits)?,
        };
        Ok(RunCgroup::holding(Some(cgroup)))
    }

    /// The group [`prepare_early`] made, with the run's limits written now;
    /// made here if it could not be made then. On failure the group is
    /// removed by its own drop.
    pub fn from_prepared(
        mut prepared: Prepared,
        request_id: &str,
        limits: &Limits,
        notes: &mut Vec<String>,
    ) -> Result<RunCgroup, SandboxError> {
        let limits = CgroupLimits::from_limits(limits);
        let cgroup = match prepared.cgroup.take() {
            Some(c) if c.is_slot() => limited_slot(&prepared.host, c, request_id, &limits, notes)?,
            Some(c) => {
                c.limit(&limits)?;
                c
            }
            None => prepared.host.create(&run_name(request_id), &limits)?,
        };
        Ok(RunCgroup::holding(Some(cgroup)))
    }

    /// No cgroup at all (see the type's docs).
    pub fn none() -> RunCgroup {
        RunCgroup::holding(None)
    }

    fn holding(cgroup: Option<Cgroup>) -> RunCgroup {
        RunCgroup {
            cgroup: RefCell::new(cgroup),
            sweep_stale: Cell::new(true),
        }
    }

    /// [`RunCgroup::destroy`] leaves crashed runs' groups to a later run
    /// (see [`super::protocol::HelperRequest::sweep_stale`]).
    pub fn skip_stale_sweep(&self) {
        self.sweep_stale.set(false);
    }

    pub fn is_none(&self) -> bool {
        self.cgroup.borrow().is_none()
    }

    /// How init will come into the cgroup: born in it on v2, joining it
    /// itself on v1. Where the files cannot be opened, the helper moves it,
    /// and a note in `notes` says why.
    pub fn entry(&self, notes: &mut Vec<String>) -> Entry {
        let cgroup = self.cgroup.borrow();
        let Some(c) = &*cgroup else {
            return Entry::None;
        };
        match c.open_clone_target() {
            Ok(Some(dir)) => return Entry::Born(dir),
            Ok(None) => {}
            Err(e) => {
                notes.push(format!(
                    "cgroup: cannot open the cgroup for clone3(CLONE_INTO_CGROUP) ({e}); init \
                     was moved into it through cgroup.procs instead"
                ));
                return Entry::Attach;
            }
        }
        if attach_late() {
            return Entry::Attach;
        }
        match c.open_join() {
            Ok(join) => Entry::JoinsItself(join),
            Err(e) => {
                notes.push(format!(
                    "cgroup: cannot open the cgroup's tasks files for init to join ({e}); init \
                     was moved into it through cgroup.procs instead"
                ));
                Entry::Attach
            }
        }
    }

    /// Clones the sandbox's init (`flags` as for [`sys::clone_process`]; 0 in
    /// the child, as fork) as `entry` says, and says whether it still has to
    /// be moved into the cgroup with [`RunCgroup::add`]. Where the kernel
    /// refuses `clone3(CLONE_INTO_CGROUP)`, init is cloned plainly and a note
    /// in `notes` says so.
    pub fn clone_init(
        &self,
        flags: libc::c_int,
        entry: &Entry,
        notes: &mut Vec<String>,
    ) -> std::io::Result<(libc::pid_t, Placement)> {
        match entry {
            Entry::Born(dir) => match sys::clone_into_cgroup(flags, dir.as_fd()) {
                Ok(pid) => Ok((pid, Placement::Settled)),
                Err(e) => {
                    notes.push(format!(
                        "cgroup: clone3(CLONE_INTO_CGROUP) refused ({e}); init was moved into \
                         its cgroup through cgroup.procs instead"
                    ));
                    Ok((sys::clone_process(flags)?, Placement::Attach))
                }
            },
            Entry::None | Entry::JoinsItself(_) => {
                Ok((sys::clone_process(flags)?, Placement::Settled))
            }
            Entry::Attach => Ok((sys::clone_process(flags)?, Placement::Attach)),
        }
    }

    pub fn add(&self, pid: libc::pid_t) -> Result<(), SandboxError> {
        match &*self.cgroup.borrow() {
            Some(c) => c.add_pid(pid),
            None => Ok(()),
        }
    }

    /// Whether `pid` is the only process left in the cgroup, as its member
    /// list reads now (false without a cgroup or when it cannot be read).
    pub fn only_member(&self, pid: libc::pid_t) -> bool {
        match &*self.cgroup.borrow() {
            Some(c) => matches!(c.members(), Ok(m) if m.iter().all(|p| *p == pid)),
            None => false,
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

    /// Kills what is left and removes the cgroup; errors go to the caller's
    /// notes. Then removes the groups runs that crashed left behind (their
    /// helper is gone): here, once this run is over, rather than on the way
    /// to its command.
    pub fn destroy(&self) -> Result<(), SandboxError> {
        match &mut *self.cgroup.borrow_mut() {
            Some(c) => {
                let destroyed = c.destroy();
                if self.sweep_stale.get() {
                    let _ = c.host().clean_stale(PREFIX);
                }
                destroyed
            }
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::cgroup::{CgroupHost, CgroupVersion};

    fn limits() -> Limits {
        Limits {
            timeout_ms: 1000,
            cpu_time_ms: 1000,
            memory_bytes: 64 << 20,
            pids: 8,
            cpus: 1.0,
            output_bytes: 1 << 20,
            tmp_bytes: 1 << 20,
            file_size_bytes: 1 << 20,
            open_files: 64,
        }
    }

    /// Clones a child that exits at once (joining the group first if that
    /// is its entry) and reaps it.
    fn clone_and_reap(cg: &RunCgroup, notes: &mut Vec<String>) -> Placement {
        let entry = cg.entry(notes);
        let (pid, placement) = cg.clone_init(0, &entry, notes).unwrap();
        if pid == 0 {
            let joined = entry.join().is_none_or(|j| j.join_self().is_ok());
            sys::exit_now(if joined { 0 } else { 1 });
        }
        let _ = sys::waitpid(pid, 0);
        placement
    }

    /// A v2 layout whose group is no cgroup at all: the kernel refuses
    /// CLONE_INTO_CGROUP (EBADF), init is cloned plainly, and the run's notes
    /// say so.
    #[test]
    fn a_refused_clone_into_cgroup_falls_back_and_says_so() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("cgroup.controllers"), "cpu memory pids\n").unwrap();
        let host = CgroupHost::v2_at(root.path());
        let cg = RunCgroup::create_on(&host, "glue", &limits(), &mut Vec::new()).unwrap();
        let mut notes = Vec::new();
        assert_eq!(clone_and_reap(&cg, &mut notes), Placement::Attach);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("clone3(CLONE_INTO_CGROUP) refused"),
            "{notes:?}"
        );
        // A plain directory keeps the limit files cgroupfs would drop with it.
        let dir = root
            .path()
            .join(format!("airlock/{PREFIX}{}-glue", std::process::id()));
        for e in std::fs::read_dir(&dir).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
        cg.destroy().unwrap();
        assert!(!dir.exists());
    }

    /// v1 has no CLONE_INTO_CGROUP: init is cloned plainly and joins its
    /// group itself, quietly; the helper has nothing to move.
    #[test]
    fn on_v1_init_joins_its_group_itself_without_a_note() {
        let host = CgroupHost::detect().expect("cgroups on this machine");
        assert_eq!(host.version(), CgroupVersion::V1);
        let cg = RunCgroup::create_on(&host, "glue", &limits(), &mut Vec::new()).unwrap();
        let mut notes = Vec::new();
        assert!(matches!(cg.entry(&mut notes), Entry::JoinsItself(_)));
        assert_eq!(clone_and_reap(&cg, &mut notes), Placement::Settled);
        assert!(notes.is_empty(), "{notes:?}");
        cg.destroy().unwrap();
    }

    /// The memory directory of what `prepared` holds, and whether it is a
    /// slot (kept, emptied, after the run) or a group of its own (removed).
    fn prepared_dir(prepared: &Prepared) -> (std::path::PathBuf, bool) {
        let cg = prepared.cgroup.as_ref().expect("a group");
        let dir = std::path::Path::new("/sys/fs/cgroup/memory/airlock").join(cg.name());
        (dir, cg.is_slot())
    }

    /// Gone (a group of the run's own), or kept empty and free (a slot).
    fn assert_released(dir: &std::path::Path, slot: bool) {
        if !slot {
            assert!(!dir.exists(), "{} left", dir.display());
            return;
        }
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap();
        assert!(procs.trim().is_empty(), "members left: {procs}");
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let lock = std::fs::File::open(format!("/run/airlock/cgroup-slots/{name}.lock")).unwrap();
        // SAFETY: flock on a descriptor this test owns.
        let free = unsafe {
            libc::flock(
                std::os::fd::AsRawFd::as_raw_fd(&lock),
                libc::LOCK_EX | libc::LOCK_NB,
            )
        } == 0;
        assert!(free, "slot {name} still held");
    }

    /// A helper forked in advance: its group exists before the request, with
    /// the request's limits once it comes, and is gone after the run.
    #[test]
    fn a_prepared_group_takes_the_requests_limits_and_goes() {
        let prepared = prepare_early().expect("cgroups on this machine");
        let (dir, slot) = prepared_dir(&prepared);
        assert!(dir.is_dir());
        let cg = RunCgroup::from_prepared(prepared, "unused", &limits(), &mut Vec::new()).unwrap();
        let limit = std::fs::read_to_string(dir.join("memory.limit_in_bytes")).unwrap();
        assert_eq!(limit.trim(), (64u64 << 20).to_string());
        cg.destroy().unwrap();
        assert_released(&dir, slot);
    }

    /// A request that never comes: dropping what was prepared lets the
    /// group go.
    #[test]
    fn an_unused_prepared_group_is_let_go_when_dropped() {
        let prepared = prepare_early().expect("cgroups on this machine");
        let (dir, slot) = prepared_dir(&prepared);
        assert!(dir.is_dir());
        drop(prepared);
        assert_released(&dir, slot);
    }
}
