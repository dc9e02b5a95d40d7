//! Teardown: empty a group and remove it. v2 writes `cgroup.kill`; v1 has none,
//! so it freezes the group (when the freezer is mounted) so that nothing can
//! fork while the members are listed, SIGKILLs each of them through a pidfd and
//! thaws, until the group is empty. A group's members are those of its whole
//! subtree (an OCI runtime makes the container's group inside the run's).
//! Then every directory is removed, deepest first.
//!
//! A member is killed only after checking, with its pid pinned by a pidfd, that
//! it still lives in this group: a pid recycled by an unrelated host process
//! between reading `cgroup.procs` and the kill is never signalled.

use super::fs::{members_of, subtree, write_file};
use super::{err, io_err};
use crate::SandboxError;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long teardown waits for members to disappear and for rmdir to succeed.
const TEARDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// How a group's members are killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KillMethod<'a> {
    /// v2: one write to `cgroup.kill` kills the whole group atomically.
    CgroupKill,
    /// v1: freeze (with the freezer directory when mounted), SIGKILL every
    /// member whose cgroup path ends with `suffix`, thaw, repeat.
    FreezeAndSignal {
        freezer: Option<&'a Path>,
        suffix: &'a str,
    },
}

/// SIGKILLs every member of the group whose `cgroup.procs` is in `members`
/// and waits until the group is empty.
pub(super) fn kill_all(members: &Path, method: KillMethod) -> Result<(), SandboxError> {
    let deadline = Instant::now() + TEARDOWN_TIMEOUT;
    if method == KillMethod::CgroupKill && !members_of(members)?.is_empty() {
        write_file(&members.join("cgroup.kill"), "1")?;
    }
    loop {
        let pids = members_of(members)?;
        if pids.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(err(format!(
                "{} still has members after SIGKILL: {pids:?}",
                members.display()
            )));
        }
        if let KillMethod::FreezeAndSignal { freezer, suffix } = method {
            // Even when FROZEN is not confirmed in time, the group is thawed
            // again: a killed task cannot finish exiting while frozen.
            freeze(freezer, true);
            for pid in members_of(members)? {
                kill_member(pid, suffix);
            }
            freeze(freezer, false);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Removes the group's directories, last first, until none is left; each
/// with the groups below it, deepest first (cgroupfs refuses to remove a
/// group that has children, with EBUSY). Members that just died may still be
/// leaving the group: EBUSY is retried for a while. `dirs` shrinks as
/// directories go, so a failure leaves the rest listed.
pub(super) fn remove_dirs(dirs: &mut Vec<PathBuf>) -> Result<(), SandboxError> {
    let deadline = Instant::now() + TEARDOWN_TIMEOUT;
    while let Some(dir) = dirs.last().cloned() {
        remove_below(&dir, deadline)?;
        remove_dir(&dir, deadline)?;
        dirs.pop();
    }
    Ok(())
}

/// Removes the groups below each of `dirs`, deepest first, leaving `dirs`
/// themselves: a reused slot is left an empty leaf.
pub(super) fn remove_groups_below(dirs: &[PathBuf]) -> Result<(), SandboxError> {
    let deadline = Instant::now() + TEARDOWN_TIMEOUT;
    dirs.iter().try_for_each(|dir| remove_below(dir, deadline))
}

fn remove_below(dir: &Path, deadline: Instant) -> Result<(), SandboxError> {
    // subtree lists `dir` first, then its descendants, parents first.
    for group in subtree(dir)?.iter().skip(1).rev() {
        remove_dir(group, deadline)?;
    }
    Ok(())
}

fn remove_dir(dir: &Path, deadline: Instant) -> Result<(), SandboxError> {
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(io_err("rmdir", dir, e)),
        }
    }
}

/// v1 freezer: writes FROZEN/THAWED; for FROZEN waits (briefly) until the
/// kernel confirms. Returns whether the state was reached.
fn freeze(freezer: Option<&Path>, frozen: bool) -> bool {
    let Some(dir) = freezer else {
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

/// True when no process has this pid (kill with signal 0 answers ESRCH).
pub(super) fn process_is_gone(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the pid exists; nothing is sent.
    let rc = unsafe { libc::kill(pid, 0) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// SIGKILLs `pid` if, once pinned by a pidfd, it still lives in a cgroup whose
/// path ends with `suffix` (e.g. `/airlock/<name>`), or below it. Returns
/// whether it sent it.
fn kill_member(pid: i32, suffix: &str) -> bool {
    // SAFETY: pidfd_open takes integers; the returned fd is closed below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
    if fd < 0 {
        return false; // already gone
    }
    // The pidfd pins this process: if the pid was recycled before pidfd_open,
    // /proc/<pid>/cgroup now describes the new process and the check fails.
    let belongs = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .map(|t| t.lines().any(|l| in_group(l.trim_end(), suffix)))
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

/// Whether a `/proc/<pid>/cgroup` line puts the process in the group whose
/// path ends with `suffix`, or in a group below it.
fn in_group(line: &str, suffix: &str) -> bool {
    let Some((_, path)) = line
        .split_once(':')
        .and_then(|(_, rest)| rest.split_once(':'))
    else {
        return false;
    };
    path.ends_with(suffix) || path.contains(&format!("{suffix}/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::cgroup::tests::*;

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

    /// A group made below the run's (as an OCI runtime makes the
    /// container's) is part of it: its members are killed and it is removed
    /// first, so the run's own directories can go.
    #[test]
    fn v1_destroy_empties_and_removes_groups_below() {
        let host = v1_host();
        let mut cg = host
            .create(&unique("below"), &limits(64 * MIB, 16, 1.0))
            .unwrap();
        let dirs = cg.dirs().to_vec();
        let nested: Vec<_> = dirs.iter().map(|d| d.join("ctr").join("inner")).collect();
        let (pid, go) = spawn_waiting(pause_forever);
        for dir in &nested {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("cgroup.procs"), pid.to_string()).unwrap();
        }
        release(go);
        assert_eq!(cg.members().unwrap(), vec![pid]);
        let started = Instant::now();
        cg.destroy().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let status = wait_dying(pid);
        assert!(libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL);
        assert_gone(&nested);
        assert_gone(&dirs);
    }

    #[test]
    fn a_member_of_a_group_below_is_in_the_group() {
        let suffix = "/airlock/slot-3";
        assert!(in_group("4:pids:/airlock/slot-3", suffix));
        assert!(in_group("4:pids:/ns/airlock/slot-3/airlock-r1", suffix));
        assert!(!in_group("4:pids:/airlock/slot-30", suffix));
        assert!(!in_group("4:pids:/airlock/slot-30/x", suffix));
        assert!(!in_group("garbage", suffix));
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
}
