//! landlock layer: the sandbox's filesystem view enforced a second time by the
//! kernel's LSM, plus (ABI 6+) scoping of abstract unix sockets and signals.
//!
//! Called in the sandboxed process after the mounts are built (so the paths name
//! the sandbox's own view, overlay inodes included) and before `execve`.
//!
//! * Every filesystem access right of the kernel's ABI is *handled*, so anything
//!   not granted by a rule is denied. `read_only` paths get execute, read-file and
//!   read-dir; `read_write` paths get every right (write, create, remove, rename
//!   across directories, truncate, device ioctls). Device files such as
//!   `/dev/null` belong in `read_write`: writing to them is a write access.
//! * The ABI used is the kernel's own (capped at what the crate knows), with
//!   `CompatLevel::HardRequirement`, and the result must be `FullyEnforced`: the
//!   crate's default best-effort mode would silently drop rights the kernel lacks.
//! * On ABI 6 and later, `Scope::AbstractUnixSocket` and `Scope::Signal` stop the
//!   command from connecting to abstract unix sockets or signalling processes
//!   created outside its landlock domain (the helper that is PID 1 included).
//! * Network rights (ABI 4 TCP ports) are not handled here: the network
//!   namespace and the seccomp socket rule own the network.
//!
//! A listed path that does not exist (ENOENT, ENOTDIR) is skipped. That is safe
//! because landlock is an allow-list: a path without a rule gets no access, so
//! skipping a rule can only take access away, never grant it. (If the path is
//! created later, it stays inaccessible unless a parent directory has a rule.)
//! Any other error opening a path refuses the layer.
//!
//! Only accesses through file descriptors opened *after* [`restrict`] are checked;
//! the runtime must not pass other fds than 0-2 to the command.

use crate::Layer;
use crate::SandboxError;
use ::landlock::{
    Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, PathFdError, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

const LAYER: Layer = Layer::Landlock;

/// The paths the sandboxed command may reach, as seen inside the sandbox.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FsRules {
    pub read_only: Vec<PathBuf>,
    pub read_write: Vec<PathBuf>,
}

/// What [`restrict`] put in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LandlockReport {
    /// The landlock ABI whose access rights were handled.
    pub abi: u32,
    /// Filesystem rules are enforced.
    pub fs: bool,
    /// Abstract unix sockets and signals are scoped (ABI 6+).
    pub scoped: bool,
}

/// A ruleset built and populated, waiting for [`PreparedLandlock::restrict_self`].
/// Lets the runtime open every path and report bad input before the last step.
pub struct PreparedLandlock {
    ruleset: RulesetCreated,
    abi: u32,
    scoped: bool,
    /// Listed paths that did not exist and were skipped.
    pub skipped: Vec<PathBuf>,
}

/// The running kernel's landlock ABI, or `None` when landlock is not built in
/// or not enabled at boot.
pub fn abi_version() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the
    // syscall only returns the ABI number; it reads and writes no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(v).ok().filter(|v| *v > 0)
}

fn err(detail: impl Into<String>) -> SandboxError {
    SandboxError::Layer {
        layer: LAYER,
        detail: detail.into(),
    }
}

/// The ABI this module uses: the kernel's, capped at the newest the crate knows.
fn effective_abi() -> Result<(ABI, u32), SandboxError> {
    let kernel =
        abi_version().ok_or_else(|| err("the kernel has no landlock (or it is disabled)"))?;
    let abi = ABI::from(i32::try_from(kernel).unwrap_or(i32::MAX));
    Ok((abi, (abi as u32).min(kernel)))
}

/// Opens `path` for a rule; `Ok(None)` when it does not exist.
fn open_rule_path(path: &PathBuf) -> Result<Option<(PathFd, bool)>, SandboxError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => {
            return Ok(None)
        }
        Err(e) => return Err(err(format!("{}: {e}", path.display()))),
    };
    match PathFd::new(path) {
        Ok(fd) => Ok(Some((fd, meta.is_dir()))),
        Err(PathFdError::OpenCall { source, .. })
            if matches!(
                source.raw_os_error(),
                Some(libc::ENOENT) | Some(libc::ENOTDIR)
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(err(format!("{}: {e}", path.display()))),
    }
}

