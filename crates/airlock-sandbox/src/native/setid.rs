//! No set-id files: a second, small seccomp filter that refuses every way of
//! giving a file the set-user-ID or set-group-ID bit.
//!
//! Why: in `rw` mode (and for `filesystem.write` paths) root inside writes
//! through an idmapped mount as the tree's host owner. When that owner is host
//! root, `chmod 4755` inside would leave a setuid-root program on the host for
//! any host user to run. `nosuid` on the sandbox's mount does not help the host.
//!
//! The filter returns EPERM for chmod, fchmod, fchmodat, fchmodat2, open,
//! openat, creat, mkdir, mkdirat, mknod and mknodat when their mode argument
//! carries S_ISUID or S_ISGID, and ENOSYS for openat2 (its mode sits behind a
//! pointer the filter cannot read; callers fall back to openat). Other
//! architectures pass through here: the main filter kills them.

use super::seccomp::{jump, stmt};
use crate::SandboxError;

const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
const SETID: u32 = 0o6000;

/// (syscall number, index of the mode argument) on x86_64.
const MODE_ARG: &[(u32, u32)] = &[
    (2, 2),   // open(path, flags, mode)
    (85, 1),  // creat(path, mode)
    (83, 1),  // mkdir(path, mode)
    (133, 1), // mknod(path, mode, dev)
    (90, 1),  // chmod(path, mode)
    (91, 1),  // fchmod(fd, mode)
    (257, 3), // openat(dirfd, path, flags, mode)
    (258, 2), // mkdirat(dirfd, path, mode)
    (259, 2), // mknodat(dirfd, path, mode, dev)
    (268, 2), // fchmodat(dirfd, path, mode)
    (452, 2), // fchmodat2(dirfd, path, mode, flags)
];
const OPENAT2: u32 = 437;

/// The BPF program.
pub fn program() -> Vec<libc::sock_filter> {
    use libc::{BPF_ABS, BPF_ALU, BPF_AND, BPF_JEQ, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};
    let ld = (BPF_LD | BPF_W | BPF_ABS) as u16;
    let jeq = (BPF_JMP | BPF_JEQ | BPF_K) as u16;
    let ret = (BPF_RET | BPF_K) as u16;
    let and = (BPF_ALU | BPF_AND | BPF_K) as u16;
    let allow = libc::SECCOMP_RET_ALLOW;
    let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    let enosys = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
    let mut p = vec![
        stmt(ld, 4), // arch
        jump(jeq, AUDIT_ARCH_X86_64, 1, 0),
        stmt(ret, allow),
        stmt(ld, 0), // nr
        jump(jeq, OPENAT2, 0, 1),
        stmt(ret, enosys),
    ];
    for &(nr, arg) in MODE_ARG {
        // if nr matches: load the low word of the mode argument, mask, decide.
        // Not this syscall: skip the next five instructions to the reload of nr.
        p.push(jump(jeq, nr, 0, 5));
        p.push(stmt(ld, 16 + 8 * arg));
        p.push(stmt(and, SETID));
        p.push(jump(jeq, 0, 0, 1));
        p.push(stmt(ret, allow));
        p.push(stmt(ret, eperm));
        p.push(stmt(ld, 0));
    }
    p.push(stmt(ret, allow));
    p
}

/// Installs the filter on the calling thread (needs no_new_privs, which the
/// sandbox has by then).
pub fn install() -> Result<(), SandboxError> {
    super::seccomp::load(&program(), 0).map_err(|e| SandboxError::Layer {
        layer: "seccomp",
        detail: format!("set-id filter: {e}"),
    })?;
    Ok(())
}
