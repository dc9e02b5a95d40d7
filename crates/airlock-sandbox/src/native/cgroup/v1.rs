//! cgroup v1: separate hierarchies, as on this machine. A run's group is
//! `airlock/<name>` under each of memory, pids, cpu, cpuacct and, when
//! mounted, freezer, with `memory.limit_in_bytes`,
//! `memory.memsw.limit_in_bytes` (the same value, so no swap),
//! `memory.oom_control = 0` (OOM killer on), `pids.max` and
//! `cpu.cfs_period_us`/`cpu.cfs_quota_us`. v1 has no `cgroup.kill`: teardown
//! freezes the group, SIGKILLs every member and thaws it, until it is empty.
//!
//! A host with swap enabled but without `memory.memsw.*` (booted without swap
//! accounting) is refused: the memory limit could be bypassed through swap.
//!
//! Tested on this machine's real hierarchies (own child groups of `airlock/`
//! only; the hierarchies themselves are never remounted or reshaped).

use super::fs::{keyed_value, single_value, write_file};
use super::kill::{self, KillMethod};
use super::{err, group_dir, CgroupLimits, CgroupStats, CgroupVersion, Controller, CPU_PERIOD_US};
use crate::SandboxError;
use std::path::{Path, PathBuf};

/// Where the v1 controllers are mounted (cpu and cpuacct may be one directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V1Roots {
    pub memory: PathBuf,
    pub pids: PathBuf,
    pub cpu: PathBuf,
    pub cpuacct: PathBuf,
    pub freezer: Option<PathBuf>,
}

impl Controller for V1Roots {
    fn version(&self) -> CgroupVersion {
        CgroupVersion::V1
    }

    fn hierarchies(&self) -> Vec<(&'static str, PathBuf)> {
        let mut v = vec![
            ("memory", self.memory.clone()),
            ("pids", self.pids.clone()),
            ("cpu", self.cpu.clone()),
            ("cpuacct", self.cpuacct.clone()),
        ];
        if let Some(f) = &self.freezer {
            v.push(("freezer", f.clone()));
        }
        v
    }

    fn prepare_parent(&self, parent: &Path) -> Result<(), SandboxError> {
        super::fs::mkdir(parent, true)
    }

    /// The pids hierarchy lists every member (threads included).
    fn members_dir(&self, name: &str) -> PathBuf {
        group_dir(&self.pids, name)
    }

    fn write_limits(&self, name: &str, limits: &CgroupLimits) -> Result<(), SandboxError> {
        let mem = group_dir(&self.memory, name);
        let bytes = limits.memory_bytes.to_string();
        // memsw must stay >= the memory limit: memory first when lowering (a
        // fresh group starts unlimited), memsw first when raising (a reused
        // slot keeps its last run's limits; the kernel answers EINVAL).
        let limit = mem.join("memory.limit_in_bytes");
        let memsw = mem.join("memory.memsw.limit_in_bytes");
        let has_memsw = memsw.exists();
        if let Err(e) = write_file(&limit, &bytes) {
            if !has_memsw {
                return Err(e);
            }
            write_file(&memsw, &bytes)?;
            write_file(&limit, &bytes)?;
        }
        if has_memsw {
            write_file(&memsw, &bytes)?;
        } else if swap_active() {
            return Err(err(
                "swap is on but cgroup v1 has no memory.memsw (swap accounting off): \
                 the memory limit could spill into swap",
            ));
        }
        write_file(&mem.join("memory.oom_control"), "0")?;
        let pids = group_dir(&self.pids, name);
        write_file(&pids.join("pids.max"), &limits.pids.to_string())?;
        let cpu = group_dir(&self.cpu, name);
        write_file(&cpu.join("cpu.cfs_period_us"), &CPU_PERIOD_US.to_string())?;
        write_file(
            &cpu.join("cpu.cfs_quota_us"),
            &limits.cpu_quota_us().to_string(),
        )
    }

