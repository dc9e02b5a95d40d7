//! Resources layer: one cgroup per execution, written directly through cgroupfs.
//!
//! One mechanism per file, behind the [`Controller`] trait:
//!
//! * [`detect`]: which hierarchies this host offers (mountinfo), and the
//!   delegated v2 subtree an unprivileged user may manage;
//! * [`v2`]: the unified hierarchy (`memory.max`, `pids.max`, `cpu.max`, ...);
//! * [`v1`]: separate memory, pids, cpu, cpuacct and freezer hierarchies, as on
//!   this machine;
//! * [`kill`]: teardown (`cgroup.kill` on v2; freeze, SIGKILL, thaw on v1) and
//!   removal;
//! * [`slots`]: v1 groups reused from run to run, held by a lock;
//! * [`fs`]: reading and writing control files.
//!
//! This file holds the shared types ([`CgroupLimits`], [`CgroupStats`]) and
//! the work common to both layouts: name checks, creating a group with its
//! limits in force (nothing left behind on failure), attaching processes,
//! cleaning up after crashed runs.
//!
//! Names: the runtime names each cgroup `<prefix><owner pid>-<unique>`, so that
//! [`CgroupHost::clean_stale`] can tell a crashed run (owner gone) from a live one.

mod detect;
mod fs;
mod kill;
mod slots;
mod v1;
mod v2;

pub use detect::{delegated_v2, delegated_v2_in};
pub use slots::{SlotCensus, SLOTS, SLOT_PREFIX};
pub use v1::V1Roots;
pub use v2::V2;

use crate::Layer;
use crate::SandboxError;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

const LAYER: Layer = Layer::Cgroup;
/// The directory under each hierarchy root that holds airlock's cgroups.
pub const PARENT: &str = "airlock";
const CPU_PERIOD_US: u64 = 100_000;

