//! Resource limits of the sandboxed command (rlimits).
//!
//! Applied in the sandboxed process before `execve`; children inherit them.
//!
//! * `RLIMIT_CPU`: soft limit `cpu_secs` (SIGXCPU), hard limit one second later
//!   (SIGKILL), so a process that catches SIGXCPU still stops.
//! * `RLIMIT_FSIZE`: the largest file the command may write (EFBIG/SIGXFSZ past it).
//! * `RLIMIT_NOFILE`: open descriptors per process.
//! * `RLIMIT_CORE`: 0, so a crash writes no core file (which could hold secrets,
//!   and whose path comes from the host's `core_pattern`).
//!
//! `RLIMIT_NPROC` is deliberately not set. It counts processes per *real uid*,
//! and every sandbox's root maps to the same unprivileged host uid, so the count
//! would be shared by concurrent sandboxes (one sandbox could exhaust another's
//! budget) and would include the helper; root inside the user namespace is also
//! exempt from it while it still holds `CAP_SYS_RESOURCE`/`CAP_SYS_ADMIN`. The
//! pids cgroup (`pids.max`) is the per-sandbox limit on processes and threads.
//! Rootless mode is different (see [`StandIns`]): each run's root is counted in
//! a user namespace of its own, so `RLIMIT_NPROC` there is per run (measured: two
//! concurrent rootless runs with `limits.pids = 128` each forked 127 children
//! before EAGAIN).
//!
//! [`apply`] is async-signal-safe on its success path.

use crate::Layer;
use crate::SandboxError;

const LAYER: Layer = Layer::Rlimits;

/// The limits [`apply`] sets. `core` is always 0 and therefore not a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RlimitSpec {
    /// CPU seconds per process (soft); the hard limit is one second more.
    pub cpu_secs: u64,
    /// Largest file size in bytes.
    pub file_size_bytes: u64,
    /// Maximum number of open file descriptors.
    pub open_files: u64,
}

impl RlimitSpec {
    /// Derives the rlimits from the sandbox limits. The CPU time is rounded up
    /// to whole seconds (the kernel's unit), never down to zero.
    pub fn from_limits(limits: &crate::Limits) -> RlimitSpec {
        RlimitSpec {
            cpu_secs: limits.cpu_time_ms.div_ceil(1000).max(1),
            file_size_bytes: limits.file_size_bytes,
            open_files: u64::from(limits.open_files),
        }
    }

    /// These limits with the CPU time of `limits` instead (a pooled sandbox is
    /// built before its run's limits are known: see `protocol::Launch`).
    pub fn with_cpu_time_of(self, limits: &crate::Limits) -> RlimitSpec {
        RlimitSpec {
            cpu_secs: RlimitSpec::from_limits(limits).cpu_secs,
            ..self
        }
    }

    /// The (resource, soft, hard) triples `apply` sets, in order.
    pub fn entries(&self) -> [(libc::__rlimit_resource_t, u64, u64, &'static str); 4] {
        [
            (
                libc::RLIMIT_CPU,
                self.cpu_secs,
                self.cpu_secs.saturating_add(1),
                "RLIMIT_CPU",
            ),
            (
                libc::RLIMIT_FSIZE,
                self.file_size_bytes,
                self.file_size_bytes,
                "RLIMIT_FSIZE",
            ),
            (
                libc::RLIMIT_NOFILE,
                self.open_files,
                self.open_files,
                "RLIMIT_NOFILE",
            ),
            (libc::RLIMIT_CORE, 0, 0, "RLIMIT_CORE"),
        ]
    }
}

/// Rlimits that stand in for a cgroup in rootless mode (see
/// [`super::rootless`]).
///
/// * `RLIMIT_NPROC`: in rootless mode every run has a user namespace of its
///   own, and the kernel (5.14 and later) counts a user's processes per user
///   namespace, checking the innermost count against the rlimit: `pids + 1`
///   (init) is then a per-run process and thread limit, whether or not a cgroup
///   exists. Sandbox root holds no capability, so it is not exempt.
/// * `RLIMIT_DATA`: only without a cgroup, and only as best effort accepted by
///   the policy: per process, not per tree, and private data only (shared
///   anonymous mappings and memfds are not counted). `RLIMIT_AS` would count
///   them but breaks runtimes that reserve address space (node, the JVM, wasm).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StandIns {
    pub nproc: Option<u64>,
    pub data_bytes: Option<u64>,
}

impl StandIns {
    pub fn for_run(limits: &crate::Limits, rootless: bool, no_cgroup: bool) -> StandIns {
        if !rootless {
            return StandIns::default();
        }
        StandIns {
            nproc: Some(u64::from(limits.pids) + 1),
            data_bytes: no_cgroup.then_some(limits.memory_bytes),
        }
    }
}

/// Sets the stand-ins (soft and hard).
pub fn apply_stand_ins(s: &StandIns) -> Result<(), SandboxError> {
    for (resource, value, name) in [
        (libc::RLIMIT_NPROC, s.nproc, "RLIMIT_NPROC"),
        (libc::RLIMIT_DATA, s.data_bytes, "RLIMIT_DATA"),
    ] {
        let Some(v) = value else { continue };
        let limit = libc::rlimit {
            rlim_cur: v,
            rlim_max: v,
        };
        // SAFETY: setrlimit reads one rlimit struct that lives on this stack frame.
        if unsafe { libc::setrlimit(resource, &limit) } != 0 {
            return Err(SandboxError::Layer {
                layer: LAYER,
                detail: format!(
                    "setrlimit({name}, {v}): {}",
                    std::io::Error::last_os_error()
                ),
            });
        }
    }
    Ok(())
}

