//! cgroup v2: one unified tree. A run's group is `<root>/airlock/<name>` with
//! `memory.max`, `memory.swap.max = 0`, `memory.oom.group = 1` (an OOM kills
//! the whole sandbox, not one victim), `pids.max` and `cpu.max`; the root and
//! `airlock/` delegate memory, pids and cpu to their children through
//! `cgroup.subtree_control`. Teardown writes `cgroup.kill`.
//!
//! Tested against a temporary directory shaped like cgroupfs (this machine has
//! no v2 controllers); the real hierarchy is tested in the QEMU guest of
//! `scripts/test.d/48-cgroup-v2.sh`.

use super::fs::{keyed_value, single_value, write_file};
use super::kill::{self, KillMethod};
use super::{group_dir, CgroupLimits, CgroupStats, CgroupVersion, Controller, CPU_PERIOD_US};
use crate::SandboxError;
use std::path::{Path, PathBuf};

/// A cgroup2 mount, a delegated subtree of one, or a test directory shaped
/// like one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V2 {
    pub root: PathBuf,
}

impl Controller for V2 {
    fn version(&self) -> CgroupVersion {
        CgroupVersion::V2
    }

    fn hierarchies(&self) -> Vec<(&'static str, PathBuf)> {
        vec![("unified", self.root.clone())]
    }

    fn prepare_parent(&self, parent: &Path) -> Result<(), SandboxError> {
        enable_controllers(&self.root)?;
        super::fs::mkdir(parent, true)?;
        enable_controllers(parent)
    }

    fn members_dir(&self, name: &str) -> PathBuf {
        group_dir(&self.root, name)
    }

    fn write_limits(&self, name: &str, limits: &CgroupLimits) -> Result<(), SandboxError> {
        let dir = group_dir(&self.root, name);
        write_file(&dir.join("memory.max"), &limits.memory_bytes.to_string())?;
        write_file(&dir.join("memory.swap.max"), "0")?;
        write_file(&dir.join("memory.oom.group"), "1")?;
        write_file(&dir.join("pids.max"), &limits.pids.to_string())?;
        write_file(
            &dir.join("cpu.max"),
            &format!("{} {CPU_PERIOD_US}", limits.cpu_quota_us()),
        )
    }

    fn stats(&self, name: &str) -> Result<CgroupStats, SandboxError> {
        let dir = group_dir(&self.root, name);
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
            cpu_usage_ns: keyed_value(&dir.join("cpu.stat"), "usage_usec")?.saturating_mul(1000),
        })
    }

    fn kill_all(&self, name: &str) -> Result<(), SandboxError> {
        kill::kill_all(&group_dir(&self.root, name), KillMethod::CgroupKill)
    }

    fn clone_into_dir(&self, name: &str) -> Option<PathBuf> {
        Some(group_dir(&self.root, name))
    }

    /// The whole process. Rarely used: init is born in its group
    /// (`CLONE_INTO_CGROUP`).
    fn join_file(&self) -> &'static str {
        "cgroup.procs"
    }
}

