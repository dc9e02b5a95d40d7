//! Privileges layer: `no_new_privs` and the removal of every capability.
//!
//! Called in the sandboxed process after the namespaces and mounts are built
//! (those steps need capabilities) and before seccomp is installed (the seccomp
//! filter needs `no_new_privs`). Order inside [`drop_all_capabilities`]:
//!
//! 1. bounding set: `PR_CAPBSET_DROP` for every capability the kernel knows
//!    (needs `CAP_SETPCAP` in the effective set, so it comes first);
//! 2. securebits: `NOROOT`, `NO_SETUID_FIXUP`, `NO_CAP_AMBIENT_RAISE` set, `KEEP_CAPS`
//!    cleared, all locked (also needs `CAP_SETPCAP`). With the bounding set empty,
//!    uid 0 already gains nothing at `execve`; `NOROOT` makes that hold even if
//!    some later step were to refill it;
//! 3. ambient set: `PR_CAP_AMBIENT_CLEAR_ALL`;
//! 4. effective, permitted and inheritable sets: `capset` to zero.
//!
//! Every function is async-signal-safe on its success path (plain syscalls, no
//! allocation), so it may run between `fork` and `execve`.

use crate::Layer;
use crate::SandboxError;

const LAYER_CAPS: Layer = Layer::Capabilities;
const LAYER_NNP: Layer = Layer::NoNewPrivs;

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

const SECBIT_NOROOT: libc::c_int = 1 << 0;
const SECBIT_NOROOT_LOCKED: libc::c_int = 1 << 1;
const SECBIT_NO_SETUID_FIXUP: libc::c_int = 1 << 2;
const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_int = 1 << 3;
const SECBIT_KEEP_CAPS_LOCKED: libc::c_int = 1 << 5;
const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_int = 1 << 6;
const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_int = 1 << 7;

/// The securebits [`lock_securebits`] sets (`KEEP_CAPS` itself stays clear).
pub const LOCKED_SECUREBITS: libc::c_int = SECBIT_NOROOT
    | SECBIT_NOROOT_LOCKED
    | SECBIT_NO_SETUID_FIXUP
    | SECBIT_NO_SETUID_FIXUP_LOCKED
    | SECBIT_KEEP_CAPS_LOCKED
    | SECBIT_NO_CAP_AMBIENT_RAISE
    | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;

#[repr(C)]
struct CapUserHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapUserData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn layer_error(layer: Layer, what: &str, err: i32) -> SandboxError {
    SandboxError::Layer {
        layer,
        detail: format!("{what}: {}", std::io::Error::from_raw_os_error(err)),
    }
}

/// Sets `no_new_privs`: `execve` can no longer grant privileges (setuid bits,
/// file capabilities), and unprivileged seccomp and landlock become possible.
pub fn set_no_new_privs() -> Result<(), SandboxError> {
    // SAFETY: PR_SET_NO_NEW_PRIVS takes integer arguments only and touches no memory.
    let rc = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    if rc != 0 {
        return Err(layer_error(
            LAYER_NNP,
            "prctl(PR_SET_NO_NEW_PRIVS)",
            errno(),
        ));
    }
    Ok(())
}

/// Empties the bounding set, in one pass that ends where the kernel answers
/// `EINVAL` (past its last capability). A capability already absent is not
/// dropped again, so an already-empty set needs no `CAP_SETPCAP`: without it
/// the kernel refuses every drop with `EPERM`, and a read tells an absent
/// capability (fine) from a present one (an error) and from the end.
pub fn drop_bounding_set() -> Result<(), SandboxError> {
    // The end is found by the kernel's EINVAL, the value
    // /proc/sys/kernel/cap_last_cap shows, without needing /proc (the sandbox
    // may not have mounted one yet). Capability numbers are small (40 on
    // 6.18); 64 leaves room for the kernel to grow while keeping the two-word
    // capset layout valid.
    for cap in 0..64u32 {
        // SAFETY: PR_CAPBSET_DROP takes an integer and touches no memory.
        let rc = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) };
        if rc == 0 {
            continue;
        }
        let dropped = errno();
        if dropped == libc::EINVAL && cap > 0 {
            return Ok(());
        }
        if dropped == libc::EPERM {
            // SAFETY: PR_CAPBSET_READ takes an integer and touches no memory.
            let present =
                unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong, 0, 0, 0) };
            match present {
                0 => continue,
                p if p < 0 && errno() == libc::EINVAL && cap > 0 => return Ok(()),
                _ => {}
            }
        }
        return Err(layer_error(
            LAYER_CAPS,
            &format!("prctl(PR_CAPBSET_DROP, {cap})"),
            dropped,
        ));
    }
    Ok(())
}