/// Builds the ruleset and opens every path. Call it in the process to restrict
/// (or its parent, if the ruleset is handed down through `fork`), after mounts.
pub fn prepare(rules: &FsRules) -> Result<PreparedLandlock, SandboxError> {
    let (abi, abi_number) = effective_abi()?;
    let all = AccessFs::from_all(abi);
    let read = AccessFs::from_read(abi);
    let file_rights = AccessFs::from_file(abi);
    let scopes = Scope::from_all(abi);
    let scoped = !scopes.is_empty();

    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(|e| err(format!("handle filesystem access: {e}")))?;
    if scoped {
        ruleset = ruleset
            .scope(scopes)
            .map_err(|e| err(format!("scope abstract unix sockets and signals: {e}")))?;
    }
    let mut created = ruleset
        .create()
        .map_err(|e| err(format!("create ruleset: {e}")))?;

    let mut skipped = Vec::new();
    let listed = rules
        .read_only
        .iter()
        .map(|p| (p, read))
        .chain(rules.read_write.iter().map(|p| (p, all)));
    for (path, access) in listed {
        let Some((fd, is_dir)) = open_rule_path(path)? else {
            skipped.push(path.clone());
            continue;
        };
        // Directory-only rights on a file are an error for the kernel.
        let access: BitFlags<AccessFs> = if is_dir { access } else { access & file_rights };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| err(format!("rule for {}: {e}", path.display())))?;
    }
    Ok(PreparedLandlock {
        ruleset: created,
        abi: abi_number,
        scoped,
        skipped,
    })
}

impl PreparedLandlock {
    /// Restricts the calling thread (and everything it later starts). Also sets
    /// `no_new_privs`, which landlock requires without `CAP_SYS_ADMIN`.
    pub fn restrict_self(self) -> Result<LandlockReport, SandboxError> {
        let status = self
            .ruleset
            .restrict_self()
            .map_err(|e| err(format!("restrict_self: {e}")))?;
        if status.ruleset != RulesetStatus::FullyEnforced {
            return Err(err(format!(
                "the kernel enforced the ruleset only as {:?}",
                status.ruleset
            )));
        }
        Ok(LandlockReport {
            abi: self.abi,
            fs: true,
            scoped: self.scoped,
        })
    }
}

/// [`prepare`] then [`PreparedLandlock::restrict_self`].
pub fn restrict(rules: &FsRules) -> Result<LandlockReport, SandboxError> {
    prepare(rules)?.restrict_self()
}

/// The run's note when network open mode shares the host's network namespace
/// on a kernel without abstract-socket scoping: the host's abstract unix
/// sockets (an X11 display, D-Bus) can be reached.
pub const NO_ABSTRACT_SCOPE_NOTE: &str = "network open: the kernel's landlock has no \
     abstract-socket scoping (ABI 6), so the host's abstract unix sockets are reachable";