    fn stats(&self, name: &str) -> Result<CgroupStats, SandboxError> {
        let memory = group_dir(&self.memory, name);
        Ok(CgroupStats {
            peak_memory_bytes: single_value(&memory.join("memory.max_usage_in_bytes"))?,
            oom_killed: keyed_value(&memory.join("memory.oom_control"), "oom_kill")? > 0,
            pids_limit_hit: keyed_value(&self.members_dir(name).join("pids.events"), "max")? > 0,
            cpu_usage_ns: single_value(&group_dir(&self.cpuacct, name).join("cpuacct.usage"))?,
        })
    }

    fn kill_all(&self, name: &str) -> Result<(), SandboxError> {
        let freezer = self.freezer.as_ref().map(|f| group_dir(f, name));
        let suffix = format!("/{}/{name}", super::PARENT);
        kill::kill_all(
            &self.members_dir(name),
            KillMethod::FreezeAndSignal {
                freezer: freezer.as_deref(),
                suffix: &suffix,
            },
        )
    }

    fn clone_into_dir(&self, _name: &str) -> Option<PathBuf> {
        None
    }

    /// The thread, not `cgroup.procs`: every write of a pid, and of "0" to
    /// `cgroup.procs`, takes the kernel's global `cgroup_threadgroup_rwsem`
    /// for writing, and the first such writer after a quiet moment waits one
    /// RCU grace period for it (5-14 ms measured here, the largest single
    /// cost of a cold run). A thread that moves itself ("0" to `tasks`) is
    /// exempt: it cannot exit or exec under the kernel's hands, so no lock
    /// is taken (0.15 ms for three hierarchies). For a single-threaded
    /// process, such as the sandbox's init right after its clone, moving its
    /// thread moves the process.
    fn join_file(&self) -> &'static str {
        "tasks"
    }
}

fn swap_active() -> bool {
    std::fs::read_to_string("/proc/swaps")
        .map(|t| t.lines().skip(1).any(|l| !l.trim().is_empty()))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::cgroup::tests::*;
    use std::time::{Duration, Instant};

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

    /// A single-threaded child that writes "0" to the pre-opened `tasks`
    /// files is in the group in every hierarchy, and so are its children.
    #[test]
    fn a_self_join_through_tasks_moves_the_whole_process() {
        let host = v1_host();
        let mut cg = host
            .create(&unique("join"), &limits(64 * MIB, 8, 1.0))
            .unwrap();
        let dirs = cg.dirs().to_vec();
        let join = cg.open_join().unwrap();
        let suffix = format!("/{}/{}", crate::native::cgroup::PARENT, cg.name());
        let (status, out) = crate::native::caps::tests::run_in_child(|fd| {
            if join.join_self().is_err() {
                return 10;
            }
            // SAFETY: the grandchild only exits.
            let kid = unsafe { libc::fork() };
            if kid == 0 {
                // SAFETY: leaving the grandchild.
                unsafe { libc::_exit(0) };
            }
            // No allocation after fork in a threaded test process: the
            // membership goes through a stack buffer.
            let mut buf = [0u8; 4096];
            // SAFETY: a NUL-terminated path; reading into a live stack buffer.
            let n = unsafe {
                let f = libc::open(c"/proc/self/cgroup".as_ptr(), libc::O_RDONLY);
                libc::read(f, buf.as_mut_ptr().cast(), buf.len())
            };
            if n <= 0 {
                return 11;
            }
            crate::native::caps::tests::write_all(fd, &buf[..n as usize]);
            wait(kid);
            0
        });
        let out = String::from_utf8_lossy(&out);
        assert_eq!(status, 0, "{out}");
        for controller in ["memory", "pids", "cpu", "cpuacct", "freezer"] {
            assert!(
                out.lines().any(|l| {
                    let mut it = l.splitn(3, ':');
                    let (_, ctrls, path) = (it.next(), it.next(), it.next());
                    ctrls.is_some_and(|c| c.split(',').any(|c| c == controller))
                        && path == Some(suffix.as_str())
                }),
                "{controller} not joined: {out}"
            );
        }
        cg.destroy().unwrap();
        assert_gone(&dirs);
    }
}
