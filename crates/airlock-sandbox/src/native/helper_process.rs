//! The helper as the caller holds it: its pid and the caller's ends of its
//! stdio pipes, whether it was spawned (fork and exec, any caller) or forked
//! in advance by a single-threaded caller ([`super::prefork`]).

use crate::sys;
use std::fs::File;
use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus};

/// `exe arg` as every helper-side process is started (the helper itself, or
/// the forker that forks helpers): an empty environment but the helper's
/// debug switches ([`super::protocol::HELPER_ENV`]), `/` as its directory,
/// and each `(fd, target)` of `passed` at `target`. Stdio is the caller's to set.
pub(crate) fn helper_command(exe: &Path, arg: &str, passed: Vec<(RawFd, RawFd)>) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg(arg).env_clear().current_dir("/");
    for name in super::protocol::HELPER_ENV {
        if let Some(v) = std::env::var_os(name) {
            cmd.env(name, v);
        }
    }
    // `passed` is built before the fork: the closure below only reads it.
    // SAFETY: the closure runs between fork and exec and only calls fcntl and
    // dup2 (sys::place_fds), which are async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || sys::place_fds(&passed));
    }
    cmd
}

#[derive(Debug)]
pub(crate) struct HelperProcess {
    pid: libc::pid_t,
    /// Set once reaped: the pid may then belong to another process.
    status: Option<ExitStatus>,
    pub(crate) stdin: Option<File>,
    pub(crate) stdout: Option<OwnedFd>,
    pub(crate) stderr: Option<OwnedFd>,
}

impl HelperProcess {
    /// A helper started with `std::process::Command` (its pipes taken over;
    /// std neither waits for nor kills a dropped `Child`).
    pub(crate) fn from_child(mut child: std::process::Child) -> HelperProcess {
        HelperProcess {
            pid: child.id() as libc::pid_t,
            status: None,
            stdin: child.stdin.take().map(|p| File::from(OwnedFd::from(p))),
            stdout: child.stdout.take().map(OwnedFd::from),
            stderr: child.stderr.take().map(OwnedFd::from),
        }
    }

    /// A helper this process forked itself (it is its parent).
    pub(crate) fn forked(
        pid: libc::pid_t,
        stdin: Option<File>,
        stdout: OwnedFd,
        stderr: OwnedFd,
    ) -> HelperProcess {
        HelperProcess {
            pid,
            status: None,
            stdin,
            stdout: Some(stdout),
            stderr: Some(stderr),
        }
    }

    pub(crate) fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        let (_, raw) = sys::waitpid(self.pid, 0)?;
        let status = ExitStatus::from_raw(raw);
        self.status = Some(status);
        Ok(status)
    }

    /// `None` while it still runs.
    pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(s) = self.status {
            return Ok(Some(s));
        }
        match sys::waitpid(self.pid, libc::WNOHANG)? {
            (0, _) => Ok(None),
            (_, raw) => {
                let status = ExitStatus::from_raw(raw);
                self.status = Some(status);
                Ok(Some(status))
            }
        }
    }

    /// Its pid while it is not reaped (after that, the pid may be another
    /// process's).
    pub(crate) fn pid(&self) -> Option<libc::pid_t> {
        self.status.is_none().then_some(self.pid)
    }

    /// SIGKILL, unless already reaped (its pid may be reused by then).
    pub(crate) fn kill(&mut self) {
        if self.status.is_none() {
            sys::kill(self.pid, libc::SIGKILL);
        }
    }
}