fn err(detail: impl Into<String>) -> SandboxError {
    SandboxError::Layer {
        layer: LAYER,
        detail: detail.into(),
    }
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> SandboxError {
    err(format!("{what} {}: {e}", path.display()))
}

/// Group `name`'s directory in the hierarchy rooted at `root`.
fn group_dir(root: &Path, name: &str) -> PathBuf {
    root.join(PARENT).join(name)
}

/// What differs between the two layouts. [`CgroupHost`] and [`Cgroup`] do the
/// shared work (names, mkdir, attach, rmdir, stale cleanup) and ask the
/// layout for the rest. Every group lives at `<root>/airlock/<name>` in each
/// of [`Controller::hierarchies`].
pub trait Controller {
    fn version(&self) -> CgroupVersion;
    /// (controller, hierarchy root) pairs, for `airlock doctor`.
    fn hierarchies(&self) -> Vec<(&'static str, PathBuf)>;
    /// Makes `parent` (`<root>/airlock`) ready to hold groups: creates it if
    /// needed; v2 also hands the controllers down to it.
    fn prepare_parent(&self, parent: &Path) -> Result<(), SandboxError>;
    /// The directory whose `cgroup.procs` lists every member of group `name`.
    fn members_dir(&self, name: &str) -> PathBuf;
    /// Writes `limits` into the freshly made group `name`.
    fn write_limits(&self, name: &str, limits: &CgroupLimits) -> Result<(), SandboxError>;
    /// Peak memory, OOM kills, pids-limit hits and CPU time of group `name`.
    fn stats(&self, name: &str) -> Result<CgroupStats, SandboxError>;
    /// SIGKILLs every member of group `name` and waits until it is empty.
    fn kill_all(&self, name: &str) -> Result<(), SandboxError>;
    /// The directory a child can be born into with `clone3(CLONE_INTO_CGROUP)`
    /// (v2 only: on v1 a process enters its groups by migration).
    fn clone_into_dir(&self, name: &str) -> Option<PathBuf>;
    /// The file a single-threaded process writes "0" to in each of the
    /// group's directories to move itself in ([`CgroupJoin::join_self`]).
    fn join_file(&self) -> &'static str;
}

/// The limits written into a new cgroup.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CgroupLimits {
    pub memory_bytes: u64,
    pub pids: u32,
    /// CPU bandwidth in CPUs (1.5 = one and a half CPUs' worth of time per period).
    pub cpus: f64,
}

impl CgroupLimits {
    pub fn from_limits(limits: &crate::Limits) -> CgroupLimits {
        CgroupLimits {
            memory_bytes: limits.memory_bytes,
            pids: limits.pids,
            cpus: limits.cpus,
        }
    }

    fn validate(&self) -> Result<(), SandboxError> {
        if self.memory_bytes == 0 || self.pids == 0 {
            return Err(SandboxError::Spec(
                "cgroup limits: memory and pids must be at least 1".into(),
            ));
        }
        if !self.cpus.is_finite() || self.cpus <= 0.0 || self.cpus > 4096.0 {
            return Err(SandboxError::Spec(format!(
                "cgroup limits: cpus must be a positive number of CPUs, got {}",
                self.cpus
            )));
        }
        Ok(())
    }

    /// CFS quota per [`CPU_PERIOD_US`]; the kernel's minimum is 1 ms.
    fn cpu_quota_us(&self) -> u64 {
        ((self.cpus * CPU_PERIOD_US as f64).round() as u64).max(1000)
    }
}

/// What the cgroup observed during the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CgroupStats {
    pub peak_memory_bytes: u64,
    /// The kernel's OOM killer killed a member.
    pub oom_killed: bool,
    /// A fork or clone failed because `pids.max` was reached.
    pub pids_limit_hit: bool,
    pub cpu_usage_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    V1,
    V2,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Layout {
    V2(V2),
    V1(V1Roots),
}

impl Layout {
    fn controller(&self) -> &dyn Controller {
        match self {
            Layout::V2(v2) => v2,
            Layout::V1(v1) => v1,
        }
    }
}

/// The cgroup hierarchies of this host that airlock can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupHost {
    layout: Layout,
}

/// One execution's cgroup. Dropping it destroys it (kill, wait, rmdir).
#[derive(Debug)]
pub struct Cgroup {
    layout: Layout,
    name: String,
    /// Every directory of this cgroup that exists, one per hierarchy (one for v2).
    dirs: Vec<PathBuf>,
    destroyed: bool,
    /// A reused group ([`slots`]): emptied, not removed, at the end.
    slot: Option<slots::Slot>,
}

/// Pre-opened membership files ([`Controller::join_file`]), so a forked child
/// can join the cgroup with [`CgroupJoin::join_self`] (async-signal-safe)
/// before it unshares its cgroup namespace.
#[derive(Debug)]
pub struct CgroupJoin {
    files: Vec<std::fs::File>,
}

impl CgroupHost {
    /// A v2 layout rooted at `root` (a cgroup2 mount, or a delegated subtree,
    /// or a test directory shaped like one).
    pub fn v2_at(root: impl Into<PathBuf>) -> CgroupHost {
        CgroupHost {
            layout: Layout::V2(V2 { root: root.into() }),
        }
    }

    pub fn v1_at(roots: V1Roots) -> CgroupHost {
        CgroupHost {
            layout: Layout::V1(roots),
        }
    }

    fn controller(&self) -> &dyn Controller {
        self.layout.controller()
    }

    pub fn version(&self) -> CgroupVersion {
        self.controller().version()
    }

    /// (controller, hierarchy root) pairs, for `airlock doctor`.
    pub fn hierarchies(&self) -> Vec<(&'static str, PathBuf)> {
        self.controller().hierarchies()
    }

    /// Every distinct hierarchy root airlock writes under.
    fn roots(&self) -> Vec<PathBuf> {
        let mut unique = Vec::new();
        for (_, r) in self.hierarchies() {
            if !unique.contains(&r) {
                unique.push(r);
            }
        }
        unique
    }