/// Sets and locks [`LOCKED_SECUREBITS`]. Skipped when they are already set (a
/// locked bit cannot be set again without `CAP_SETPCAP`).
pub fn lock_securebits() -> Result<(), SandboxError> {
    // SAFETY: PR_GET_SECUREBITS takes no pointer.
    let current = unsafe { libc::prctl(libc::PR_GET_SECUREBITS, 0, 0, 0, 0) };
    if current < 0 {
        return Err(layer_error(LAYER_CAPS, "prctl(PR_GET_SECUREBITS)", errno()));
    }
    if current & LOCKED_SECUREBITS == LOCKED_SECUREBITS {
        return Ok(());
    }
    // SECBIT_KEEP_CAPS (bit 4) is cleared: its lock bit freezes it off.
    let wanted = (current | LOCKED_SECUREBITS) & !(1 << 4);
    // SAFETY: PR_SET_SECUREBITS takes an integer and touches no memory.
    let rc = unsafe { libc::prctl(libc::PR_SET_SECUREBITS, wanted as libc::c_ulong, 0, 0, 0) };
    if rc != 0 {
        return Err(layer_error(LAYER_CAPS, "prctl(PR_SET_SECUREBITS)", errno()));
    }
    Ok(())
}

/// Clears the ambient set.
pub fn clear_ambient_set() -> Result<(), SandboxError> {
    // SAFETY: PR_CAP_AMBIENT_CLEAR_ALL takes integers only and touches no memory.
    let rc = unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    if rc != 0 {
        return Err(layer_error(
            LAYER_CAPS,
            "prctl(PR_CAP_AMBIENT_CLEAR_ALL)",
            errno(),
        ));
    }
    Ok(())
}

/// Sets the effective, permitted and inheritable sets to zero.
pub fn clear_process_sets() -> Result<(), SandboxError> {
    let header = CapUserHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapUserData::default(); 2];
    // SAFETY: capset reads one header and two data structs (version 3), both live
    // on this stack frame with the kernel's layout (#[repr(C)]).
    let rc = unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) };
    if rc != 0 {
        return Err(layer_error(LAYER_CAPS, "capset(0, 0, 0)", errno()));
    }
    Ok(())
}

