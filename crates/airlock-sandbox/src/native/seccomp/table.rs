//! The x86_64 syscall table as far as airlock's filters name it, and the layout
//! of `struct seccomp_data` the filters read.
//!
//! Only x86_64 has a table: the sandbox's filter is built for it alone (any
//! other architecture, i386 and x32 entries included, is killed by it).
//! netwatch's filter names its few syscalls through libc's `SYS_*` constants and
//! so builds for aarch64 too.

/// `AUDIT_ARCH_X86_64`: `seccomp_data.arch` of a native 64-bit syscall.
pub const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
/// x32 syscalls arrive with `AUDIT_ARCH_X86_64` and this bit set in the number.
pub const X32_SYSCALL_BIT: u32 = 0x4000_0000;
/// The highest syscall number in this table (`open_tree_attr`, Linux 6.15).
/// Tests walk every number up to and beyond it.
pub const MAX_NR: u32 = nr::OPEN_TREE_ATTR;

// struct seccomp_data: nr (u32) @0, arch (u32) @4, ip (u64) @8, args[6] (u64) @16.
// Both supported architectures are little-endian, so the low half of args[i]
// is at 16 + 8 * i and the high half 4 bytes later.
pub const OFF_NR: u32 = 0;
pub const OFF_ARCH: u32 = 4;
pub const fn arg_low(i: u32) -> u32 {
    16 + 8 * i
}