/// Sets every limit of `spec` (soft and hard, so the command cannot raise them).
pub fn apply(spec: &RlimitSpec) -> Result<(), SandboxError> {
    if spec.cpu_secs == 0 || spec.open_files == 0 {
        return Err(SandboxError::Spec(
            "rlimits: cpu_secs and open_files must be at least 1".into(),
        ));
    }
    for (resource, soft, hard, name) in spec.entries() {
        let limit = libc::rlimit {
            rlim_cur: soft,
            rlim_max: hard,
        };
        // SAFETY: setrlimit reads one rlimit struct that lives on this stack frame.
        let rc = unsafe { libc::setrlimit(resource, &limit) };
        if rc != 0 {
            return Err(SandboxError::Layer {
                layer: LAYER,
                detail: format!(
                    "setrlimit({name}, {soft}, {hard}): {}",
                    std::io::Error::last_os_error()
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::caps::tests::{run_in_child, write_all};

    fn errno() -> i32 {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    }

    #[test]
    fn zero_values_are_refused() {
        let spec = RlimitSpec {
            cpu_secs: 0,
            file_size_bytes: 1,
            open_files: 1,
        };
        assert!(matches!(apply(&spec), Err(SandboxError::Spec(_))));
    }

    #[test]
    fn cpu_time_rounds_up() {
        let limits = crate::Limits {
            timeout_ms: 1,
            cpu_time_ms: 1500,
            memory_bytes: 1,
            pids: 1,
            cpus: 1.0,
            output_bytes: 1,
            tmp_bytes: 1,
            file_size_bytes: 4096,
            open_files: 7,
        };
        assert_eq!(
            RlimitSpec::from_limits(&limits),
            RlimitSpec {
                cpu_secs: 2,
                file_size_bytes: 4096,
                open_files: 7
            }
        );
    }

    /// File size and descriptor limits are in force: a write past the limit
    /// fails with EFBIG and the file on disk stops at the limit; the descriptor
    /// past the limit fails with EMFILE. The parent reads the child's limits from
    /// /proc/<pid>/limits while it waits.
    #[test]
    fn file_size_and_open_files_are_enforced() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        let big_c = std::ffi::CString::new(big.to_str().unwrap()).unwrap();
        let spec = RlimitSpec {
            cpu_secs: 30,
            file_size_bytes: 8192,
            open_files: 16,
        };
        let (status, out) = run_in_child(|fd| {
            // SAFETY: ignoring SIGXFSZ so the oversized write reports EFBIG.
            unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
            if apply(&spec).is_err() {
                return 10;
            }
            // SAFETY: big_c is a valid C string.
            let f = unsafe {
                libc::open(
                    big_c.as_ptr(),
                    libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC,
                    0o600,
                )
            };
            let buf = [b'a'; 4096];
            let mut write_errno = 0;
            for _ in 0..4 {
                // SAFETY: buf is a live 4096-byte buffer.
                let n = unsafe { libc::write(f, buf.as_ptr().cast(), buf.len()) };
                if n < 0 {
                    write_errno = errno();
                    break;
                }
            }
            let mut open_errno = 0;
            for _ in 0..32 {
                // SAFETY: dup of a valid fd.
                if unsafe { libc::dup(0) } < 0 {
                    open_errno = errno();
                    break;
                }
            }
            write_all(fd, &write_errno.to_ne_bytes());
            write_all(fd, &open_errno.to_ne_bytes());
            0
        });
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        assert_eq!(
            i32::from_ne_bytes(out[0..4].try_into().unwrap()),
            libc::EFBIG
        );
        assert_eq!(
            i32::from_ne_bytes(out[4..8].try_into().unwrap()),
            libc::EMFILE
        );
        assert_eq!(std::fs::metadata(&big).unwrap().len(), 8192);
    }

    /// The CPU limit kills a spinning process: SIGXCPU at the soft limit.
    /// Also checks the core limit the kernel reports for the child.
    #[test]
    fn cpu_limit_stops_a_spinning_process_and_core_is_zero() {
        let spec = RlimitSpec {
            cpu_secs: 1,
            file_size_bytes: 1 << 20,
            open_files: 64,
        };
        let (status, out) = run_in_child(|fd| {
            if apply(&spec).is_err() {
                return 10;
            }
            let mut lim = libc::rlimit {
                rlim_cur: 1,
                rlim_max: 1,
            };
            // SAFETY: lim is a valid out pointer.
            unsafe { libc::getrlimit(libc::RLIMIT_CORE, &mut lim) };
            write_all(fd, &lim.rlim_cur.to_ne_bytes());
            write_all(fd, &lim.rlim_max.to_ne_bytes());
            // SAFETY: closing the pipe so the parent's read returns before the spin ends.
            unsafe { libc::close(fd) };
            let mut x: u64 = 0;
            loop {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        });
        assert_eq!(&out[..], &[0u8; 16][..], "core limit is not 0/0");
        assert!(libc::WIFSIGNALED(status), "status {status:#x}");
        let sig = libc::WTERMSIG(status);
        assert!(sig == libc::SIGXCPU || sig == libc::SIGKILL, "signal {sig}");
    }
}
