/* Tries: io_uring, which performs I/O (even socket creation) without the
 * syscalls seccomp filters; it was in most kCTF exploits. io_uring_setup must
 * answer ENOSYS (as if the kernel lacked it), not merely fail; on a tier whose
 * filter can only answer another errno (DENY_ERRNO in the targets: gVisor's
 * runsc answers every seccomp refusal with EPERM) that errno, and no other. */
#include "escape_lib.h"
#include <linux/io_uring.h>

int main(void) {
    start("kern_io_uring");
    int want = strcmp(tget("DENY_ERRNO"), "EPERM") == 0 ? EPERM : ENOSYS;
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    errno = 0;
    long fd = syscall(SYS_io_uring_setup, 8, &p);
    if (fd >= 0) escaped("io_uring_setup", "got a ring");
    else if (errno == want) blocked("io_uring_setup", ename(errno));
    else escaped("io_uring_setup not refused", ename(errno));
    errno = 0;
    long r = syscall(SYS_io_uring_enter, 0, 1, 0, 0, NULL, 0);
    if (r < 0 && errno == want) blocked("io_uring_enter", ename(errno));
    else escaped("io_uring_enter not refused", ename(errno));
    errno = 0;
    r = syscall(SYS_io_uring_register, 0, 0, NULL, 0);
    if (r < 0 && errno == want) blocked("io_uring_register", ename(errno));
    else escaped("io_uring_register not refused", ename(errno));
    return 0;
}
