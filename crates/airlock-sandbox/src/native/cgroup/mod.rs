//! Resources layer: one cgroup per execution, written directly through cgroupfs.
//!
//! Two layouts:
//!
//! * **v2** (a cgroup2 mount whose `cgroup.controllers` has memory, pids and cpu):
//!   `<mount>/airlock/<name>` with `memory.max`, `memory.swap.max = 0`,
//!   `memory.oom.group = 1` (an OOM kills the whole sandbox, not one victim),
//!   `pids.max` and `cpu.max`; teardown writes `cgroup.kill`.
//! * **v1** (separate hierarchies, as on this machine): `airlock/<name>` under
//!   each of memory, pids, cpu, cpuacct and, when mounted, freezer, with
//!   `memory.limit_in_bytes`, `memory.memsw.limit_in_bytes` (the same value, so
//!   no swap), `memory.oom_control = 0` (OOM killer on), `pids.max`,
//!   `cpu.cfs_period_us`/`cpu.cfs_quota_us`. v1 has no `cgroup.kill`: teardown
//!   freezes the group, SIGKILLs every member and thaws it, until it is empty.
//!
//! A v1 host with swap enabled but without `memory.memsw.*` (booted without swap
//! accounting) is refused: the memory limit could be bypassed through swap.
//!
//! Members are killed through a pidfd after checking that the pid still belongs
//! to this cgroup, so a pid recycled by an unrelated host process between reading
//! `cgroup.procs` and the kill is never signalled.
//!
//! Names: the runtime names each cgroup `<prefix><owner pid>-<unique>`, so that
//! [`CgroupHost::clean_stale`] can tell a crashed run (owner gone) from a live one.
//!
//! The v2 path is unit-tested against a temporary directory shaped like
//! cgroupfs (this machine has no v2 controllers); the v1 path is tested on the
//! real hierarchies.

mod detect;
mod fs;

pub use detect::{delegated_v2, delegated_v2_in};
use fs::{keyed_value, members_of, mkdir, single_value, write_file};

use crate::SandboxError;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const LAYER: &str = "cgroup";
/// The directory under each hierarchy root that holds airlock's cgroups.
pub const PARENT: &str = "airlock";
const CPU_PERIOD_US: u64 = 100_000;
/// How long teardown waits for members to disappear and for rmdir to succeed.
const TEARDOWN_TIMEOUT: Duration = Duration::from_secs(10);

