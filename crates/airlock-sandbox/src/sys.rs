//! Small checked wrappers over the raw syscalls the native backend needs that
//! neither std nor libc wraps safely: pipes, poll, the new mount API, pivot_root,
//! clone with namespace flags.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

pub fn last_errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Turns a `-1`-on-error return into `io::Result`.
pub fn cvt<T: Copy + PartialOrd + Default>(ret: T) -> io::Result<T> {
    if ret < T::default() {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

pub fn cpath(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// A close-on-exec pipe: (read end, write end).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds is a valid two-int array for pipe2 to fill.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 succeeded, so both fds are open and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL on a caller-provided fd touch no memory.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: as above.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) })?;
    Ok(())
}

/// Writes the whole buffer, retrying on EINTR and short writes.
pub fn write_all(fd: RawFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: buf is a live slice of buf.len() bytes.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

/// One read, retried on EINTR. Ok(0) is end of file.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: buf is a live, writable slice of buf.len() bytes.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Reads until end of file.
pub fn read_to_end(fd: RawFd) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = read(fd, &mut buf)?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// Fills `buf` from `fd`; EOF before it is full is an error.
pub fn read_exact(fd: RawFd, mut buf: &mut [u8]) -> io::Result<()> {
    while !buf.is_empty() {
        let n = read(fd, buf)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf = &mut buf[n..];
    }
    Ok(())
}

/// poll(2) over the given fds; returns the revents in the same order. EINTR
/// returns all-zero revents so that callers re-check their deadlines.
pub fn poll(fds: &[RawFd], timeout_ms: i32) -> io::Result<Vec<i16>> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: pfds is a live array of pfds.len() pollfd structs.
    let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(vec![0; fds.len()]);
        }
        return Err(e);
    }
    Ok(pfds.iter().map(|p| p.revents).collect())
}

pub fn kill(pid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill takes integers only; an already-gone pid gives ESRCH, ignored.
    unsafe { libc::kill(pid, sig) };
}

/// waitpid retried on EINTR. Returns (pid, raw status).
pub fn waitpid(pid: libc::pid_t, flags: libc::c_int) -> io::Result<(libc::pid_t, libc::c_int)> {
    loop {
        let mut status = 0;
        // SAFETY: status is a valid out pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, flags) };
        if r >= 0 {
            return Ok((r, status));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// fork(2)-like clone with extra namespace flags (CLONE_NEW*). Returns 0 in the
/// child. Only sound in a single-threaded process (the helper is one).
pub fn clone_process(flags: libc::c_int) -> io::Result<libc::pid_t> {
    // SAFETY: without CLONE_VM and with a NULL stack this is fork(2) (a copied address
    // space); the helper is single-threaded, so no lock is held by an absent thread.
    let r = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (flags | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as libc::pid_t)
    }
}

/// `clone3`'s argument block up to `cgroup` (`CLONE_ARGS_SIZE_VER2`, Linux 5.7).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// `CLONE_INTO_CGROUP` (Linux 5.7): the child starts in the cgroup v2 group
/// whose directory fd is `clone_args.cgroup`.
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// As [`clone_process`], but the child is born in the cgroup v2 group whose
/// directory is open as `cgroup_dir` (`clone3` with `CLONE_INTO_CGROUP`): it
/// is never anywhere else, and no migration takes place. Fails (ENOSYS, E2BIG,
/// EINVAL on kernels before 5.7; EBADF when the fd is not a cgroup v2
/// directory) without creating a process.
pub fn clone_into_cgroup(
    flags: libc::c_int,
    cgroup_dir: std::os::fd::BorrowedFd,
) -> io::Result<libc::pid_t> {
    use std::os::fd::AsRawFd;
    let args = CloneArgs {
        // The namespace flags are non-negative ints; widen without sign extension.
        flags: flags as u32 as u64 | CLONE_INTO_CGROUP,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: cgroup_dir.as_raw_fd() as u64,
        ..CloneArgs::default()
    };
    // Without CLONE_VM and with no stack this is fork(2), a copied address space.
    // SAFETY: a fork as in clone_process; args is live, initialised, of the size passed, only read.
    let r = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as libc::pid_t)
    }
}

