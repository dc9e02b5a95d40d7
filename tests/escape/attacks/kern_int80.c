/* Tries: the i386 entry point (int 0x80) from a 64-bit process. Syscall numbers
 * differ there (unshare is 310, ptrace 26), so a filter that does not check the
 * architecture is bypassed. Stops it: the filter kills foreign architectures. */
#include "escape_lib.h"
#include <sched.h>

static long int80(long nr, long a, long b) {
    long ret;
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b) : "memory");
    return ret;
}

static int do_unshare(void) {
    long r = int80(310, CLONE_NEWUSER, 0);
    if (r == 0) escaped("int 0x80 unshare(CLONE_NEWUSER)", "ran");
    else if (r == -ENOSYS) blocked("int 0x80 unshare(CLONE_NEWUSER)", "ENOSYS (no ia32 emulation)");
    else if (r == -EPERM) blocked("int 0x80 unshare(CLONE_NEWUSER)", "EPERM");
    else { char d[32]; snprintf(d, sizeof d, "returned %ld", r); escaped("int 0x80 unshare(CLONE_NEWUSER)", d); }
    return 0;
}

static int do_getpid(void) {
    long r = int80(20, 0, 0);
    if (r > 0) escaped("int 0x80 getpid", "foreign-arch call ran");
    else blocked("int 0x80 getpid", r == -ENOSYS ? "ENOSYS" : "refused");
    return 0;
}

int main(void) {
    start("kern_int80");
    in_child("int 0x80 unshare(CLONE_NEWUSER)", do_unshare);
    in_child("int 0x80 getpid", do_getpid);
    return 0;
}