fn err(detail: impl Into<String>) -> SandboxError {
    SandboxError::Layer {
        layer: LAYER,
        detail: detail.into(),
    }
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> SandboxError {
    err(format!("{what} {}: {e}", path.display()))
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

/// Where the v1 controllers are mounted (cpu and cpuacct may be one directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V1Roots {
    pub memory: PathBuf,
    pub pids: PathBuf,
    pub cpu: PathBuf,
    pub cpuacct: PathBuf,
    pub freezer: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Layout {
    V2 { root: PathBuf },
    V1(V1Roots),
}

/// The cgroup hierarchies of this host that airlock can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupHost {
    layout: Layout,
}

/// One execution's cgroup. Dropping it destroys it (kill, wait, rmdir).
#[derive(Debug)]
pub struct Cgroup {
    version: CgroupVersion,
    name: String,
    /// Every directory of this cgroup, one per hierarchy (one for v2).
    dirs: Vec<PathBuf>,
    /// The directory whose `cgroup.procs` lists every member (v2 dir, v1 pids).
    members: PathBuf,
    memory: PathBuf,
    cpuacct: PathBuf,
    freezer: Option<PathBuf>,
    destroyed: bool,
}

/// Pre-opened `cgroup.procs` files, so a forked child can join the cgroup with
/// [`CgroupJoin::join_self`] (async-signal-safe) before it unshares its cgroup
/// namespace.
#[derive(Debug)]
pub struct CgroupJoin {
    files: Vec<std::fs::File>,
}

/// True when no process has this pid (kill with signal 0 answers ESRCH).
fn process_is_gone(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the pid exists; nothing is sent.
    let rc = unsafe { libc::kill(pid, 0) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// SIGKILLs `pid` if, once pinned by a pidfd, it still lives in a cgroup whose
/// path ends with `suffix` (e.g. `/airlock/<name>`). Returns whether it sent it.
fn kill_member(pid: i32, suffix: &str) -> bool {
    // SAFETY: pidfd_open takes integers; the returned fd is closed below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
    if fd < 0 {
        return false; // already gone
    }
    // The pidfd pins this process: if the pid was recycled before pidfd_open,
    // /proc/<pid>/cgroup now describes the new process and the check fails.
    let belongs = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .map(|t| t.lines().any(|l| l.trim_end().ends_with(suffix)))
        .unwrap_or(false);
    let sent = belongs && {
        // SAFETY: fd is the pidfd opened above; no siginfo pointer is passed.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd,
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        rc == 0
    };
    // SAFETY: closing the pidfd we own.
    unsafe { libc::close(fd) };
    sent
}

impl CgroupHost {
    /// A v2 layout rooted at `root` (a cgroup2 mount, or a delegated subtree,
    /// or a test directory shaped like one).
    pub fn v2_at(root: impl Into<PathBuf>) -> CgroupHost {
        CgroupHost {
            layout: Layout::V2 { root: root.into() },
        }
    }

    pub fn v1_at(roots: V1Roots) -> CgroupHost {
        CgroupHost {
            layout: Layout::V1(roots),
        }
    }

    pub fn version(&self) -> CgroupVersion {
        match self.layout {
            Layout::V2 { .. } => CgroupVersion::V2,
            Layout::V1(_) => CgroupVersion::V1,
        }
    }

    /// (controller, hierarchy root) pairs, for `airlock doctor`.
    pub fn hierarchies(&self) -> Vec<(&'static str, PathBuf)> {
        match &self.layout {
            Layout::V2 { root } => vec![("unified", root.clone())],
            Layout::V1(r) => {
                let mut v = vec![
                    ("memory", r.memory.clone()),
                    ("pids", r.pids.clone()),
                    ("cpu", r.cpu.clone()),
                    ("cpuacct", r.cpuacct.clone()),
                ];
                if let Some(f) = &r.freezer {
                    v.push(("freezer", f.clone()));
                }
                v
            }
        }
    }

    /// Every distinct hierarchy root airlock writes under.
    fn roots(&self) -> Vec<PathBuf> {
        let mut roots: Vec<PathBuf> = self.hierarchies().into_iter().map(|(_, p)| p).collect();
        roots.dedup();
        let mut unique = Vec::new();
        for r in roots {
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
        let valid_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        if name.is_empty()
            || name.starts_with('.')
            || name.len() > 200
            || !name.chars().all(valid_char)
        {
            return Err(SandboxError::Spec(format!("invalid cgroup name {name:?}")));
        }
        let mut cgroup = match &self.layout {
            Layout::V2 { root } => {
                let dir = root.join(PARENT).join(name);
                Cgroup {
                    version: CgroupVersion::V2,
                    name: name.to_string(),
                    dirs: vec![dir.clone()],
                    members: dir.clone(),
                    memory: dir.clone(),
                    cpuacct: dir,
                    freezer: None,
                    destroyed: false,
                }
            }
            Layout::V1(r) => {
                let mut dirs = Vec::new();
                for root in self.roots() {
                    dirs.push(root.join(PARENT).join(name));
                }
                Cgroup {
                    version: CgroupVersion::V1,
                    name: name.to_string(),
                    dirs,
                    members: r.pids.join(PARENT).join(name),
                    memory: r.memory.join(PARENT).join(name),
                    cpuacct: r.cpuacct.join(PARENT).join(name),
                    freezer: r.freezer.as_ref().map(|f| f.join(PARENT).join(name)),
                    destroyed: false,
                }
            }
        };
        // Directories are created one by one; `destroyed = false` with a partial
        // list would make Drop try to remove directories never created, so the
        // list grows as they appear.
        let planned = std::mem::take(&mut cgroup.dirs);
        let result = (|| {
            for dir in &planned {
                let parent = dir.parent().expect("airlock/<name> has a parent");
                if let Layout::V2 { root } = &self.layout {
                    enable_v2_controllers(root)?;
                    mkdir(parent, true)?;
                    enable_v2_controllers(parent)?;
                } else {
                    mkdir(parent, true)?;
                }
                mkdir(dir, false)?;
                cgroup.dirs.push(dir.clone());
            }
            match &self.layout {
                Layout::V2 { .. } => write_v2_limits(&cgroup.members, limits),
                Layout::V1(r) => write_v1_limits(r, &cgroup, limits),
            }
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
            let entries = match std::fs::read_dir(&parent) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_err("read", &parent, e)),
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if entry.path().is_dir() && name.starts_with(prefix) && !names.contains(&name) {
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
            let stale = owner.is_some_and(process_is_gone);
            let mut cgroup = self.existing(&name);
            if !stale && (owner.is_some() || !members_of(&cgroup.members)?.is_empty()) {
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
            .map(|r| r.join(PARENT).join(name))
            .filter(|d| d.is_dir())
            .collect();
        let (members, memory, cpuacct, freezer, version) = match &self.layout {
            Layout::V2 { root } => {
                let d = root.join(PARENT).join(name);
                (d.clone(), d.clone(), d, None, CgroupVersion::V2)
            }
            Layout::V1(r) => (
                r.pids.join(PARENT).join(name),
                r.memory.join(PARENT).join(name),
                r.cpuacct.join(PARENT).join(name),
                r.freezer.as_ref().map(|f| f.join(PARENT).join(name)),
                CgroupVersion::V1,
            ),
        };
        Cgroup {
            version,
            name: name.to_string(),
            dirs,
            members,
            memory,
            cpuacct,
            freezer,
            destroyed: false,
        }
    }
}

/// Makes memory, pids and cpu available to the children of `dir`.
fn enable_v2_controllers(dir: &Path) -> Result<(), SandboxError> {
    let path = dir.join("cgroup.subtree_control");
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    let enabled: Vec<&str> = current.split_whitespace().collect();
    if ["memory", "pids", "cpu"]
        .iter()
        .all(|c| enabled.contains(c))
    {
        return Ok(());
    }
    write_file(&path, "+memory +pids +cpu")
}

fn write_v2_limits(dir: &Path, limits: &CgroupLimits) -> Result<(), SandboxError> {
    write_file(&dir.join("memory.max"), &limits.memory_bytes.to_string())?;
    write_file(&dir.join("memory.swap.max"), "0")?;
    write_file(&dir.join("memory.oom.group"), "1")?;
    write_file(&dir.join("pids.max"), &limits.pids.to_string())?;
    write_file(
        &dir.join("cpu.max"),
        &format!("{} {CPU_PERIOD_US}", limits.cpu_quota_us()),
    )
}

fn swap_active() -> bool {
    std::fs::read_to_string("/proc/swaps")
        .map(|t| t.lines().skip(1).any(|l| !l.trim().is_empty()))
        .unwrap_or(false)
}

fn write_v1_limits(
    roots: &V1Roots,
    cgroup: &Cgroup,
    limits: &CgroupLimits,
) -> Result<(), SandboxError> {
    let mem = &cgroup.memory;
    let bytes = limits.memory_bytes.to_string();
    // memsw must stay >= the memory limit, so lower memsw first when shrinking;
    // a fresh group starts unlimited, so memory first is the right order here.
    write_file(&mem.join("memory.limit_in_bytes"), &bytes)?;
    let memsw = mem.join("memory.memsw.limit_in_bytes");
    if memsw.exists() {
        write_file(&memsw, &bytes)?;
    } else if swap_active() {
        return Err(err(
            "swap is on but cgroup v1 has no memory.memsw (swap accounting off): \
             the memory limit could spill into swap",
        ));
    }
    write_file(&mem.join("memory.oom_control"), "0")?;
    let pids = roots.pids.join(PARENT).join(&cgroup.name);
    write_file(&pids.join("pids.max"), &limits.pids.to_string())?;
    let cpu = roots.cpu.join(PARENT).join(&cgroup.name);
    write_file(&cpu.join("cpu.cfs_period_us"), &CPU_PERIOD_US.to_string())?;
    write_file(
        &cpu.join("cpu.cfs_quota_us"),
        &limits.cpu_quota_us().to_string(),
    )
}

impl Cgroup {
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    pub fn name(&self) -> &str {
        &self.name
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
            write_file(&dir.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    /// Opens every `cgroup.procs` for [`CgroupJoin::join_self`].
    pub fn open_join(&self) -> Result<CgroupJoin, SandboxError> {
        let mut files = Vec::new();
        for dir in &self.dirs {
            let path = dir.join("cgroup.procs");
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| io_err("open", &path, e))?;
            files.push(f);
        }
        Ok(CgroupJoin { files })
    }

    /// The current member pids.
    pub fn members(&self) -> Result<Vec<i32>, SandboxError> {
        members_of(&self.members)
    }

    fn suffix(&self) -> String {
        format!("/{PARENT}/{}", self.name)
    }

    /// SIGKILLs every member and waits until the cgroup is empty. v2 uses
    /// `cgroup.kill`; v1 freezes (when the freezer is mounted) so nothing can
    /// fork while the members are listed and killed, then thaws.
    pub fn kill_all(&self) -> Result<(), SandboxError> {
        let deadline = Instant::now() + TEARDOWN_TIMEOUT;
        if self.version == CgroupVersion::V2 && !self.members()?.is_empty() {
            write_file(&self.members.join("cgroup.kill"), "1")?;
        }
        let suffix = self.suffix();
        loop {
            let members = self.members()?;
            if members.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(err(format!(
                    "{} still has members after SIGKILL: {members:?}",
                    self.members.display()
                )));
            }
            if self.version == CgroupVersion::V1 {
                // Even when FROZEN is not confirmed in time, the group is thawed
                // again: a killed task cannot finish exiting while frozen.
                self.freeze(true);
                for pid in self.members()? {
                    kill_member(pid, &suffix);
                }
                self.freeze(false);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// v1 freezer: writes FROZEN/THAWED; for FROZEN waits (briefly) until the
    /// kernel confirms. Returns whether the state was reached.
    fn freeze(&self, frozen: bool) -> bool {
        let Some(dir) = &self.freezer else {
            return false;
        };
        let state = dir.join("freezer.state");
        let want = if frozen { "FROZEN" } else { "THAWED" };
        if write_file(&state, want).is_err() {
            return false;
        }
        let until = Instant::now() + Duration::from_millis(200);
        while Instant::now() < until {
            match std::fs::read_to_string(&state) {
                Ok(s) if s.trim() == want => return true,
                Ok(_) => std::thread::sleep(Duration::from_millis(1)),
                Err(_) => return false,
            }
        }
        false
    }

    /// Peak memory, OOM kills, pids-limit hits and CPU time so far.
    pub fn stats(&self) -> Result<CgroupStats, SandboxError> {
        match self.version {
            CgroupVersion::V2 => {
                let dir = &self.members;
                let peak = dir.join("memory.peak");
                let peak_memory_bytes = if peak.exists() {
                    single_value(&peak)?
                } else {
                    single_value(&dir.join("memory.current"))?
                };
                Ok(CgroupStats {
                    peak_memory_bytes,
                    oom_killed: keyed_value(&dir.join("memory.events"), "oom_kill")? > 0,
                    pids_limit_hit: keyed_value(&dir.join("pids.events"), "max")? > 0,
                    cpu_usage_ns: keyed_value(&dir.join("cpu.stat"), "usage_usec")?
                        .saturating_mul(1000),
                })
            }
            CgroupVersion::V1 => Ok(CgroupStats {
                peak_memory_bytes: single_value(&self.memory.join("memory.max_usage_in_bytes"))?,
                oom_killed: keyed_value(&self.memory.join("memory.oom_control"), "oom_kill")? > 0,
                pids_limit_hit: keyed_value(&self.members.join("pids.events"), "max")? > 0,
                cpu_usage_ns: single_value(&self.cpuacct.join("cpuacct.usage"))?,
            }),
        }
    }

    /// Kills every member, waits until the cgroup is empty and removes its
    /// directories. Idempotent; `Drop` calls it too.
    pub fn destroy(&mut self) -> Result<(), SandboxError> {
        if self.destroyed {
            return Ok(());
        }
        self.kill_all()?;
        let deadline = Instant::now() + TEARDOWN_TIMEOUT;
        while let Some(dir) = self.dirs.last().cloned() {
            match std::fs::remove_dir(&dir) {
                Ok(()) => {
                    self.dirs.pop();
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.dirs.pop();
                }
                // Members that just died may still be leaving the cgroup.
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(io_err("rmdir", &dir, e)),
            }
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
    /// "0" to each `cgroup.procs`. Async-signal-safe: only `write` calls.
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

    const MIB: u64 = 1024 * 1024;

    fn limits(memory_bytes: u64, pids: u32, cpus: f64) -> CgroupLimits {
        CgroupLimits {
            memory_bytes,
            pids,
            cpus,
        }
    }

    fn read(p: &Path) -> String {
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

    // ----- v2, against a directory shaped like cgroupfs (no v2 controllers here) -----

    #[test]
    fn v2_create_writes_exactly_the_limit_files() {
        let root = fake_v2_root();
        let host = CgroupHost::v2_at(root.path());
        assert_eq!(host.version(), CgroupVersion::V2);
        let mut cg = host.create("1-abc", &limits(256 * MIB, 64, 1.5)).unwrap();
        let dir = root.path().join("airlock/1-abc");
        assert_eq!(cg.dirs(), std::slice::from_ref(&dir));
        assert_eq!(
            read(&root.path().join("cgroup.subtree_control")),
            "+memory +pids +cpu"
        );
        assert_eq!(
            read(&root.path().join("airlock/cgroup.subtree_control")),
            "+memory +pids +cpu"
        );
        assert_eq!(read(&dir.join("memory.max")), "268435456");
        assert_eq!(read(&dir.join("memory.swap.max")), "0");
        assert_eq!(read(&dir.join("memory.oom.group")), "1");
        assert_eq!(read(&dir.join("pids.max")), "64");
        assert_eq!(read(&dir.join("cpu.max")), "150000 100000");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(
            files,
            [
                "cpu.max",
                "memory.max",
                "memory.oom.group",
                "memory.swap.max",
                "pids.max"
            ]
        );

        cg.add_pid(4242).unwrap();
        assert_eq!(read(&dir.join("cgroup.procs")), "4242");
        assert!(matches!(cg.add_pid(0), Err(SandboxError::Spec(_))));

        // What the kernel would report after a run that hit both limits.
        std::fs::write(dir.join("memory.peak"), "123456789\n").unwrap();
        std::fs::write(
            dir.join("memory.events"),
            "low 0\nhigh 0\nmax 17\noom 1\noom_kill 1\noom_group_kill 1\n",
        )
        .unwrap();
        std::fs::write(dir.join("pids.events"), "max 3\n").unwrap();
        std::fs::write(
            dir.join("cpu.stat"),
            "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\nnr_periods 0\n",
        )
        .unwrap();
        assert_eq!(
            cg.stats().unwrap(),
            CgroupStats {
                peak_memory_bytes: 123456789,
                oom_killed: true,
                pids_limit_hit: true,
                cpu_usage_ns: 2_500_000
            }
        );

        // Plays the kernel: once cgroup.kill reads 1, the members are gone.
        let kernel = {
            let dir = dir.clone();
            std::thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(10);
                while Instant::now() < deadline {
                    if std::fs::read_to_string(dir.join("cgroup.kill")).is_ok_and(|k| k == "1") {
                        std::fs::write(dir.join("cgroup.procs"), "").unwrap();
                        return true;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                false
            })
        };
        cg.kill_all().unwrap();
        assert!(kernel.join().unwrap(), "cgroup.kill was never written");
        assert_eq!(read(&dir.join("cgroup.kill")), "1");

        // cgroupfs removes control files with the directory; a plain dir needs help.
        for e in std::fs::read_dir(&dir).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
        cg.destroy().unwrap();
        assert!(!dir.exists());
    }

    #[test]
    fn v2_quiet_run_reports_no_limit_hit() {
        let root = fake_v2_root();
        let cg = CgroupHost::v2_at(root.path())
            .create("1-quiet", &limits(MIB, 1, 0.001))
            .unwrap();
        let dir = root.path().join("airlock/1-quiet");
        // 0.001 CPU rounds up to the kernel's 1 ms minimum quota.
        assert_eq!(read(&dir.join("cpu.max")), "1000 100000");
        std::fs::write(dir.join("memory.current"), "4096\n").unwrap();
        std::fs::write(
            dir.join("memory.events"),
            "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n",
        )
        .unwrap();
        std::fs::write(dir.join("pids.events"), "max 0\n").unwrap();
        std::fs::write(dir.join("cpu.stat"), "usage_usec 0\n").unwrap();
        let stats = cg.stats().unwrap();
        assert_eq!(
            stats.peak_memory_bytes, 4096,
            "falls back to memory.current"
        );
        assert!(!stats.oom_killed && !stats.pids_limit_hit);
        for e in std::fs::read_dir(&dir).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
        drop(cg);
        assert!(!dir.exists(), "Drop removes the cgroup");
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
                assert_eq!(layer, "cgroup");
                assert!(detail.contains("already exists"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(read(&root.path().join("airlock/1-dup/pids.max")), "7");
    }

    // ----- v1, on this machine's real hierarchies -----

    fn v1_host() -> CgroupHost {
        let host = CgroupHost::detect().expect("cgroups on this machine");
        assert_eq!(
            host.version(),
            CgroupVersion::V1,
            "this machine mounts v1 controllers"
        );
        host
    }

    fn unique(tag: &str) -> String {
        format!("{}-{tag}", std::process::id())
    }

    /// A forked child that blocks until released; returns (pid, release fd).
    fn spawn_waiting(body: impl FnOnce() -> i32) -> (i32, libc::c_int) {
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

    fn release(fd: libc::c_int) {
        // SAFETY: writing one byte to our pipe end, then closing it.
        unsafe {
            libc::write(fd, b"g".as_ptr().cast(), 1);
            libc::close(fd);
        }
    }

    fn wait(pid: i32) -> i32 {
        let mut status = 0;
        // SAFETY: waiting for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        status
    }

    fn assert_gone(cg_dirs: &[PathBuf]) {
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
    fn a_missing_control_file_is_named_in_the_error() {
        let dir = PathBuf::from("/sys/fs/cgroup/pids/airlock").join(unique("missing"));
        std::fs::create_dir_all(&dir).unwrap();
        let result = write_file(&dir.join("memory.max"), "1");
        std::fs::remove_dir(&dir).unwrap();
        match result {
            Err(SandboxError::Layer {
                layer: "cgroup",
                detail,
            }) => {
                assert!(detail.contains("memory.max does not exist"), "{detail}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn v1_limits_are_written_and_read_back() {
        let host = v1_host();
        let mut cg = host
            .create(&unique("readback"), &limits(48 * MIB, 5, 0.25))
            .unwrap();
        let dirs = cg.dirs().to_vec();
        let mem = PathBuf::from("/sys/fs/cgroup/memory/airlock").join(cg.name());
        assert_eq!(read(&mem.join("memory.limit_in_bytes")).trim(), "50331648");
        assert_eq!(
            read(&mem.join("memory.memsw.limit_in_bytes")).trim(),
            "50331648"
        );
        assert!(read(&mem.join("memory.oom_control")).contains("oom_kill_disable 0"));
        let pids = PathBuf::from("/sys/fs/cgroup/pids/airlock").join(cg.name());
        assert_eq!(read(&pids.join("pids.max")).trim(), "5");
        let cpu = PathBuf::from("/sys/fs/cgroup/cpu/airlock").join(cg.name());
        assert_eq!(read(&cpu.join("cpu.cfs_quota_us")).trim(), "25000");
        assert_eq!(read(&cpu.join("cpu.cfs_period_us")).trim(), "100000");
        assert!(dirs.iter().any(|d| d.starts_with("/sys/fs/cgroup/freezer")));
        cg.destroy().unwrap();
        assert_gone(&dirs);
    }

    #[test]
    fn v1_memory_hog_is_oom_killed_and_reported() {
        let host = v1_host();
        let limit = 32 * MIB;
        let mut cg = host
            .create(&unique("oom"), &limits(limit, 16, 1.0))
            .unwrap();
        let dirs = cg.dirs().to_vec();
        let (pid, go) = spawn_waiting(|| {
            let len = 256 * MIB as usize;
            // SAFETY: anonymous private mapping; touched only within its length.
            unsafe {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                );
                if p == libc::MAP_FAILED {
                    return 2;
                }
                let base = p.cast::<u8>();
                for off in (0..len).step_by(4096) {
                    std::ptr::write_volatile(base.add(off), 1);
                }
            }
            3 // survived: the limit is not in force
        });
        cg.add_pid(pid).unwrap();
        release(go);
        let status = wait(pid);
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL,
            "memory hog was not OOM-killed: status {status:#x}"
        );
        let stats = cg.stats().unwrap();
        assert!(stats.oom_killed, "{stats:?}");
        assert!(!stats.pids_limit_hit, "{stats:?}");
        assert!(
            stats.peak_memory_bytes > limit / 2 && stats.peak_memory_bytes <= limit,
            "{stats:?}"
        );
        assert!(stats.cpu_usage_ns > 0, "{stats:?}");
        cg.destroy().unwrap();
        assert_gone(&dirs);
    }

    /// The child joins through pre-opened fds (join_self), then forks until the
    /// kernel refuses: with pids.max = 4 it gets exactly 3 children.
    #[test]
    fn v1_pids_limit_stops_forks() {
        let host = v1_host();
        let mut cg = host
            .create(&unique("pids"), &limits(64 * MIB, 4, 1.0))
            .unwrap();
        let dirs = cg.dirs().to_vec();
        let join = cg.open_join().unwrap();
        let (status, out) = crate::native::caps::tests::run_in_child(|fd| {
            if join.join_self().is_err() {
                return 10;
            }
            let mut hold = [0; 2];
            // SAFETY: hold is a valid two-int array.
            unsafe { libc::pipe(hold.as_mut_ptr()) };
            let mut forked = 0;
            let mut fork_errno = 0;
            let mut kids = [0i32; 16];
            for slot in kids.iter_mut() {
                // SAFETY: the grandchild only blocks on a pipe and _exits.
                let pid = unsafe { libc::fork() };
                if pid == 0 {
                    let mut b = 0u8;
                    // SAFETY: drop the write end, block until the parent closes its copy.
                    unsafe {
                        libc::close(hold[1]);
                        libc::read(hold[0], (&mut b as *mut u8).cast(), 1);
                        libc::_exit(0);
                    }
                }
                if pid < 0 {
                    fork_errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
                    break;
                }
                *slot = pid;
                forked += 1;
            }
            // SAFETY: releasing and reaping our own children.
            unsafe {
                libc::close(hold[1]);
                for &k in &kids[..forked] {
                    libc::waitpid(k, std::ptr::null_mut(), 0);
                }
            }
            crate::native::caps::tests::write_all(fd, &(forked as i32).to_ne_bytes());
            crate::native::caps::tests::write_all(fd, &fork_errno.to_ne_bytes());
            0
        });
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status:#x}"
        );
        assert_eq!(i32::from_ne_bytes(out[0..4].try_into().unwrap()), 3);
        assert_eq!(
            i32::from_ne_bytes(out[4..8].try_into().unwrap()),
            libc::EAGAIN
        );
        let stats = cg.stats().unwrap();
        assert!(stats.pids_limit_hit && !stats.oom_killed, "{stats:?}");
        cg.destroy().unwrap();
        assert_gone(&dirs);
    }

    #[test]
    fn v1_cpu_quota_throttles_a_spinner() {
        let host = v1_host();
        let mut cg = host
            .create(&unique("cpu"), &limits(64 * MIB, 4, 0.05))
            .unwrap();
        let dirs = cg.dirs().to_vec();
        let (pid, go) = spawn_waiting(|| {
            let mut x: u64 = 0;
            loop {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        });
        cg.add_pid(pid).unwrap();
        release(go);
        let cpu_stat = PathBuf::from("/sys/fs/cgroup/cpu/airlock")
            .join(cg.name())
            .join("cpu.stat");
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut throttled = 0;
        while Instant::now() < deadline && throttled < 3 {
            std::thread::sleep(Duration::from_millis(50));
            throttled = keyed_value(&cpu_stat, "nr_throttled").unwrap();
        }
        assert!(
            throttled >= 3,
            "spinner never throttled: {}",
            read(&cpu_stat)
        );
        assert!(cg.stats().unwrap().cpu_usage_ns > 0);
        cg.destroy().unwrap();
        let status = wait(pid);
        assert!(libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL);
        assert_gone(&dirs);
    }

    /// A process tree that ignores SIGTERM is killed as a whole, and nothing of
    /// the cgroup remains.
    #[test]
    fn v1_destroy_kills_the_whole_tree() {
        let host = v1_host();
        let mut cg = host
            .create(&unique("tree"), &limits(64 * MIB, 16, 1.0))
            .unwrap();
        let dirs = cg.dirs().to_vec();
        let (pid, go) = spawn_waiting(|| {
            // SAFETY: ignoring SIGTERM, forking sleepers that pause; no memory shared.
            unsafe {
                libc::signal(libc::SIGTERM, libc::SIG_IGN);
                for _ in 0..3 {
                    if libc::fork() == 0 {
                        libc::setsid(); // a daemon-like grandchild
                        loop {
                            libc::pause();
                        }
                    }
                }
                loop {
                    libc::pause();
                }
            }
        });
        cg.add_pid(pid).unwrap();
        release(go);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut members = Vec::new();
        while Instant::now() < deadline && members.len() < 4 {
            std::thread::sleep(Duration::from_millis(10));
            members = cg.members().unwrap();
        }
        if members.len() != 4 {
            let diag: Vec<String> = members
                .iter()
                .map(|m| {
                    let stat =
                        std::fs::read_to_string(format!("/proc/{m}/stat")).unwrap_or_default();
                    let stack =
                        std::fs::read_to_string(format!("/proc/{m}/stack")).unwrap_or_default();
                    format!("{stat}\n{stack}")
                })
                .collect();
            panic!("members {members:?} (child {pid}):\n{}", diag.join("\n"));
        }
        cg.destroy().unwrap();
        let status = wait(pid);
        assert!(libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL);
        assert_gone(&dirs);
        // Orphans are reaped by the host's init; until then a zombie is dead too.
        for m in members.iter().filter(|m| **m != pid) {
            assert!(!is_alive(*m), "grandchild {m} survived");
        }
    }

    fn is_alive(pid: i32) -> bool {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        state
            .rsplit_once(") ")
            .map(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
            .unwrap_or(false)
    }

    /// A fork bomb fills pids.max and keeps forking; teardown still empties
    /// and removes the group, and no bomb process survives.
    #[test]
    fn v1_fork_bomb_is_contained_and_torn_down() {
        let host = v1_host();
        let mut cg = host
            .create(&unique("bomb"), &limits(128 * MIB, 32, 0.5))
            .unwrap();
        let dirs = cg.dirs().to_vec();
        let (pid, go) = spawn_waiting(|| loop {
            // SAFETY: every process keeps forking; failures (EAGAIN) are ignored.
            unsafe { libc::fork() };
        });
        cg.add_pid(pid).unwrap();
        release(go);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut members = Vec::new();
        while Instant::now() < deadline && members.len() < 32 {
            std::thread::sleep(Duration::from_millis(10));
            members = cg.members().unwrap();
        }
        assert_eq!(members.len(), 32, "the bomb should fill pids.max exactly");
        assert!(cg.stats().unwrap().pids_limit_hit);
        cg.destroy().unwrap();
        let status = wait(pid);
        assert!(libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL);
        assert_gone(&dirs);
        let survivors: Vec<i32> = members.into_iter().filter(|m| is_alive(*m)).collect();
        assert!(
            survivors.is_empty(),
            "bomb processes survived: {survivors:?}"
        );
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
        let (orphan, go) = spawn_waiting(|| loop {
            // SAFETY: pause has no preconditions.
            unsafe { libc::pause() };
        });
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