/// Makes memory, pids and cpu available to the children of `dir`.
fn enable_controllers(dir: &Path) -> Result<(), SandboxError> {
    let path = dir.join("cgroup.subtree_control");
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    let enabled: Vec<&str> = current.split_whitespace().collect();
    if ["memory", "pids", "cpu"]
        .iter()
        .all(|c| enabled.contains(c))
    {
        return Ok(());
    }
    write_file(&path, "+memory +pids +cpu").map_err(|e| {
        // cgroup v2's no-internal-process rule: a cgroup (other than the root)
        // that holds processes cannot enable controllers for its children. It
        // happens when airlock runs in the delegated cgroup itself.
        let busy =
            std::fs::read_to_string(dir.join("cgroup.procs")).is_ok_and(|p| !p.trim().is_empty());
        if busy {
            super::err(format!(
                "{} holds processes, so it cannot enable memory, pids and cpu for its \
                 children (cgroup v2 allows no processes in a cgroup that does): start airlock \
                 in a leaf cgroup below it (e.g. {}/session), or move its processes to one and \
                 write \"+memory +pids +cpu\" to {}",
                dir.display(),
                dir.display(),
                path.display()
            ))
        } else {
            e
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::cgroup::tests::*;
    use crate::native::cgroup::{CgroupHost, CgroupStats};
    use std::time::{Duration, Instant};

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

    /// The cgroup2 mount of this machine, if any (here the hybrid `unified`
    /// one, which holds no controllers: enough to prove where a child is born).
    fn cgroup2_mount() -> Option<PathBuf> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        super::super::detect::cgroup_mounts(&mountinfo)
            .into_iter()
            .find(|(_, t, _)| t == "cgroup2")
            .map(|(p, _, _)| p)
    }

    #[test]
    fn v2_a_delegated_cgroup_that_holds_processes_is_named_with_the_fix() {
        // What the kernel does when airlock runs in the delegated cgroup itself
        // (EBUSY on cgroup.subtree_control), played by a subtree_control that
        // cannot be written (a directory) and a non-empty cgroup.procs.
        let root = fake_v2_root();
        std::fs::remove_file(root.path().join("cgroup.subtree_control")).unwrap();
        std::fs::create_dir(root.path().join("cgroup.subtree_control")).unwrap();
        std::fs::write(root.path().join("cgroup.procs"), "4242\n").unwrap();
        let e = CgroupHost::v2_at(root.path())
            .create("1-busy", &limits(MIB, 1, 1.0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("holds processes"), "{e}");
        assert!(e.contains("/session"), "{e}");
        assert!(!root.path().join("airlock/1-busy").exists());
        // Without processes, the kernel's own error is passed on.
        std::fs::write(root.path().join("cgroup.procs"), "").unwrap();
        let e = CgroupHost::v2_at(root.path())
            .create("1-busy", &limits(MIB, 1, 1.0))
            .unwrap_err()
            .to_string();
        assert!(!e.contains("holds processes"), "{e}");
    }

    /// clone3(CLONE_INTO_CGROUP) on a real cgroup2 hierarchy: the child's first
    /// read of /proc/self/cgroup already names its group. Only our own child
    /// group of `airlock/` is made and removed.
    #[test]
    fn a_child_is_born_in_its_group() {
        use crate::sys;
        use std::os::fd::{AsFd, AsRawFd};
        let Some(mount) = cgroup2_mount() else {
            eprintln!("no cgroup2 mount on this machine: nothing to test");
            return;
        };
        let parent = mount.join(crate::native::cgroup::PARENT);
        let made_parent = std::fs::create_dir(&parent).is_ok();
        let name = format!("{}-born", std::process::id());
        let dir = parent.join(&name);
        std::fs::create_dir(&dir).unwrap();
        let fd = sys::open(
            &dir,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            0,
        )
        .unwrap();
        let (r, w) = sys::pipe().unwrap();
        let pid = sys::clone_into_cgroup(0, fd.as_fd()).unwrap();
        if pid == 0 {
            // Raw syscalls only: this test process has other threads.
            let mut buf = [0u8; 4096];
            // SAFETY: a static NUL-terminated path; buf is live and writable
            // for its length; w is our pipe end; _exit never returns.
            unsafe {
                let f = libc::open(c"/proc/self/cgroup".as_ptr(), libc::O_RDONLY);
                let n = libc::read(f, buf.as_mut_ptr().cast(), buf.len());
                if n > 0 {
                    libc::write(w.as_raw_fd(), buf.as_ptr().cast(), n as usize);
                }
                libc::_exit(0);
            }
        }
        drop(w);
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = sys::read(r.as_raw_fd(), &mut buf) {
            seen.extend_from_slice(&buf[..n]);
        }
        let status = sys::waitpid(pid, 0).unwrap();
        let _ = std::fs::remove_dir(&dir);
        if made_parent {
            let _ = std::fs::remove_dir(&parent);
        }
        let seen = String::from_utf8_lossy(&seen);
        let rel = dir.strip_prefix(&mount).unwrap().display().to_string();
        assert!(
            seen.lines().any(|l| l == format!("0::/{rel}")),
            "child not born in {rel}: {seen} (status {status:?})"
        );
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        assert!(!own.contains(&name), "the parent moved: {own}");
    }
}
