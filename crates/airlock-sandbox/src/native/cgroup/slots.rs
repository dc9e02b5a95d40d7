//! Reused run groups on cgroup v1: `airlock/slot-<n>`.
//!
//! Making a group in each of v1's five hierarchies and removing it after the
//! run (and the kernel's deferred release of five groups) cost a cold run
//! about 0.9 ms here, a tenth of it (`bench/results/cgroup-slots-2026-12-06.txt`).
//! So a run takes a slot instead:
//!
//! * held by an exclusive `flock` on `/run/airlock/cgroup-slots/<name>.lock`
//!   for the run's life (the helper's, and its init's copy: a slot is free
//!   once both are gone): concurrent runs, of any state directory, take
//!   different slots, and a holder that crashed lets go with its last
//!   descriptor. A regular file, not the group's directory: init keeps the
//!   helper's descriptors, and a directory of the host's cgroupfs among them
//!   is what `tests/escape` `fs_proc_fd_walk` looks for;
//! * emptied before use: a crashed holder may have left members, which are
//!   killed first;
//! * removed, for the next taker to make anew, when its counters cannot be
//!   reset (`memory.oom_control`'s `oom_kill`, `pids.events`' `max`): a run
//!   must not report the OOM kill or the pids-limit hit of an earlier one
//!   (this run takes the next slot); the others are reset
//!   (`memory.max_usage_in_bytes`, `cpuacct.usage`), and the memory still
//!   charged to the slot (page cache an earlier run read first) is the peak's
//!   baseline;
//! * emptied again and left in place when the run ends.
//!
//! When all [`SLOTS`] are held, or on v2 (where `clone3(CLONE_INTO_CGROUP)`
//! already spares the migration), a run makes a group of its own as before.

use super::fs::{keyed_value, mkdir, single_value, write_file};
use super::{group_dir, Cgroup, CgroupHost, Layout, V1Roots, PARENT};
use crate::SandboxError;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

/// Slots at most; a run beyond them makes a group of its own.
pub const SLOTS: u32 = 32;

/// Slot groups' names: `slot-<n>` (not the `run-` names `clean_stale` sweeps).
pub const SLOT_PREFIX: &str = "slot-";

/// Where the slots' lock files live (root's tmpfs: gone at reboot, as the
/// groups are).
const LOCK_DIR: &str = "/run/airlock/cgroup-slots";

/// A held slot: the lock, and the memory charged to it when it was taken.
#[derive(Debug)]
pub(super) struct Slot {
    /// The slot's lock file, `flock`ed exclusively; closing it lets go.
    _lock: File,
    /// Bytes charged to the group when it was taken: the peak's baseline.
    pub(super) memory_baseline: u64,
}

impl CgroupHost {
    /// A free slot with no member and fresh counters (v1 only), or `None`:
    /// v2, every slot held, or a failure (the caller makes a group of its
    /// own then; whatever went wrong is the fresh group's to report).
    pub fn claim_slot(&self) -> Option<Cgroup> {
        let Layout::V1(v1) = &self.layout else {
            return None;
        };
        (0..SLOTS).find_map(|n| self.try_slot(v1, &format!("{SLOT_PREFIX}{n}")))
    }

    fn try_slot(&self, v1: &V1Roots, name: &str) -> Option<Cgroup> {
        let lock = lock_file(name).ok()?;
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return None;
        }
        let mut cgroup = self.existing(name);
        if cgroup.dirs.len() != self.roots().len() {
            // New, removed after a limit was hit, or removed from outside.
            cgroup.dirs = self.make_dirs(name).ok()?;
        }
        // Holding the lock, nothing else writes the group: leave it as a
        // fresh group would be, or not at all.
        cgroup.slot = Some(Slot {
            _lock: lock,
            memory_baseline: 0,
        });
        match refresh(v1, &mut cgroup) {
            Ok(Some(baseline)) => {
                if let Some(slot) = cgroup.slot.as_mut() {
                    slot.memory_baseline = baseline;
                }
                Some(cgroup)
            }
            // Removed (see the module's docs), or unusable: let it go as it
            // is (the next taker tries again).
            Ok(None) | Err(_) => {
                cgroup.destroyed = true;
                None
            }
        }
    }

    /// Makes what is missing of group `name`; its directories.
    fn make_dirs(&self, name: &str) -> Result<Vec<std::path::PathBuf>, SandboxError> {
        let mut dirs = Vec::new();
        for root in self.roots() {
            mkdir(&root.join(PARENT), true)?;
            let dir = group_dir(&root, name);
            mkdir(&dir, true)?;
            dirs.push(dir);
        }
        Ok(dirs)
    }
}

