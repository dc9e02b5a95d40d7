//! What the sandbox's filter answers, syscall by syscall: the deny-list, the
//! argument checks, the socket families per network mode, and the set-id rule.
//! [`sandbox_filter`] turns it into a [`Filter`] for the assembler.

use super::assembler::{Action, Asm, Filter, Target, Verdict, JSET_K};
use super::table::{nr, AUDIT_ARCH_X86_64, X32_SYSCALL_BIT};

/// Which socket families the sandboxed command may create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketRule {
    /// `AF_UNIX` only (plus `NETLINK_ROUTE`): network mode `none`.
    UnixOnly,
    /// `AF_UNIX`, `AF_INET`, `AF_INET6` (plus `NETLINK_ROUTE`). In an empty
    /// network namespace the inet families reach loopback only. For proxy mode,
    /// whose PID 1 always installs netwatch: `socket(AF_PACKET)` passes this
    /// filter so that netwatch sees it, refuses it (EACCES, or ENOSYS should its
    /// supervisor be gone) and logs it; without `CAP_NET_RAW` the kernel would
    /// refuse it too. Never use this rule without netwatch.
    UnixAndInet,
    /// Every family except the always-refused ones (`AF_VSOCK`, `AF_PACKET`,
    /// netlink other than `NETLINK_ROUTE`).
    Any,
}

/// Whether the filter refuses to give files the set-user-ID or set-group-ID
/// bit (see [`SETID_MODE_ARG`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetIdRule {
    /// The native sandbox: in `rw` mode (and for `filesystem.write` paths) root
    /// inside writes through an idmapped mount as the tree's host owner; when
    /// that owner is host root, `chmod 4755` inside would leave a setuid-root
    /// program on the host. `nosuid` on the sandbox's mount does not help the
    /// host.
    Refuse,
    /// The wasm helper: WASI has no mode bits, and wasmtime's own file access
    /// uses `openat2` where the kernel has it.
    Leave,
}

/// Syscalls answered with EPERM whatever their arguments.
pub(crate) const DENIED_EPERM: &[(u32, &str)] = &[
    (nr::PTRACE, "ptrace"),
    (nr::PROCESS_VM_READV, "process_vm_readv"),
    (nr::PROCESS_VM_WRITEV, "process_vm_writev"),
    (nr::PROCESS_MADVISE, "process_madvise"),
    (nr::PIDFD_GETFD, "pidfd_getfd"),
    (nr::KCMP, "kcmp"),
    (nr::MOUNT, "mount"),
    (nr::UMOUNT2, "umount2"),
    (nr::PIVOT_ROOT, "pivot_root"),
    (nr::MOVE_MOUNT, "move_mount"),
    (nr::OPEN_TREE, "open_tree"),
    (nr::OPEN_TREE_ATTR, "open_tree_attr"),
    (nr::FSOPEN, "fsopen"),
    (nr::FSCONFIG, "fsconfig"),
    (nr::FSMOUNT, "fsmount"),
    (nr::FSPICK, "fspick"),
    (nr::MOUNT_SETATTR, "mount_setattr"),
    (nr::UNSHARE, "unshare"),
    (nr::SETNS, "setns"),
    (nr::BPF, "bpf"),
    (nr::PERF_EVENT_OPEN, "perf_event_open"),
    (nr::USERFAULTFD, "userfaultfd"),
    (nr::KEYCTL, "keyctl"),
    (nr::ADD_KEY, "add_key"),
    (nr::REQUEST_KEY, "request_key"),
    (nr::KEXEC_LOAD, "kexec_load"),
    (nr::KEXEC_FILE_LOAD, "kexec_file_load"),
    (nr::INIT_MODULE, "init_module"),
    (nr::FINIT_MODULE, "finit_module"),
    (nr::DELETE_MODULE, "delete_module"),
    (nr::OPEN_BY_HANDLE_AT, "open_by_handle_at"),
    (nr::NAME_TO_HANDLE_AT, "name_to_handle_at"),
    (nr::ACCT, "acct"),
    (nr::SWAPON, "swapon"),
    (nr::SWAPOFF, "swapoff"),
    (nr::REBOOT, "reboot"),
    (nr::SYSLOG, "syslog"),
    (nr::IOPL, "iopl"),
    (nr::IOPERM, "ioperm"),
    (nr::QUOTACTL, "quotactl"),
    (nr::QUOTACTL_FD, "quotactl_fd"),
    (nr::LOOKUP_DCOOKIE, "lookup_dcookie"),
    (nr::USELIB, "uselib"),
    (nr::USTAT, "ustat"),
    (nr::SYSFS, "sysfs"),
    (nr::SYSCTL, "_sysctl"),
    (nr::NFSSERVCTL, "nfsservctl"),
    (nr::MOVE_PAGES, "move_pages"),
    (nr::MIGRATE_PAGES, "migrate_pages"),
];