/// Runs `child` in a new process that shares this one's memory until it
/// execs or exits (`clone(CLONE_VM | CLONE_VFORK)`, as posix_spawn does): no
/// page tables are copied, and the child's exec tears no address space down.
/// This process is suspended until then. `child` must end in execve or
/// `_exit`; it runs on a stack of its own and may allocate (the suspended
/// caller, single-threaded, holds no lock), but what it leaves in memory stays
/// in the caller's. Signal dispositions, the fd table, the cwd and credentials
/// are the child's own copies.
pub fn spawn_sharing_memory(
    child: &mut dyn FnMut() -> std::convert::Infallible,
) -> io::Result<libc::pid_t> {
    // `child` never returns (it yields Infallible): clone's callback type
    // still needs an int.
    #[allow(unreachable_code)]
    extern "C" fn run(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: arg is the `&mut &mut dyn FnMut` below, alive while the
        // caller is suspended in clone.
        let child = unsafe { &mut *(arg as *mut &mut dyn FnMut() -> std::convert::Infallible) };
        match child() {}
    }
    let stack = ChildStack::map(1 << 20)?;
    let mut arg: &mut dyn FnMut() -> std::convert::Infallible = child;
    // CLONE_VFORK returns only once the child has exec'd or exited, so it no
    // longer uses the stack, unmapped when this function returns.
    // SAFETY: `run` gets a stack of its own (16-aligned top) and a pointer to `arg`, alive until clone returns.
    let pid = unsafe {
        libc::clone(
            run,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            &mut arg as *mut &mut dyn FnMut() -> std::convert::Infallible as *mut libc::c_void,
        )
    };
    if pid < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(pid)
    }
}

/// A stack for a child cloned with `CLONE_VM`: an anonymous mapping whose
/// lowest page is a guard, unmapped when dropped (only once no child runs on
/// it).
struct ChildStack {
    base: *mut libc::c_void,
    len: usize,
}

impl ChildStack {
    const GUARD: usize = 4096;

    fn map(size: usize) -> io::Result<ChildStack> {
        let len = size + Self::GUARD;
        // SAFETY: a fresh anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the lowest page of the mapping just made becomes the guard.
        unsafe { libc::mprotect(base, Self::GUARD, libc::PROT_NONE) };
        Ok(ChildStack { base, len })
    }