/// Drops every capability from every set: bounding, ambient, effective,
/// permitted and inheritable, and locks the securebits so that uid 0 does not
/// regain them at `execve`. See the module documentation for the order.
pub fn drop_all_capabilities() -> Result<(), SandboxError> {
    drop_bounding_set()?;
    lock_securebits()?;
    clear_ambient_set()?;
    clear_process_sets()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::FromRawFd;

    /// Runs `child` in a forked process and returns (raw wait status, bytes the
    /// child wrote to the pipe whose write end it receives).
    ///
    /// The test harness is multi-threaded, so the child keeps to plain syscalls
    /// (glibc's malloc is fork-safe, so small allocations are tolerated) and
    /// always leaves through `_exit`.
    pub(crate) fn run_in_child(child: impl FnOnce(libc::c_int) -> i32) -> (i32, Vec<u8>) {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid two-int array for pipe2 to fill.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: fork has no memory preconditions; the child only runs `child` and _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // SAFETY: closing our copy of the read end, a valid fd.
            unsafe { libc::close(fds[0]) };
            let code = child(fds[1]);
            // SAFETY: _exit never returns and runs no destructors or atexit handlers.
            unsafe { libc::_exit(code) };
        }
        // SAFETY: closing the parent's copy of the write end, a valid fd.
        unsafe { libc::close(fds[1]) };
        // SAFETY: fds[0] is an open fd that this File now owns alone.
        let mut reader = unsafe { std::fs::File::from_raw_fd(fds[0]) };
        let mut out = Vec::new();
        reader.read_to_end(&mut out).expect("read child pipe");
        let mut status = 0;
        // SAFETY: waiting for our own child; status is a valid out pointer.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        (status, out)
    }

    pub(crate) fn write_all(fd: libc::c_int, bytes: &[u8]) {
        // SAFETY: bytes is a live slice; fd is the pipe's write end.
        unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    }

    fn status_field(status: &str, key: &str) -> String {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| panic!("{key} missing from status:\n{status}"))
    }

    /// The one pass stops where the kernel's capabilities end: every number up
    /// to `/proc/sys/kernel/cap_last_cap` is dropped, the next one is invalid.
    #[test]
    fn the_bounding_drop_ends_at_the_last_capability_proc_shows() {
        let proc_value: u32 = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let read = |cap: u32| {
            // SAFETY: PR_CAPBSET_READ takes an integer and touches no memory.
            let rc = unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong, 0, 0, 0) };
            if rc < 0 {
                -errno()
            } else {
                rc
            }
        };
        let (status, out) = run_in_child(|fd| {
            if drop_bounding_set().is_err() {
                return 10;
            }
            for cap in 0..=proc_value + 1 {
                write_all(fd, &read(cap).to_ne_bytes());
            }
            0
        });
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        let answers: Vec<i32> = out
            .chunks_exact(4)
            .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(answers.len() as u32, proc_value + 2);
        let (last, kept) = answers.split_last().unwrap();
        assert!(kept.iter().all(|&a| a == 0), "still in the set: {kept:?}");
        assert_eq!(*last, -libc::EINVAL, "cap_last_cap + 1 is not the end");
    }

    #[test]
    fn every_set_is_empty_after_drop_and_stays_empty_across_exec_as_root() {
        // SAFETY: geteuid has no preconditions.
        assert_eq!(unsafe { libc::geteuid() }, 0, "this test needs root");
        let (status, out) = run_in_child(|fd| {
            if set_no_new_privs().is_err() || drop_all_capabilities().is_err() {
                return 10;
            }
            // Exec as uid 0: without the drop, root would regain the full set here.
            // SAFETY: dup2 onto stdout of the child only.
            unsafe { libc::dup2(fd, 1) };
            let prog = c"/bin/cat";
            let arg = c"/proc/self/status";
            let argv = [prog.as_ptr(), arg.as_ptr(), std::ptr::null()];
            // SAFETY: argv is a NULL-terminated array of valid C strings.
            unsafe { libc::execv(prog.as_ptr(), argv.as_ptr()) };
            11
        });
        assert!(libc::WIFEXITED(status), "child status {status:#x}");
        assert_eq!(libc::WEXITSTATUS(status), 0);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            status_field(&text, "Uid:").split_whitespace().next(),
            Some("0")
        );
        for key in ["CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"] {
            assert_eq!(status_field(&text, key), "0000000000000000", "{key}");
        }
        assert_eq!(status_field(&text, "NoNewPrivs:"), "1");
    }

    /// Without `CAP_SETPCAP` every drop is refused: an empty bounding set is
    /// accepted as it is, a full one is an error, never a silent success.
    #[test]
    fn dropping_without_setpcap_is_fine_only_when_the_set_is_empty() {
        // Whether drop_bounding_set succeeds in a child after `prepare`.
        let drops_after = |prepare: fn() -> Result<(), SandboxError>| {
            let (status, _) = run_in_child(|_| match prepare() {
                Err(_) => 10,
                Ok(()) => i32::from(drop_bounding_set().is_err()),
            });
            assert!(libc::WIFEXITED(status), "child status {status:#x}");
            let code = libc::WEXITSTATUS(status);
            assert!(code < 10, "the preparation failed");
            code == 0
        };
        // No capability left, the bounding set empty: nothing to do.
        assert!(drops_after(drop_all_capabilities));
        // No effective capability, the bounding set still full.
        assert!(!drops_after(clear_process_sets));
    }

    #[test]
    fn root_without_capabilities_cannot_chown() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("victim");
        std::fs::write(&file, b"x").unwrap();
        let path = std::ffi::CString::new(file.to_str().unwrap()).unwrap();
        let (status, out) = run_in_child(|fd| {
            if drop_all_capabilities().is_err() {
                return 10;
            }
            // SAFETY: path is a valid C string.
            let rc = unsafe { libc::chown(path.as_ptr(), 12345, 12345) };
            let e = if rc == 0 { 0 } else { errno() };
            write_all(fd, &e.to_ne_bytes());
            0
        });
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        assert_eq!(
            i32::from_ne_bytes(out[..4].try_into().unwrap()),
            libc::EPERM
        );
        use std::os::unix::fs::MetadataExt;
        assert_eq!(std::fs::metadata(&file).unwrap().uid(), 0, "owner changed");
    }
}