/// A ruleset that handles no file system or network access and scopes
/// abstract unix sockets only (ABI 6+), for a process that must keep its
/// view of the host's files: an OCI runtime sharing the host's network
/// namespace, whose container then cannot connect to an abstract socket
/// made outside it (an X11 display, a D-Bus bus, a containerd shim).
/// `None` when the kernel has no scoping. Made before a fork, applied in
/// the child with [`restrict_self_raw`], which allocates nothing.
pub fn abstract_scope_ruleset() -> Result<Option<OwnedFd>, SandboxError> {
    const LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1;
    #[repr(C)]
    struct ScopeAttr {
        handled_access_fs: u64,
        handled_access_net: u64,
        scoped: u64,
    }
    if abi_version().is_none_or(|abi| abi < 6) {
        return Ok(None);
    }
    let attr = ScopeAttr {
        handled_access_fs: 0,
        handled_access_net: 0,
        scoped: LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET,
    };
    // SAFETY: attr is a live, initialised struct of the size passed, laid out
    // as the kernel's landlock_ruleset_attr (three u64 fields, ABI 6).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const ScopeAttr,
            std::mem::size_of::<ScopeAttr>(),
            0u32,
        )
    };
    if fd < 0 {
        return Err(err(format!(
            "create the abstract-socket scope: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: the syscall returned a new descriptor that nothing else owns.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(fd as RawFd) }))
}

/// Restricts the calling thread by `ruleset` (landlock_restrict_self):
/// a system call and nothing else, so it may run between fork and exec.
/// Needs `no_new_privs` or CAP_SYS_ADMIN. Returns the call's result.
pub fn restrict_self_raw(ruleset: RawFd) -> libc::c_long {
    // SAFETY: landlock_restrict_self reads no memory of ours; an invalid fd
    // only makes it fail.
    unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::caps::tests::{run_in_child, write_all};
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;

    fn errno() -> i32 {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    }

    fn cstr(p: &std::path::Path) -> CString {
        CString::new(p.as_os_str().as_bytes()).unwrap()
    }

    fn open_errno(path: &CString, flags: i32) -> i32 {
        // SAFETY: path is a valid C string.
        let fd = unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC, 0o600) };
        if fd < 0 {
            return errno();
        }
        // SAFETY: closing the fd just opened.
        unsafe { libc::close(fd) };
        0
    }

    fn ints(out: &[u8]) -> Vec<i32> {
        out.chunks(4)
            .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn kernel_abi_is_reported() {
        // This machine has ABI 7 (kernel 6.18); any landlock kernel has >= 1.
        let abi = abi_version().expect("landlock available");
        assert!(abi >= 6, "ABI {abi}: scoping needs 6");
    }

    #[test]
    fn restricted_child_cannot_reach_outside_its_rules() {
        let inside = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let ro = tempfile::tempdir().unwrap();
        let canary = outside.path().join("canary");
        std::fs::write(&canary, b"canary-secret").unwrap();
        let ro_file = ro.path().join("readme");
        std::fs::write(&ro_file, b"readable").unwrap();
        let rules = FsRules {
            read_only: vec![ro.path().to_path_buf(), "/does/not/exist".into()],
            read_write: vec![inside.path().to_path_buf(), "/dev/null".into()],
        };
        let (canary_c, ro_c) = (cstr(&canary), cstr(&ro_file));
        let ro_new = cstr(&ro.path().join("new"));
        let inside_new = cstr(&inside.path().join("written"));
        let devnull = cstr(std::path::Path::new("/dev/null"));
        let (status, out) = run_in_child(|fd| {
            let report = match restrict(&rules) {
                Ok(r) => r,
                Err(_) => return 10,
            };
            write_all(fd, &(report.abi as i32).to_ne_bytes());
            write_all(fd, &i32::from(report.fs && report.scoped).to_ne_bytes());
            let results = [
                open_errno(&canary_c, libc::O_RDONLY),
                open_errno(&canary_c, libc::O_WRONLY | libc::O_TRUNC),
                open_errno(&ro_c, libc::O_RDONLY),
                open_errno(&ro_c, libc::O_WRONLY),
                open_errno(&ro_new, libc::O_WRONLY | libc::O_CREAT),
                open_errno(&devnull, libc::O_WRONLY),
            ];
            for r in results {
                write_all(fd, &r.to_ne_bytes());
            }
            // A write inside the read-write tree lands on disk.
            // SAFETY: inside_new is a valid C string; the buffer is a live slice.
            let w = unsafe {
                let f = libc::open(
                    inside_new.as_ptr(),
                    libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC,
                    0o600,
                );
                if f < 0 {
                    errno()
                } else {
                    libc::write(f, b"inside".as_ptr().cast(), 6);
                    libc::close(f);
                    0
                }
            };
            write_all(fd, &w.to_ne_bytes());
            0
        });
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status:#x}"
        );
        let got = ints(&out);
        assert_eq!(got[0] as u32, abi_version().unwrap().min(10));
        assert_eq!(got[1], 1, "fs and scope reported");
        assert_eq!(
            &got[2..],
            &[
                libc::EACCES,
                libc::EACCES,
                0,
                libc::EACCES,
                libc::EACCES,
                0,
                0
            ]
        );
        assert_eq!(std::fs::read(&canary).unwrap(), b"canary-secret");
        assert!(!ro.path().join("new").exists());
        assert_eq!(
            std::fs::read(inside.path().join("written")).unwrap(),
            b"inside"
        );
    }

    /// A host process listens on an abstract unix socket; the restricted child
    /// cannot connect to it nor signal its parent. The control child, without
    /// landlock, can do both, so the test fails if scoping is not in force.
    #[test]
    fn abstract_sockets_and_signals_are_scoped() {
        let name = format!("airlock-landlock-test-{}", std::process::id());
        let stream = libc::SOCK_STREAM | libc::SOCK_CLOEXEC;
        // SAFETY: socket with integer arguments.
        let listener = unsafe { libc::socket(libc::AF_UNIX, stream, 0) };
        assert!(listener >= 0);
        // SAFETY: zeroed sockaddr_un is a valid value.
        let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = libc::AF_UNIX as u16;
        for (i, b) in name.bytes().enumerate() {
            addr.sun_path[i + 1] = b as libc::c_char; // sun_path[0] = 0: abstract
        }
        let len = (std::mem::size_of::<libc::sa_family_t>() + 1 + name.len()) as u32;
        // SAFETY: addr is a valid sockaddr_un of at least len bytes.
        let rc = unsafe { libc::bind(listener, (&addr as *const libc::sockaddr_un).cast(), len) };
        assert_eq!(rc, 0);
        // SAFETY: listen on our own socket.
        assert_eq!(unsafe { libc::listen(listener, 8) }, 0);

        let attempt = |restricted: bool| {
            let (status, out) = run_in_child(|fd| {
                if restricted && restrict(&FsRules::default()).is_err() {
                    return 10;
                }
                // SAFETY: socket/connect/kill with valid arguments; addr outlives the call.
                let (c, k) = unsafe {
                    let s = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
                    let c =
                        if libc::connect(s, (&addr as *const libc::sockaddr_un).cast(), len) == 0 {
                            0
                        } else {
                            errno()
                        };
                    let k = if libc::kill(libc::getppid(), 0) == 0 {
                        0
                    } else {
                        errno()
                    };
                    (c, k)
                };
                write_all(fd, &c.to_ne_bytes());
                write_all(fd, &k.to_ne_bytes());
                0
            });
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "{status:#x}"
            );
            ints(&out)
        };
        assert_eq!(attempt(false), vec![0, 0], "control: unrestricted child");
        assert_eq!(attempt(true), vec![libc::EPERM, libc::EPERM]);

        // The scope alone (an OCI runtime's, network open): the abstract
        // socket made outside is refused; signals and files are not handled.
        let scope = abstract_scope_ruleset()
            .unwrap()
            .expect("ABI 6 on this kernel");
        let (status, out) = run_in_child(|fd| {
            // SAFETY: prctl with integer arguments; the test may not hold
            // CAP_SYS_ADMIN, and landlock needs no_new_privs then.
            unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
            if restrict_self_raw(std::os::fd::AsRawFd::as_raw_fd(&scope)) != 0 {
                return 10;
            }
            // SAFETY: socket/connect/kill with valid arguments; addr outlives the call.
            let (c, k) = unsafe {
                let s = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
                let c = if libc::connect(s, (&addr as *const libc::sockaddr_un).cast(), len) == 0 {
                    0
                } else {
                    errno()
                };
                (c, i32::from(libc::kill(libc::getppid(), 0) != 0))
            };
            let f = i32::from(std::fs::read("/proc/self/status").is_err());
            write_all(fd, &c.to_ne_bytes());
            write_all(fd, &k.to_ne_bytes());
            write_all(fd, &f.to_ne_bytes());
            0
        });
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status:#x}"
        );
        assert_eq!(ints(&out), vec![libc::EPERM, 0, 0]);
        // SAFETY: closing our listener.
        unsafe { libc::close(listener) };
    }

    #[test]
    fn a_path_that_cannot_be_opened_refuses_the_layer() {
        // A path through a symlink loop is neither missing nor openable.
        let dir = tempfile::tempdir().unwrap();
        let looped = dir.path().join("loop");
        std::os::unix::fs::symlink(&looped, &looped).unwrap();
        let rules = FsRules {
            read_only: vec![looped],
            read_write: vec![],
        };
        match prepare(&rules) {
            Err(SandboxError::Layer { layer, .. }) => assert_eq!(layer, Layer::Landlock),
            Err(other) => panic!("wrong error {other}"),
            Ok(_) => panic!("a looping path was accepted"),
        }
    }

    #[test]
    fn missing_paths_are_listed_as_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let rules = FsRules {
            read_only: vec![dir.path().to_path_buf(), dir.path().join("absent")],
            read_write: vec![dir.path().join("file-as-dir/x")],
        };
        std::fs::write(dir.path().join("file-as-dir"), b"").unwrap();
        let prepared = prepare(&rules).unwrap();
        assert_eq!(
            prepared.skipped,
            vec![dir.path().join("absent"), dir.path().join("file-as-dir/x")]
        );
    }
}