/// Syscalls answered with ENOSYS, so that libraries fall back or give up cleanly.
pub(crate) const DENIED_ENOSYS: &[(u32, &str)] = &[
    (nr::CLONE3, "clone3"),
    (nr::IO_URING_SETUP, "io_uring_setup"),
    (nr::IO_URING_ENTER, "io_uring_enter"),
    (nr::IO_URING_REGISTER, "io_uring_register"),
];

/// Syscalls whose mode argument may carry S_ISUID/S_ISGID: (number, index of
/// the mode argument). With [`SetIdRule::Refuse`] a mode with either bit gets
/// EPERM, and `openat2` ENOSYS (its mode sits behind a pointer the filter
/// cannot read; callers fall back to `openat`).
pub(crate) const SETID_MODE_ARG: &[(u32, u32, &str)] = &[
    (nr::OPEN, 2, "open"),           // open(path, flags, mode)
    (nr::CREAT, 1, "creat"),         // creat(path, mode)
    (nr::MKDIR, 1, "mkdir"),         // mkdir(path, mode)
    (nr::MKNOD, 1, "mknod"),         // mknod(path, mode, dev)
    (nr::CHMOD, 1, "chmod"),         // chmod(path, mode)
    (nr::FCHMOD, 1, "fchmod"),       // fchmod(fd, mode)
    (nr::OPENAT, 3, "openat"),       // openat(dirfd, path, flags, mode)
    (nr::MKDIRAT, 2, "mkdirat"),     // mkdirat(dirfd, path, mode)
    (nr::MKNODAT, 2, "mknodat"),     // mknodat(dirfd, path, mode, dev)
    (nr::FCHMODAT, 2, "fchmodat"),   // fchmodat(dirfd, path, mode)
    (nr::FCHMODAT2, 2, "fchmodat2"), // fchmodat2(dirfd, path, mode, flags)
];
const SETID_BITS: u32 = 0o6000;

const CLONE_NEW_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32;

pub(crate) const TIOCSTI: u32 = 0x5412;
pub(crate) const TIOCLINUX: u32 = 0x541C;
const SOCK_TYPE_MASK: u32 = 0xf;
pub(crate) const SOCK_PACKET: u32 = 10;
const NETLINK_ROUTE: u32 = 0;

const EPERM: Action = Action::Errno(libc::EPERM);

/// The sandboxed command's filter (and the wasm helper's), as data.
pub fn sandbox_filter(rule: SocketRule, setid: SetIdRule) -> Filter {
    let mut f = Filter::new(AUDIT_ARCH_X86_64, Action::KillProcess, Action::Allow);
    // x32: its numbers carry X32_SYSCALL_BIT and arrive with AUDIT_ARCH_X86_64.
    f.set_range(
        X32_SYSCALL_BIT,
        u32::MAX,
        Verdict::Always(Action::KillProcess),
    );
    f.set(nr::IOCTL, Verdict::Args(Box::new(ioctl)));
    f.set(nr::CLONE, Verdict::Args(Box::new(clone)));
    f.set(
        nr::SOCKET,
        Verdict::Args(Box::new(move |asm: &mut Asm| {
            socket(asm, rule, rule == SocketRule::UnixAndInet)
        })),
    );
    f.set(
        nr::SOCKETPAIR,
        Verdict::Args(Box::new(move |asm: &mut Asm| socket(asm, rule, false))),
    );
    f.set(nr::PERSONALITY, Verdict::Args(Box::new(personality)));
    for &(n, _) in DENIED_ENOSYS {
        f.set(n, Verdict::Always(Action::Errno(libc::ENOSYS)));
    }
    for &(n, _) in DENIED_EPERM {
        f.set(n, Verdict::Always(EPERM));
    }
    if setid == SetIdRule::Refuse {
        f.set(nr::OPENAT2, Verdict::Always(Action::Errno(libc::ENOSYS)));
        for &(n, arg, _) in SETID_MODE_ARG {
            f.set(
                n,
                Verdict::Args(Box::new(move |asm: &mut Asm| setid_mode(asm, arg))),
            );
        }
    }
    f
}