    /// The 16-aligned top, where a downward-growing stack starts.
    fn top(&self) -> *mut libc::c_void {
        ((self.base as usize + self.len) & !15) as *mut libc::c_void
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: the mapping `map` made; its owner ensures no child uses it.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// A child that exists only to hold the namespaces its clone made (`flags`,
/// `CLONE_NEW*`) reachable through `/proc/<pid>` until [`HeldChild::release`]:
/// the caller opens them, writes a user namespace's maps, and lets it go.
///
/// It shares this process's memory (`CLONE_VM`, without `CLONE_VFORK`: both
/// run): no page tables are copied and none torn down at its exit, which
/// halves what a forked child costs here (0.2-0.3 ms instead of 0.6-1.1 ms
/// for a user namespace). Its whole life is `close_range`, a blocking `read`
/// that ends at EOF, and `_exit`, on a small stack of its own, touching no
/// memory of the caller's: none of them fails in a way that would set the
/// `errno` it shares with the caller's thread. It keeps no fd but its own
/// pipe's read end, so any number of them may be held at once and released in
/// any order.
pub struct HeldChild {
    pid: libc::pid_t,
    hold: Option<OwnedFd>,
    /// Unmapped after the child is reaped (fields drop after `Drop::drop`).
    _stack: ChildStack,
}

impl HeldChild {
    pub fn start(flags: libc::c_int) -> io::Result<HeldChild> {
        extern "C" fn wait_for_eof(arg: *mut libc::c_void) -> libc::c_int {
            let read_end = arg as usize as libc::c_uint;
            let mut b = 0u8;
            // Every fd but the read end of its own hold pipe is closed: the
            // copies its clone took would keep other pipes open, another held
            // child's among them, which would then never see EOF. The write end
            // stays with the caller alone.
            // SAFETY: its own fd table (a copy); close_range over these bounds cannot fail, so no errno is written; then one byte into a local.
            unsafe {
                if read_end > 0 {
                    libc::syscall(libc::SYS_close_range, 0u32, read_end - 1, 0u32);
                }
                libc::syscall(libc::SYS_close_range, read_end + 1, libc::c_uint::MAX, 0u32);
                libc::read(read_end as RawFd, (&mut b as *mut u8).cast(), 1);
                libc::_exit(0)
            }
        }
        let (hold_r, hold_w) = pipe()?;
        let stack = ChildStack::map(64 * 1024)?;
        let read_end = hold_r.as_raw_fd() as libc::c_uint as usize;
        // The stack stays mapped until the child is reaped (release/drop).
        // SAFETY: `wait_for_eof` runs on the stack mapped above; its argument is a number, not a pointer.
        let pid = unsafe {
            libc::clone(
                wait_for_eof,
                stack.top(),
                libc::CLONE_VM | flags | libc::SIGCHLD,
                read_end as *mut libc::c_void,
            )
        };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(HeldChild {
            pid,
            hold: Some(hold_w),
            _stack: stack,
        })
    }

    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Lets the child exit and reaps it.
    pub fn release(mut self) {
        self.reap();
    }

    fn reap(&mut self) {
        if self.hold.take().is_some() {
            let _ = waitpid(self.pid, 0);
        }
    }
}

impl Drop for HeldChild {
    fn drop(&mut self) {
        self.reap();
    }
}

/// Moves process `pid` off the CPU this thread runs on, onto the others this
/// thread may use; nothing when there is no other. For a child that should
/// run beside its parent rather than after it: a new child is often queued on
/// its parent's CPU and waits until the parent blocks (measured here: a
/// child starts 0.8-3.4 ms after the fork beside a busy parent, 0.33-0.48 ms
/// when moved). The child restores its mask with [`share_parents_cpus`].
pub fn run_beside_me(pid: libc::pid_t) {
    // SAFETY: cpu_set_t is plain data; the pointers are to live locals of the
    // size passed.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let cpu = libc::sched_getcpu();
        if cpu < 0 || libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) != 0 {
            return;
        }
        libc::CPU_CLR(cpu as usize, &mut set);
        if libc::CPU_COUNT(&set) > 0 {
            libc::sched_setaffinity(pid, std::mem::size_of_val(&set), &set);
        }
    }
}

/// Takes the parent's CPU mask as this process's own (see [`run_beside_me`]).
pub fn share_parents_cpus() {
    // SAFETY: getppid has no preconditions; the rest as in run_beside_me.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let parent = libc::getppid();
        if libc::sched_getaffinity(parent, std::mem::size_of_val(&set), &mut set) == 0 {
            libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set);
        }
    }
}

pub fn fork() -> io::Result<libc::pid_t> {
    // SAFETY: called only from a single-threaded process: the helper, its init,
    // or a caller that checked it has one thread (native::prefork).
    cvt(unsafe { libc::fork() })
}

/// CLOCK_MONOTONIC in nanoseconds: the clock `Instant` reads, as a number a
/// process can hand to another (its children share it).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to the valid pointer given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and runs no destructors or atexit handlers,
    // which belong to the parent process image.
    unsafe { libc::_exit(code) }
}

pub fn set_pdeathsig(sig: libc::c_int) -> io::Result<()> {
    // SAFETY: PR_SET_PDEATHSIG takes integers only.
    cvt(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) })?;
    Ok(())
}

pub fn unshare(flags: libc::c_int) -> io::Result<()> {
    // SAFETY: unshare takes an integer only.
    cvt(unsafe { libc::unshare(flags) })?;
    Ok(())
}