/// Empties a just-taken slot and resets what a run reads of it; returns the
/// memory still charged to it, or `None` when the slot had to be removed.
fn refresh(v1: &V1Roots, cgroup: &mut Cgroup) -> Result<Option<u64>, SandboxError> {
    let name = cgroup.name.clone();
    if !cgroup.members()?.is_empty() {
        cgroup.kill_all()?;
    }
    let memory = group_dir(&v1.memory, &name);
    let pids = group_dir(&v1.pids, &name);
    let hit = keyed_value(&memory.join("memory.oom_control"), "oom_kill")? > 0
        || keyed_value(&pids.join("pids.events"), "max")? > 0;
    if hit {
        // Counters that only grow: removed, made anew by its next taker.
        super::kill::remove_dirs(&mut cgroup.dirs)?;
        return Ok(None);
    }
    write_file(&memory.join("memory.max_usage_in_bytes"), "0")?;
    write_file(&group_dir(&v1.cpuacct, &name).join("cpuacct.usage"), "0")?;
    single_value(&memory.join("memory.usage_in_bytes")).map(Some)
}

/// The slots that exist, how many of them a run holds now, and those no run
/// holds that still have members (a leftover the next taker kills; `airlock
/// doctor` names them, and the tests assert there are none after a run).
#[derive(Debug, Clone)]
pub struct SlotCensus {
    pub kept: u32,
    pub held: u32,
    pub stray: Vec<String>,
}

impl CgroupHost {
    /// The slots under the first hierarchy's `airlock/` (v1 only). A slot is
    /// held while its lock file cannot be share-locked; looking takes the
    /// shared lock for an instant, which only sends a run taking that very
    /// slot at that instant on to the next one.
    pub fn slot_census(&self) -> Option<SlotCensus> {
        self.census_of((0..SLOTS).map(|n| format!("{SLOT_PREFIX}{n}")))
    }

    /// Empties the slots no run holds that still have members: a helper
    /// killed outright leaves its run's processes in its slot (an OCI
    /// runtime's container, in a group below it, outlives the helper). The
    /// caller of such a helper calls this, so that they do not live on until
    /// a later run takes that slot. Returns the slots emptied.
    pub fn empty_stray_slots(&self) -> Vec<String> {
        let stray = self.slot_census().map(|c| c.stray).unwrap_or_default();
        self.empty_slots(stray)
    }

    fn empty_slots(&self, names: Vec<String>) -> Vec<String> {
        let Layout::V1(v1) = &self.layout else {
            return Vec::new();
        };
        // Taking a slot empties it; its drop removes the groups below it.
        names
            .into_iter()
            .filter(|name| self.try_slot(v1, name).is_some())
            .collect()
    }

    fn census_of(&self, names: impl Iterator<Item = String>) -> Option<SlotCensus> {
        let Layout::V1(_) = &self.layout else {
            return None;
        };
        let parent = self.roots().into_iter().next()?.join(PARENT);
        let mut census = SlotCensus {
            kept: 0,
            held: 0,
            stray: Vec::new(),
        };
        for name in names {
            if !parent.join(&name).is_dir() {
                continue;
            }
            census.kept += 1;
            // Held open (and share-locked, if free) until the members are
            // read: no run can take the slot in between.
            let lock = File::open(Path::new(LOCK_DIR).join(format!("{name}.lock")));
            // SAFETY: flock on a descriptor this function owns; closing it
            // at the end of this iteration lets go.
            let held = lock.as_ref().is_ok_and(|l| unsafe {
                libc::flock(l.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) != 0
            });
            if held {
                census.held += 1;
            } else {
                let mut slot = self.existing(&name);
                slot.destroyed = true; // only looked at: its drop removes nothing
                if !slot.members().unwrap_or_default().is_empty() {
                    census.stray.push(name);
                }
            }
            drop(lock);
        }
        Some(census)
    }
}

