/* Tries: userfaultfd (widens kernel race windows for exploits), by syscall and
 * through /dev/userfaultfd. Stops it: seccomp; /dev is minimal. */
#include "escape_lib.h"

int main(void) {
    start("kern_userfaultfd");
    TRY("userfaultfd(O_CLOEXEC)", syscall(SYS_userfaultfd, O_CLOEXEC));
    TRY("userfaultfd(UFFD_USER_MODE_ONLY)", syscall(SYS_userfaultfd, O_CLOEXEC | 1));
    TRY("open /dev/userfaultfd", open("/dev/userfaultfd", O_RDWR));
    return 0;
}