/// `ioctl`: TIOCSTI and TIOCLINUX (terminal input injection) refused.
fn ioctl(asm: &mut Asm) {
    let deny = asm.label();
    asm.load_arg_low(1);
    asm.jeq(TIOCSTI, Target::Label(deny), Target::Next);
    asm.jeq(TIOCLINUX, Target::Label(deny), Target::Next);
    asm.ret(Action::Allow);
    asm.bind(deny);
    asm.ret(EPERM);
}

/// `clone`: no `CLONE_NEW*` flag.
fn clone(asm: &mut Asm) {
    let allow = asm.label();
    asm.load_arg_low(0);
    asm.jump(JSET_K, CLONE_NEW_FLAGS, Target::Next, Target::Label(allow));
    asm.ret(EPERM);
    asm.bind(allow);
    asm.ret(Action::Allow);
}

/// `personality`: only PER_LINUX and the query.
fn personality(asm: &mut Asm) {
    let allow = asm.label();
    asm.load_arg_low(0);
    asm.jeq(0, Target::Label(allow), Target::Next);
    asm.jeq(0xffff_ffff, Target::Label(allow), Target::Next);
    asm.ret(EPERM);
    asm.bind(allow);
    asm.ret(Action::Allow);
}

/// A mode argument with S_ISUID or S_ISGID: EPERM.
fn setid_mode(asm: &mut Asm, arg: u32) {
    let allow = asm.label();
    asm.load_arg_low(arg);
    asm.and(SETID_BITS);
    asm.jeq(0, Target::Label(allow), Target::Next);
    asm.ret(EPERM);
    asm.bind(allow);
    asm.ret(Action::Allow);
}

/// `socket`, `socketpair`: the family against `rule` (EAFNOSUPPORT when
/// refused); `packet_to_netwatch` lets `AF_PACKET` through to netwatch's filter.
fn socket(asm: &mut Asm, rule: SocketRule, packet_to_netwatch: bool) {
    let allow = asm.label();
    let deny = asm.label();
    let netlink = asm.label();
    let inet = asm.label();
    let label = Target::Label;
    asm.load_arg_low(0);
    asm.jeq(libc::AF_NETLINK as u32, label(netlink), Target::Next);
    match rule {
        SocketRule::UnixOnly => {
            asm.jeq(libc::AF_UNIX as u32, label(allow), label(deny));
        }
        SocketRule::UnixAndInet => {
            asm.jeq(libc::AF_UNIX as u32, label(allow), Target::Next);
            if packet_to_netwatch {
                asm.jeq(libc::AF_PACKET as u32, label(allow), Target::Next);
            }
            asm.jeq(libc::AF_INET6 as u32, label(allow), Target::Next);
            asm.jeq(libc::AF_INET as u32, label(inet), label(deny));
        }
        SocketRule::Any => {
            asm.jeq(libc::AF_VSOCK as u32, label(deny), Target::Next);
            asm.jeq(libc::AF_PACKET as u32, label(deny), Target::Next);
            asm.jeq(libc::AF_INET as u32, label(inet), label(allow));
        }
    }
    // AF_INET + SOCK_PACKET is rewritten by the kernel into AF_PACKET.
    asm.bind(inet);
    asm.load_arg_low(1);
    asm.and(SOCK_TYPE_MASK);
    asm.jeq(SOCK_PACKET, label(deny), label(allow));
    asm.bind(netlink);
    asm.load_arg_low(2);
    asm.jeq(NETLINK_ROUTE, label(allow), label(deny));
    asm.bind(deny);
    asm.ret(Action::Errno(libc::EAFNOSUPPORT));
    asm.bind(allow);
    asm.ret(Action::Allow);
}