/// The lock file of slot `name`, made (with its directory, root's only) if
/// missing.
fn lock_file(name: &str) -> std::io::Result<File> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let path = Path::new(LOCK_DIR).join(format!("{name}.lock"));
    let open = || {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(&path)
    };
    // Every run opens one: the directory is made only when the open says so.
    match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(LOCK_DIR)?;
            open()
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::cgroup::tests::*;

    fn v1(host: &CgroupHost) -> V1Roots {
        match &host.layout {
            Layout::V1(v1) => v1.clone(),
            Layout::V2(_) => panic!("this machine mounts v1 controllers"),
        }
    }

    /// A slot of this test's own (other tests' runs take `slot-<n>`).
    fn own_slot(tag: &str) -> String {
        format!("{SLOT_PREFIX}{}", unique(tag))
    }

    /// As if the slot's holder died: the lock goes, the teardown never runs.
    fn crash(mut holder: Cgroup) {
        holder.slot = None;
        holder.destroyed = true;
    }

    fn remove(host: &CgroupHost, name: &str) {
        let mut dirs = host.existing(name).dirs.clone();
        let _ = crate::native::cgroup::kill::remove_dirs(&mut dirs);
        let _ = std::fs::remove_file(Path::new(LOCK_DIR).join(format!("{name}.lock")));
    }

    /// Held by one run at a time; emptied and kept when the run ends, taken
    /// again with no member and fresh counters.
    #[test]
    fn a_slot_is_held_by_one_run_and_kept_empty_after_it() {
        let host = v1_host();
        let v1 = v1(&host);
        let name = own_slot("held");
        // Forked before the claim: a fork holds the lock's descriptor too.
        let (pid, go) = spawn_waiting(|| 0);
        let mut first = host.try_slot(&v1, &name).expect("a free slot");
        assert!(host.try_slot(&v1, &name).is_none(), "taken twice");
        first.add_pid(pid).unwrap();
        first.destroy().unwrap();
        let status = wait(pid);
        assert!(libc::WIFSIGNALED(status), "the member outlived its run");
        release(go);
        let dirs = first.dirs().to_vec();
        assert!(dirs.iter().all(|d| d.is_dir()), "the slot was removed");

        let again = host.try_slot(&v1, &name).expect("free again");
        assert!(again.members().unwrap().is_empty());
        assert_eq!(again.stats().unwrap().cpu_usage_ns, 0, "cpu time reset");
        drop(again);
        remove(&host, &name);
    }

    /// A holder killed mid-run can leave a group below its slot (an OCI
    /// runtime makes the container's there), with a process in it: the next
    /// taker kills that process, and its teardown leaves the slot a leaf
    /// (a group left there would make every later teardown of the slot wait
    /// out the ten-second timeout).
    #[test]
    fn a_group_left_below_a_slot_is_emptied_and_removed_by_the_next_run() {
        let host = v1_host();
        let v1 = v1(&host);
        let name = own_slot("nested");
        let (pid, go) = spawn_waiting(pause_forever);
        let first = host.try_slot(&v1, &name).expect("a free slot");
        let nested: Vec<_> = first
            .dirs()
            .iter()
            .map(|d| d.join("runtime-made"))
            .collect();
        for dir in &nested {
            std::fs::create_dir(dir).unwrap();
            std::fs::write(dir.join("cgroup.procs"), pid.to_string()).unwrap();
        }
        release(go);
        crash(first);

        let started = std::time::Instant::now();
        let mut next = host.try_slot(&v1, &name).expect("the slot is usable");
        let status = wait_dying(pid);
        assert!(
            libc::WIFSIGNALED(status),
            "the nested member outlived the claim"
        );
        assert!(next.members().unwrap().is_empty());
        next.destroy().unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(
            next.dirs().iter().all(|d| d.is_dir()),
            "the slot was removed"
        );
        assert_gone(&nested);
        remove(&host, &name);
    }

    /// A slot whose holder died with members left (and no run holding it) is
    /// emptied on demand; a held slot is not touched.
    #[test]
    fn stray_slots_are_emptied_and_held_ones_left_alone() {
        let host = v1_host();
        let v1 = v1(&host);
        let (stray, held) = (own_slot("stray"), own_slot("busy"));
        let (lost, go_lost) = spawn_waiting(pause_forever);
        let (kept, go_kept) = spawn_waiting(pause_forever);
        let crashed = host.try_slot(&v1, &stray).expect("a free slot");
        let below: Vec<_> = crashed.dirs().iter().map(|d| d.join("ctr")).collect();
        for dir in &below {
            std::fs::create_dir(dir).unwrap();
            std::fs::write(dir.join("cgroup.procs"), lost.to_string()).unwrap();
        }
        crash(crashed);
        let mut running = host.try_slot(&v1, &held).expect("a free slot");
        running.add_pid(kept).unwrap();
        release(go_lost);
        release(go_kept);

        let emptied = host.empty_slots(vec![stray.clone(), held.clone()]);
        assert_eq!(emptied, vec![stray.clone()]);
        assert!(libc::WIFSIGNALED(wait_dying(lost)));
        assert_gone(&below);
        assert_eq!(
            running.members().unwrap(),
            vec![kept],
            "a held slot was emptied"
        );
        running.destroy().unwrap();
        assert!(libc::WIFSIGNALED(wait_dying(kept)));
        remove(&host, &stray);
        remove(&host, &held);
    }

    /// `airlock doctor`'s count: a slot is kept from its first run on, and
    /// held only while a run has it.
    #[test]
    fn the_census_counts_kept_and_held_slots() {
        let host = v1_host();
        let v1 = v1(&host);
        let name = own_slot("census");
        let census = || {
            let c = host.census_of(std::iter::once(name.clone())).unwrap();
            (c.kept, c.held, c.stray)
        };
        assert_eq!(census(), (0, 0, vec![]));
        let mut run = host.try_slot(&v1, &name).expect("a free slot");
        assert_eq!(census(), (1, 1, vec![]));
        run.destroy().unwrap();
        drop(run);
        assert_eq!(census(), (1, 0, vec![]));
        // A holder that died without its teardown: a member, no holder.
        let (pid, go) = spawn_waiting(|| 0);
        let crashed = host
            .try_slot(&v1, &name)
            .expect("free after the census looked");
        crashed.add_pid(pid).unwrap();
        crash(crashed);
        let stray = census();
        release(go);
        wait(pid);
        assert_eq!(stray, (1, 0, vec![name.clone()]));
        remove(&host, &name);
        assert_eq!(census(), (0, 0, vec![]));
    }

    /// A slot keeps its last run's limits: the next run's may be larger or
    /// smaller, and both are written (v1 refuses a memory limit above
    /// `memsw`'s, so raising writes `memsw` first).
    #[test]
    fn a_slot_takes_a_larger_or_smaller_limit_than_its_last_run() {
        let host = v1_host();
        let v1 = v1(&host);
        let name = own_slot("limits");
        let mem = group_dir(&v1.memory, &name);
        let read = |f: &str| read(&mem.join(f)).trim().to_string();
        for bytes in [32 * MIB, 256 * MIB, 48 * MIB] {
            let mut run = host.try_slot(&v1, &name).expect("free");
            run.limit(&limits(bytes, 8, 1.0)).unwrap();
            assert_eq!(read("memory.limit_in_bytes"), bytes.to_string());
            if mem.join("memory.memsw.limit_in_bytes").exists() {
                assert_eq!(read("memory.memsw.limit_in_bytes"), bytes.to_string());
            }
            run.destroy().unwrap();
        }
        remove(&host, &name);
    }

    /// A holder that died without its teardown leaves members: the next
    /// taker kills them before anything of its own runs there.
    #[test]
    fn what_a_crashed_holder_left_in_a_slot_is_killed_first() {
        let host = v1_host();
        let v1 = v1(&host);
        let name = own_slot("crashed");
        let (pid, go) = spawn_waiting(|| 0);
        let crashed = host.try_slot(&v1, &name).unwrap();
        crashed.add_pid(pid).unwrap();
        crash(crashed);

        let next = host.try_slot(&v1, &name).expect("the lock went with it");
        assert!(next.members().unwrap().is_empty());
        let status = wait(pid);
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL,
            "{status:#x}"
        );
        release(go);
        drop(next);
        remove(&host, &name);
    }

    /// A run that hit the pids limit leaves `pids.events max` above 0, which
    /// cannot be reset: the slot is removed rather than handed on, so the
    /// next run does not report a hit it did not have.
    #[test]
    fn a_slot_whose_run_hit_a_limit_is_not_handed_on() {
        let host = v1_host();
        let v1 = v1(&host);
        let name = own_slot("hit");
        let (pid, go) = spawn_waiting(|| {
            // SAFETY: fork in a single-threaded child.
            match unsafe { libc::fork() } {
                0 => {
                    // SAFETY: the grandchild leaves at once, running nothing.
                    unsafe { libc::_exit(0) }
                }
                -1 => 0,
                _ => 1,
            }
        });
        let mut run = host.try_slot(&v1, &name).unwrap();
        run.limit(&limits(64 * MIB, 1, 1.0)).unwrap();
        run.add_pid(pid).unwrap();
        release(go);
        assert_eq!(libc::WEXITSTATUS(wait(pid)), 0, "the fork was allowed");
        assert!(run.stats().unwrap().pids_limit_hit);
        let dirs = run.dirs().to_vec();
        run.destroy().unwrap();

        assert!(
            host.try_slot(&v1, &name).is_none(),
            "handed on with the hit"
        );
        assert_gone(&dirs);
        let fresh = host.try_slot(&v1, &name).expect("made anew");
        assert!(!fresh.stats().unwrap().pids_limit_hit);
        drop(fresh);
        remove(&host, &name);
    }
}