pub fn setns(fd: RawFd, nstype: libc::c_int) -> io::Result<()> {
    // SAFETY: setns takes integers only.
    cvt(unsafe { libc::setns(fd, nstype) })?;
    Ok(())
}

/// Makes every mount in this namespace private, recursively, so that nothing
/// mounted afterwards propagates back to the namespace it was copied from.
pub fn make_mounts_private() -> io::Result<()> {
    mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )
}

/// mount(2) with optional source, fstype and data.
pub fn mount(
    source: Option<&CStr>,
    target: &Path,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> io::Result<()> {
    let target = cpath(target)?;
    let p = |c: Option<&CStr>| c.map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: every pointer is either NULL or a live NUL-terminated string.
    cvt(unsafe { libc::mount(p(source), target.as_ptr(), p(fstype), flags, p(data).cast()) })?;
    Ok(())
}

pub fn umount_detach(target: &Path) -> io::Result<()> {
    let t = cpath(target)?;
    // SAFETY: t is a live C string.
    cvt(unsafe { libc::umount2(t.as_ptr(), libc::MNT_DETACH) })?;
    Ok(())
}

pub const OPEN_TREE_CLONE: libc::c_uint = 1;
pub const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
pub const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
pub const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub const MOUNT_ATTR_NODEV: u64 = 0x4;
pub const MOUNT_ATTR_NOEXEC: u64 = 0x8;
pub const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
pub const FSCONFIG_SET_FLAG: libc::c_uint = 0;
pub const FSCONFIG_SET_STRING: libc::c_uint = 1;
pub const FSCONFIG_CMD_CREATE: libc::c_uint = 6;

#[repr(C)]
#[derive(Default)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// open_tree(OPEN_TREE_CLONE | AT_RECURSIVE): a detached copy of the mount tree at `path`.
pub fn clone_tree(path: &Path, recursive: bool) -> io::Result<OwnedFd> {
    let c = cpath(path)?;
    let mut flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint;
    if recursive {
        flags |= libc::AT_RECURSIVE as libc::c_uint;
    }
    // SAFETY: c is a live C string; open_tree returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, c.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this fd; nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// mount_setattr on a detached tree: set `attrs` (and an idmapping if `userns` is
/// given) on every mount of it.
pub fn set_tree_attrs(tree: &OwnedFd, attrs: u64, userns: Option<RawFd>) -> io::Result<()> {
    let mut attr = MountAttr {
        attr_set: attrs,
        ..Default::default()
    };
    if let Some(ns) = userns {
        attr.attr_set |= MOUNT_ATTR_IDMAP;
        attr.userns_fd = ns as u64;
    }
    let empty = c"";
    // SAFETY: attr is a live struct of the size passed; empty is a C string.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            empty.as_ptr(),
            (libc::AT_EMPTY_PATH | libc::AT_RECURSIVE) as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// move_mount of a detached tree onto an already-open target (an O_PATH fd).
pub fn attach_tree(tree: &OwnedFd, target: &OwnedFd) -> io::Result<()> {
    let empty = c"";
    // SAFETY: both fds are open; empty is a C string.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            empty.as_ptr(),
            target.as_raw_fd(),
            empty.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// move_mount of a detached tree onto a path.
pub fn attach_tree_at(tree: &OwnedFd, target: &Path) -> io::Result<()> {
    let empty = c"";
    let t = cpath(target)?;
    // SAFETY: tree is open; both strings are live C strings.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// fsopen + fsconfig(key=value...) + create + fsmount: a detached new filesystem.
pub fn new_fs(fstype: &CStr, options: &[(&str, &str)], attrs: u64) -> io::Result<OwnedFd> {
    // SAFETY: fstype is a live C string.
    let fs = unsafe {
        libc::syscall(
            libc::SYS_fsopen,
            fstype.as_ptr(),
            1u32, /* FSOPEN_CLOEXEC */
        )
    };
    if fs < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this fd.
    let fs = unsafe { OwnedFd::from_raw_fd(fs as RawFd) };
    for (key, value) in options {
        let k = CString::new(*key)?;
        let v = CString::new(*value)?;
        // An empty value is a flag option (`userxattr`), which takes no value.
        let (cmd, vp) = if value.is_empty() {
            (FSCONFIG_SET_FLAG, std::ptr::null())
        } else {
            (FSCONFIG_SET_STRING, v.as_ptr())
        };
        let (fd, kp) = (fs.as_raw_fd(), k.as_ptr());
        // SAFETY: fd is open; kp is a live C string, vp a live C string or NULL (a flag).
        let r = unsafe { libc::syscall(libc::SYS_fsconfig, fd, cmd, kp, vp, 0) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("fsconfig {key}={value}: {e}"),
            ));
        }
    }
    // SAFETY: fs is open; no pointers are passed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_void>(),
            0,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fs is open; fsmount returns a new fd or -1.
    let m = unsafe {
        libc::syscall(
            libc::SYS_fsmount,
            fs.as_raw_fd(),
            1u32, /* FSMOUNT_CLOEXEC */
            attrs as u32,
        )
    };
    if m < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this fd.
    Ok(unsafe { OwnedFd::from_raw_fd(m as RawFd) })
}

pub fn pivot_root_here() -> io::Result<()> {
    let dot = c".";
    // SAFETY: both arguments are the live C string ".".
    let r = unsafe { libc::syscall(libc::SYS_pivot_root, dot.as_ptr(), dot.as_ptr()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// open(2) with O_CLOEXEC added.
pub fn open(path: &Path, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    let c = cpath(path)?;
    // SAFETY: c is a live C string.
    let fd = cvt(unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, mode as libc::c_uint) })?;
    // SAFETY: the kernel just returned this fd.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// openat(2) relative to a directory fd, with O_CLOEXEC added.
pub fn openat(
    dir: RawFd,
    name: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    // SAFETY: name is a live C string; dir is an fd the caller owns.
    let fd = cvt(unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    })?;
    // SAFETY: the kernel just returned this fd.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Moves each `(source, target)` fd to exactly `target` (close-on-exec cleared
/// there). Every source is first copied to 10 or above, so that no dup2
/// clobbers a source that is itself a target: targets are below 10, at most 8
/// pairs. It allocates nothing, so it may run between fork and exec; the
/// copies are close-on-exec.
pub fn place_fds(pairs: &[(RawFd, RawFd)]) -> io::Result<()> {
    let mut high = [0 as RawFd; 8];
    if pairs.len() > high.len() || pairs.iter().any(|(_, t)| *t >= 10) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    for (i, (src, _)) in pairs.iter().enumerate() {
        // SAFETY: fcntl(F_DUPFD_CLOEXEC) takes integers only.
        high[i] = cvt(unsafe { libc::fcntl(*src, libc::F_DUPFD_CLOEXEC, 10) })?;
    }
    for (i, (_, target)) in pairs.iter().enumerate() {
        // SAFETY: dup2 takes integers only.
        cvt(unsafe { libc::dup2(high[i], *target) })?;
    }
    Ok(())
}

/// Whether `fd` is open and a pipe (or FIFO).
pub fn is_fifo(fd: RawFd) -> bool {
    // SAFETY: st is plain data that fstat fills before it is read.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat takes an fd number and a live out pointer.
    unsafe { libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFIFO }
}

/// Whether `fd` is open and a socket.
pub fn is_socket(fd: RawFd) -> bool {
    // SAFETY: st is plain data that fstat fills before it is read.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat takes an fd number and a live out pointer.
    unsafe { libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFSOCK }
}

/// Moves `fd` to exactly `target` (clearing close-on-exec there).
pub fn dup_to(fd: RawFd, target: RawFd) -> io::Result<()> {
    if fd == target {
        // SAFETY: F_SETFD on an open fd.
        cvt(unsafe { libc::fcntl(fd, libc::F_SETFD, 0) })?;
        return Ok(());
    }
    // SAFETY: dup2 takes integers only.
    cvt(unsafe { libc::dup2(fd, target) })?;
    Ok(())
}

/// Closes `fd`, which the caller owns as a raw descriptor (errors do not
/// matter: the descriptor is gone either way on Linux).
pub fn close(fd: RawFd) {
    // SAFETY: close takes an integer; the caller owns `fd` and no longer uses it.
    unsafe { libc::close(fd) };
}

/// Closes every fd from `first` up.
pub fn close_from(first: libc::c_uint) {
    // SAFETY: close_range takes integers only; closing fds we do not use is the point.
    unsafe { libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0u32) };
}

/// Points fds 0, 1, 2 at /dev/null (so that this process holds no pipe end).
pub fn stdio_to_devnull() {
    devnull_onto(0..3, libc::O_RDWR);
}

/// Points fd 0 at /dev/null (read-only).
pub fn stdin_to_devnull() {
    devnull_onto(0..1, libc::O_RDONLY);
}

fn devnull_onto(fds: std::ops::Range<RawFd>, flags: libc::c_int) {
    if let Ok(null) = open(Path::new("/dev/null"), flags, 0) {
        for fd in fds {
            let _ = dup_to(null.as_raw_fd(), fd);
        }
    }
}

/// Opens `rel` below `dir`, never following a symlink in any component.
pub fn walk(dir: RawFd, rel: &Path, last_flags: libc::c_int) -> io::Result<OwnedFd> {
    let comps: Vec<&std::ffi::OsStr> = rel.iter().collect();
    let mut cur: Option<OwnedFd> = None;
    for (i, name) in comps.iter().enumerate() {
        let base = cur.as_ref().map_or(dir, |f| f.as_raw_fd());
        let c = CString::new(name.as_bytes())?;
        let flags = if i + 1 == comps.len() {
            last_flags | libc::O_NOFOLLOW
        } else {
            libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW
        };
        cur = Some(openat(base, &c, flags, 0)?);
    }
    match cur {
        Some(f) => Ok(f),
        None => openat(dir, c".", last_flags, 0),
    }
}

/// The owner uid/gid of a host path (for idmapping it to sandbox root).
pub fn owner(path: &Path) -> Option<(u32, u32)> {
    std::fs::metadata(path).ok().map(|m| (m.uid(), m.gid()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns_link(pid: &str, ns: &str) -> std::path::PathBuf {
        std::fs::read_link(format!("/proc/{pid}/ns/{ns}")).unwrap()
    }

    /// The child lives in the namespace its clone made until released, and
    /// is reaped then: no zombie, no second wait.
    #[test]
    fn a_held_child_holds_its_namespace_until_released() {
        for (flag, ns) in [(libc::CLONE_NEWUSER, "user"), (libc::CLONE_NEWNET, "net")] {
            let child = HeldChild::start(flag).unwrap();
            let pid = child.pid();
            assert_ne!(ns_link(&pid.to_string(), ns), ns_link("self", ns));
            child.release();
            assert!(waitpid(pid, libc::WNOHANG).is_err(), "{ns}: not reaped");
        }
    }

    /// Two held at once, the first let go first: the second child's fd
    /// table, copied at its clone, must not keep the first one's pipe open,
    /// or the first child never sees EOF and its release waits forever.
    #[test]
    fn held_children_release_in_any_order() {
        let mut first = HeldChild::start(0).unwrap();
        let second = HeldChild::start(0).unwrap();
        // What `release` does, without its blocking wait.
        drop(first.hold.take());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut exited = false;
        while !exited && std::time::Instant::now() < deadline {
            exited = matches!(waitpid(first.pid, libc::WNOHANG), Ok((p, _)) if p == first.pid);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        second.release();
        if !exited {
            let _ = waitpid(first.pid, 0);
        }
        assert!(
            exited,
            "the first held child never saw EOF: the second one holds its pipe"
        );
    }

    /// Dropped without a release (an error path), it is let go and reaped.
    #[test]
    fn a_dropped_held_child_is_reaped() {
        let child = HeldChild::start(libc::CLONE_NEWUSER).unwrap();
        let pid = child.pid();
        drop(child);
        assert!(waitpid(pid, libc::WNOHANG).is_err());
    }
}
