/* Tries: the x32 syscall ABI (syscall number | 0x40000000), which a filter that
 * checks only AUDIT_ARCH_X86_64 numbers lets through (the firejail x32 hole):
 * unshare(CLONE_NEWUSER), ptrace and bpf via x32 numbers. Stops it: the filter
 * kills x32 calls (or the kernel lacks x32: ENOSYS). Run in a child so a kill
 * is observed. */
#include "escape_lib.h"
#include <sched.h>

#define X32 0x40000000L
static long nr;
static const char *nm;

static int one(void) {
    errno = 0;
    long r = syscall(X32 | nr, CLONE_NEWUSER, 0, 0, 0);
    if (r >= 0) escaped(nm, "the x32 call ran");
    else if (errno == ENOSYS) blocked(nm, "ENOSYS (x32 disabled in this kernel)");
    else if (errno == EPERM || errno == EACCES) blocked_errno(nm, errno);
    else escaped(nm, ename(errno)); /* reached the syscall's own argument checks */
    return 0;
}

int main(void) {
    start("kern_x32_abi");
    struct { long n; const char *name; } calls[] = {
        {272, "x32 unshare(CLONE_NEWUSER)"},
        {521, "x32 ptrace"}, /* x32 has its own number for ptrace */
        {321, "x32 bpf"},
        {39, "x32 getpid"},
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        nr = calls[i].n;
        nm = calls[i].name;
        in_child(nm, one);
    }
    return 0;
}
