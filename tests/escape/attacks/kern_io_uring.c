/* Tries: io_uring, which performs I/O (even socket creation) without the
 * syscalls seccomp filters; it was in most kCTF exploits. io_uring_setup must
 * answer ENOSYS (as if the kernel lacked it), not merely fail. */
#include "escape_lib.h"
#include <linux/io_uring.h>

int main(void) {
    start("kern_io_uring");
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    errno = 0;
    long fd = syscall(SYS_io_uring_setup, 8, &p);
    if (fd >= 0) escaped("io_uring_setup", "got a ring");
    else if (errno == ENOSYS) blocked("io_uring_setup", "ENOSYS");
    else escaped("io_uring_setup not ENOSYS", ename(errno));
    errno = 0;
    long r = syscall(SYS_io_uring_enter, 0, 1, 0, 0, NULL, 0);
    if (r < 0 && errno == ENOSYS) blocked("io_uring_enter", "ENOSYS");
    else escaped("io_uring_enter not ENOSYS", ename(errno));
    errno = 0;
    r = syscall(SYS_io_uring_register, 0, 0, NULL, 0);
    if (r < 0 && errno == ENOSYS) blocked("io_uring_register", "ENOSYS");
    else escaped("io_uring_register not ENOSYS", ename(errno));
    return 0;
}