    /// Creates `airlock/<name>` with `limits` in force. On failure nothing is
    /// left behind.
    pub fn create(&self, name: &str, limits: &CgroupLimits) -> Result<Cgroup, SandboxError> {
        limits.validate()?;
        let mut cgroup = self.create_empty(name)?;
        match cgroup.limit(limits) {
            Ok(()) => Ok(cgroup),
            Err(e) => {
                let _ = cgroup.destroy();
                Err(e)
            }
        }
    }

    /// Creates `airlock/<name>` with no limits written yet, for a helper that
    /// learns them later: [`Cgroup::limit`] it before anything joins it. On
    /// failure nothing is left behind.
    pub fn create_empty(&self, name: &str) -> Result<Cgroup, SandboxError> {
        let valid_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        if name.is_empty()
            || name.starts_with('.')
            || name.len() > 200
            || !name.chars().all(valid_char)
        {
            return Err(SandboxError::Spec(format!("invalid cgroup name {name:?}")));
        }
        // Directories are created one by one; `destroyed = false` with a partial
        // list would make Drop try to remove directories never created, so the
        // list grows as they appear.
        let mut cgroup = Cgroup {
            layout: self.layout.clone(),
            name: name.to_string(),
            dirs: Vec::new(),
            destroyed: false,
            slot: None,
        };
        let controller = self.controller();
        let result = (|| {
            for root in self.roots() {
                let dir = group_dir(&root, name);
                controller.prepare_parent(&root.join(PARENT))?;
                fs::mkdir(&dir, false)?;
                cgroup.dirs.push(dir);
            }
            Ok(())
        })();
        match result {
            Ok(()) => Ok(cgroup),
            Err(e) => {
                let _ = cgroup.destroy();
                Err(e)
            }
        }
    }

    /// Proves the layer works on this host: creates `airlock/probe-<pid>-doctor`
    /// with small limits in every hierarchy, reads its stats, and removes it.
    /// For `airlock doctor`.
    pub fn self_test(&self) -> Result<(), SandboxError> {
        let name = format!("probe-{}-doctor", std::process::id());
        let mut cg = self.create(
            &name,
            &CgroupLimits {
                memory_bytes: 16 * 1024 * 1024,
                pids: 4,
                cpus: 0.5,
            },
        )?;
        let stats = cg.stats();
        cg.destroy()?;
        stats.map(|_| ())
    }

    /// Removes leftovers of crashed runs: every `airlock/<prefix><pid>-...`
    /// whose owner `<pid>` is no longer alive is emptied (members SIGKILLed)
    /// and removed. A name whose owner cannot be parsed is removed only if it
    /// is empty. Returns the names removed.
    pub fn clean_stale(&self, prefix: &str) -> Result<Vec<String>, SandboxError> {
        let mut names = Vec::new();
        for root in self.roots() {
            let parent = root.join(PARENT);
            // A directory's link count is 2 plus its subdirectories (cgroupfs,
            // as most filesystems): with none there is nothing to list, and a
            // listing costs about ten times a stat. Where slots are kept, the
            // parent always has subdirectories, so it is listed.
            if std::fs::metadata(&parent).is_ok_and(|m| m.nlink() == 2) {
                continue;
            }
            let entries = match std::fs::read_dir(&parent) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_err("read", &parent, e)),
            };
            // The name first, then the type the listing carries (cgroupfs
            // fills d_type): a stat of each of the parent's thirty control
            // files and slots was 0.4 ms of a cold run's teardown.
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with(prefix)
                    && !names.contains(&name)
                    && entry.file_type().is_ok_and(|t| t.is_dir())
                {
                    names.push(name);
                }
            }
        }
        let mut removed = Vec::new();
        for name in names {
            let owner: Option<i32> = name[prefix.len()..]
                .split('-')
                .next()
                .and_then(|p| p.parse().ok());
            let stale = owner.is_some_and(kill::process_is_gone);
            let mut cgroup = self.existing(&name);
            if !stale && (owner.is_some() || !cgroup.members()?.is_empty()) {
                cgroup.destroyed = true; // not ours to remove
                continue;
            }
            cgroup.destroy()?;
            removed.push(name);
        }
        Ok(removed)
    }

    /// A handle on an existing `airlock/<name>` (for cleanup).
    fn existing(&self, name: &str) -> Cgroup {
        let dirs: Vec<PathBuf> = self
            .roots()
            .into_iter()
            .map(|r| group_dir(&r, name))
            .filter(|d| d.is_dir())
            .collect();
        Cgroup {
            layout: self.layout.clone(),
            name: name.to_string(),
            dirs,
            destroyed: false,
            slot: None,
        }
    }
}