// x86_64 syscall numbers. Written out (not taken from libc) because libc lacks
// some of them (`open_tree_attr`); a test checks the rest against libc.
pub(crate) mod nr {
    pub const IOCTL: u32 = 16;
    pub const SOCKET: u32 = 41;
    pub const SOCKETPAIR: u32 = 53;
    pub const CLONE: u32 = 56;
    pub const PTRACE: u32 = 101;
    pub const SYSLOG: u32 = 103;
    pub const USELIB: u32 = 134;
    pub const PERSONALITY: u32 = 135;
    pub const USTAT: u32 = 136;
    pub const SYSFS: u32 = 139;
    pub const PIVOT_ROOT: u32 = 155;
    pub const SYSCTL: u32 = 156;
    pub const ACCT: u32 = 163;
    pub const MOUNT: u32 = 165;
    pub const UMOUNT2: u32 = 166;
    pub const SWAPON: u32 = 167;
    pub const SWAPOFF: u32 = 168;
    pub const REBOOT: u32 = 169;
    pub const IOPL: u32 = 172;
    pub const IOPERM: u32 = 173;
    pub const INIT_MODULE: u32 = 175;
    pub const DELETE_MODULE: u32 = 176;
    pub const QUOTACTL: u32 = 179;
    pub const NFSSERVCTL: u32 = 180;
    pub const LOOKUP_DCOOKIE: u32 = 212;
    pub const KEXEC_LOAD: u32 = 246;
    pub const ADD_KEY: u32 = 248;
    pub const REQUEST_KEY: u32 = 249;
    pub const KEYCTL: u32 = 250;
    pub const MIGRATE_PAGES: u32 = 256;
    pub const UNSHARE: u32 = 272;
    pub const MOVE_PAGES: u32 = 279;
    pub const PERF_EVENT_OPEN: u32 = 298;
    pub const NAME_TO_HANDLE_AT: u32 = 303;
    pub const OPEN_BY_HANDLE_AT: u32 = 304;
    pub const SETNS: u32 = 308;
    pub const PROCESS_VM_READV: u32 = 310;
    pub const PROCESS_VM_WRITEV: u32 = 311;
    pub const KCMP: u32 = 312;
    pub const FINIT_MODULE: u32 = 313;
    pub const KEXEC_FILE_LOAD: u32 = 320;
    pub const BPF: u32 = 321;
    pub const USERFAULTFD: u32 = 323;
    pub const IO_URING_SETUP: u32 = 425;
    pub const IO_URING_ENTER: u32 = 426;
    pub const IO_URING_REGISTER: u32 = 427;
    pub const OPEN_TREE: u32 = 428;
    pub const MOVE_MOUNT: u32 = 429;
    pub const FSOPEN: u32 = 430;
    pub const FSCONFIG: u32 = 431;
    pub const FSMOUNT: u32 = 432;
    pub const FSPICK: u32 = 433;
    pub const CLONE3: u32 = 435;
    pub const PIDFD_GETFD: u32 = 438;
    pub const PROCESS_MADVISE: u32 = 440;
    pub const MOUNT_SETATTR: u32 = 442;
    pub const QUOTACTL_FD: u32 = 443;
    pub const OPEN_TREE_ATTR: u32 = 467;
    // The set-id rule's syscalls (mode arguments) and openat2.
    pub const OPEN: u32 = 2;
    pub const MKDIR: u32 = 83;
    pub const CREAT: u32 = 85;
    pub const CHMOD: u32 = 90;
    pub const FCHMOD: u32 = 91;
    pub const MKNOD: u32 = 133;
    pub const OPENAT: u32 = 257;
    pub const MKDIRAT: u32 = 258;
    pub const MKNODAT: u32 = 259;
    pub const FCHMODAT: u32 = 268;
    pub const OPENAT2: u32 = 437;
    pub const FCHMODAT2: u32 = 452;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syscall_numbers_match_libc() {
        let known: &[(u32, libc::c_long)] = &[
            (nr::IOCTL, libc::SYS_ioctl),
            (nr::SOCKET, libc::SYS_socket),
            (nr::SOCKETPAIR, libc::SYS_socketpair),
            (nr::CLONE, libc::SYS_clone),
            (nr::PERSONALITY, libc::SYS_personality),
            (nr::PTRACE, libc::SYS_ptrace),
            (nr::SYSLOG, libc::SYS_syslog),
            (nr::USELIB, libc::SYS_uselib),
            (nr::USTAT, libc::SYS_ustat),
            (nr::SYSFS, libc::SYS_sysfs),
            (nr::PIVOT_ROOT, libc::SYS_pivot_root),
            (nr::SYSCTL, libc::SYS__sysctl),
            (nr::ACCT, libc::SYS_acct),
            (nr::MOUNT, libc::SYS_mount),
            (nr::UMOUNT2, libc::SYS_umount2),
            (nr::SWAPON, libc::SYS_swapon),
            (nr::SWAPOFF, libc::SYS_swapoff),
            (nr::REBOOT, libc::SYS_reboot),
            (nr::IOPL, libc::SYS_iopl),
            (nr::IOPERM, libc::SYS_ioperm),
            (nr::INIT_MODULE, libc::SYS_init_module),
            (nr::DELETE_MODULE, libc::SYS_delete_module),
            (nr::QUOTACTL, libc::SYS_quotactl),
            (nr::NFSSERVCTL, libc::SYS_nfsservctl),
            (nr::LOOKUP_DCOOKIE, libc::SYS_lookup_dcookie),
            (nr::KEXEC_LOAD, libc::SYS_kexec_load),
            (nr::ADD_KEY, libc::SYS_add_key),
            (nr::REQUEST_KEY, libc::SYS_request_key),
            (nr::KEYCTL, libc::SYS_keyctl),
            (nr::MIGRATE_PAGES, libc::SYS_migrate_pages),
            (nr::UNSHARE, libc::SYS_unshare),
            (nr::MOVE_PAGES, libc::SYS_move_pages),
            (nr::PERF_EVENT_OPEN, libc::SYS_perf_event_open),
            (nr::NAME_TO_HANDLE_AT, libc::SYS_name_to_handle_at),
            (nr::OPEN_BY_HANDLE_AT, libc::SYS_open_by_handle_at),
            (nr::SETNS, libc::SYS_setns),
            (nr::PROCESS_VM_READV, libc::SYS_process_vm_readv),
            (nr::PROCESS_VM_WRITEV, libc::SYS_process_vm_writev),
            (nr::KCMP, libc::SYS_kcmp),
            (nr::FINIT_MODULE, libc::SYS_finit_module),
            (nr::KEXEC_FILE_LOAD, libc::SYS_kexec_file_load),
            (nr::BPF, libc::SYS_bpf),
            (nr::USERFAULTFD, libc::SYS_userfaultfd),
            (nr::IO_URING_SETUP, libc::SYS_io_uring_setup),
            (nr::IO_URING_ENTER, libc::SYS_io_uring_enter),
            (nr::IO_URING_REGISTER, libc::SYS_io_uring_register),
            (nr::OPEN_TREE, libc::SYS_open_tree),
            (nr::MOVE_MOUNT, libc::SYS_move_mount),
            (nr::FSOPEN, libc::SYS_fsopen),
            (nr::FSCONFIG, libc::SYS_fsconfig),
            (nr::FSMOUNT, libc::SYS_fsmount),
            (nr::FSPICK, libc::SYS_fspick),
            (nr::CLONE3, libc::SYS_clone3),
            (nr::PIDFD_GETFD, libc::SYS_pidfd_getfd),
            (nr::PROCESS_MADVISE, libc::SYS_process_madvise),
            (nr::MOUNT_SETATTR, libc::SYS_mount_setattr),
            (nr::QUOTACTL_FD, libc::SYS_quotactl_fd),
            (nr::OPEN, libc::SYS_open),
            (nr::MKDIR, libc::SYS_mkdir),
            (nr::CREAT, libc::SYS_creat),
            (nr::CHMOD, libc::SYS_chmod),
            (nr::FCHMOD, libc::SYS_fchmod),
            (nr::MKNOD, libc::SYS_mknod),
            (nr::OPENAT, libc::SYS_openat),
            (nr::MKDIRAT, libc::SYS_mkdirat),
            (nr::MKNODAT, libc::SYS_mknodat),
            (nr::FCHMODAT, libc::SYS_fchmodat),
            (nr::OPENAT2, libc::SYS_openat2),
            (nr::FCHMODAT2, libc::SYS_fchmodat2),
        ];
        for &(ours, theirs) in known {
            assert_eq!(i64::from(ours), theirs);
        }
        // open_tree_attr (6.15) follows mount_setattr's family at 467 in
        // syscall_64.tbl; libc has no constant for it yet.
        assert_eq!(nr::OPEN_TREE_ATTR, 467);
    }
}