impl Cgroup {
    fn controller(&self) -> &dyn Controller {
        self.layout.controller()
    }

    pub fn version(&self) -> CgroupVersion {
        self.controller().version()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The layout this group lives in.
    pub fn host(&self) -> CgroupHost {
        CgroupHost {
            layout: self.layout.clone(),
        }
    }

    /// Every directory of this cgroup (one per hierarchy).
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Moves process `pid` (with all its threads) into the cgroup in every
    /// hierarchy. Call it before the process forks, so no child escapes.
    pub fn add_pid(&self, pid: i32) -> Result<(), SandboxError> {
        if pid <= 0 {
            return Err(SandboxError::Spec(format!("invalid pid {pid}")));
        }
        for dir in &self.dirs {
            fs::write_file(&dir.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    /// Opens every directory's [`Controller::join_file`] for
    /// [`CgroupJoin::join_self`].
    pub fn open_join(&self) -> Result<CgroupJoin, SandboxError> {
        let mut files = Vec::new();
        for dir in &self.dirs {
            let path = dir.join(self.controller().join_file());
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| io_err("open", &path, e))?;
            files.push(f);
        }
        Ok(CgroupJoin { files })
    }

    /// The group's directory opened for `clone3(CLONE_INTO_CGROUP)`, or None
    /// where the layout has no such thing (v1: see [`Cgroup::add_pid`]).
    pub fn open_clone_target(&self) -> Result<Option<std::os::fd::OwnedFd>, SandboxError> {
        let Some(dir) = self.controller().clone_into_dir(&self.name) else {
            return Ok(None);
        };
        crate::sys::open(
            &dir,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            0,
        )
        .map(Some)
        .map_err(|e| io_err("open", &dir, e))
    }

    /// The current member pids.
    pub fn members(&self) -> Result<Vec<i32>, SandboxError> {
        fs::members_of(&self.controller().members_dir(&self.name))
    }

    /// SIGKILLs every member and waits until the cgroup is empty (see [`kill`]).
    pub fn kill_all(&self) -> Result<(), SandboxError> {
        self.controller().kill_all(&self.name)
    }

    /// Writes `limits` (see [`CgroupHost::create_empty`]).
    pub fn limit(&self, limits: &CgroupLimits) -> Result<(), SandboxError> {
        limits.validate()?;
        self.controller().write_limits(&self.name, limits)
    }

    /// Peak memory, OOM kills, pids-limit hits and CPU time so far.
    pub fn stats(&self) -> Result<CgroupStats, SandboxError> {
        let mut stats = self.controller().stats(&self.name)?;
        if let Some(slot) = &self.slot {
            // What earlier runs left charged is not this run's peak.
            stats.peak_memory_bytes = stats.peak_memory_bytes.saturating_sub(slot.memory_baseline);
        }
        Ok(stats)
    }

    /// Whether this is a reused group ([`CgroupHost::claim_slot`]).
    pub fn is_slot(&self) -> bool {
        self.slot.is_some()
    }

    /// Kills every member, waits until the cgroup is empty and removes its
    /// directories. Idempotent; `Drop` calls it too.
    pub fn destroy(&mut self) -> Result<(), SandboxError> {
        if self.destroyed {
            return Ok(());
        }
        self.kill_all()?;
        match self.slot.take() {
            // Empty, and a leaf again: the next run takes it as it is (the
            // lock goes now).
            Some(_) => kill::remove_groups_below(&self.dirs)?,
            None => kill::remove_dirs(&mut self.dirs)?,
        }
        self.destroyed = true;
        Ok(())
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = self.destroy();
    }
}

impl CgroupJoin {
    /// Moves the calling process into the cgroup in every hierarchy by writing
    /// "0" (itself) to each pre-opened file. The caller must be
    /// single-threaded: on v1 the file is `tasks`, which moves only the
    /// calling thread (see [`Controller::join_file`]). Async-signal-safe: only
    /// `write` calls.
    pub fn join_self(&self) -> Result<(), SandboxError> {
        use std::os::fd::AsRawFd;
        for f in &self.files {
            // SAFETY: writes one byte from a static buffer to an fd we own.
            let n = unsafe { libc::write(f.as_raw_fd(), b"0".as_ptr().cast(), 1) };
            if n != 1 {
                return Err(err(format!(
                    "join cgroup: {}",
                    std::io::Error::last_os_error()
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const MIB: u64 = 1024 * 1024;

    pub(super) fn limits(memory_bytes: u64, pids: u32, cpus: f64) -> CgroupLimits {
        CgroupLimits {
            memory_bytes,
            pids,
            cpus,
        }
    }

    pub(super) fn read(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// A cgroup2 root as the kernel shows it before airlock touches it.
    pub(super) fn fake_v2_root() -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(
            root.path().join("cgroup.controllers"),
            "cpuset cpu io memory hugetlb pids rdma misc\n",
        )
        .unwrap();
        std::fs::write(root.path().join("cgroup.subtree_control"), "").unwrap();
        root
    }

    #[test]
    fn bad_input_is_refused_and_leaves_nothing() {
        let root = fake_v2_root();
        let host = CgroupHost::v2_at(root.path());
        for bad in [
            limits(0, 1, 1.0),
            limits(MIB, 0, 1.0),
            limits(MIB, 1, 0.0),
            limits(MIB, 1, f64::NAN),
            limits(MIB, 1, -2.0),
        ] {
            assert!(
                matches!(host.create("1-x", &bad), Err(SandboxError::Spec(_))),
                "{bad:?}"
            );
        }
        for name in ["", "a/b", "..", ".hidden", "new\nline", "sp ace", "ü"] {
            assert!(matches!(
                host.create(name, &limits(MIB, 1, 1.0)),
                Err(SandboxError::Spec(_))
            ));
        }
        assert!(!root.path().join("airlock").exists());

        // A name already in use is refused, and the existing group is untouched.
        std::fs::create_dir_all(root.path().join("airlock/1-dup")).unwrap();
        std::fs::write(root.path().join("airlock/1-dup/pids.max"), "7").unwrap();
        match host.create("1-dup", &limits(MIB, 1, 1.0)) {
            Err(SandboxError::Layer { layer, detail }) => {
                assert_eq!(layer, Layer::Cgroup);
                assert!(detail.contains("already exists"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(read(&root.path().join("airlock/1-dup/pids.max")), "7");
    }

    pub(super) fn v1_host() -> CgroupHost {
        let host = CgroupHost::detect().expect("cgroups on this machine");
        assert_eq!(
            host.version(),
            CgroupVersion::V1,
            "this machine mounts v1 controllers"
        );
        host
    }

    pub(super) fn unique(tag: &str) -> String {
        format!("{}-{tag}", std::process::id())
    }

    /// A forked child that blocks until released; returns (pid, release fd).
    pub(super) fn spawn_waiting(body: impl FnOnce() -> i32) -> (i32, libc::c_int) {
        let mut go = [0; 2];
        // SAFETY: go is a valid two-int array.
        assert_eq!(unsafe { libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: the child only reads a pipe, runs body (plain syscalls) and _exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let mut b = 0u8;
            // SAFETY: closing the child's write end; reading one byte into b.
            unsafe {
                libc::close(go[1]);
                libc::read(go[0], (&mut b as *mut u8).cast(), 1);
            }
            let code = body();
            // SAFETY: leaving the child without running the harness' destructors.
            unsafe { libc::_exit(code) };
        }
        // SAFETY: closing the parent's read end.
        unsafe { libc::close(go[0]) };
        (pid, go[1])
    }

    pub(super) fn release(fd: libc::c_int) {
        // SAFETY: writing one byte to our pipe end, then closing it.
        unsafe {
            libc::write(fd, b"g".as_ptr().cast(), 1);
            libc::close(fd);
        }
    }

    pub(super) fn wait(pid: i32) -> i32 {
        let mut status = 0;
        // SAFETY: waiting for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        status
    }

    /// A child's body that pauses until it is killed.
    pub(super) fn pause_forever() -> i32 {
        loop {
            // SAFETY: pause only waits for a signal.
            unsafe { libc::pause() };
        }
    }

    /// `wait`, for a child that should be dying: a child still running after
    /// five seconds is SIGKILLed and the test fails (it does not hang).
    pub(super) fn wait_dying(pid: i32) -> i32 {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut status = 0;
        loop {
            // SAFETY: polling our own child.
            match unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } {
                0 if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                0 => {
                    // SAFETY: killing and reaping our own child.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                        libc::waitpid(pid, &mut status, 0);
                    }
                    panic!("child {pid} still ran five seconds after its group's teardown");
                }
                n => {
                    assert_eq!(n, pid);
                    return status;
                }
            }
        }
    }

    pub(super) fn assert_gone(cg_dirs: &[PathBuf]) {
        for d in cg_dirs {
            assert!(!d.exists(), "{} left behind", d.display());
        }
    }

    #[test]
    fn self_test_passes_here_and_leaves_nothing() {
        let host = v1_host();
        host.self_test().unwrap();
        for (_, root) in host.hierarchies() {
            let left = root
                .join(PARENT)
                .join(format!("probe-{}-doctor", std::process::id()));
            assert!(!left.exists(), "{}", left.display());
        }
    }

    #[test]
    fn clean_stale_removes_groups_of_dead_owners_only() {
        let host = v1_host();
        // A pid that certainly belonged to a process that is gone now.
        // SAFETY: the child exits at once.
        let dead = unsafe { libc::fork() };
        if dead == 0 {
            // SAFETY: leaving the child.
            unsafe { libc::_exit(0) };
        }
        wait(dead);
        let prefix = format!("stale{}x", std::process::id());
        let crashed = host
            .create(&format!("{prefix}{dead}-run"), &limits(64 * MIB, 8, 1.0))
            .unwrap();
        let crashed_dirs = crashed.dirs().to_vec();
        let (orphan, go) = spawn_waiting(pause_forever);
        crashed.add_pid(orphan).unwrap();
        release(go);
        std::mem::forget(crashed); // as if airlock had been SIGKILLed mid-run
        let mut live = host
            .create(
                &format!("{prefix}{}-run", std::process::id()),
                &limits(64 * MIB, 8, 1.0),
            )
            .unwrap();

        let removed = host.clean_stale(&prefix).unwrap();
        assert_eq!(removed, vec![format!("{prefix}{dead}-run")]);
        assert_gone(&crashed_dirs);
        let status = wait(orphan);
        assert!(libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL);
        assert!(
            live.dirs().iter().all(|d| d.is_dir()),
            "live run's cgroup was removed"
        );
        live.destroy().unwrap();
    }
}
