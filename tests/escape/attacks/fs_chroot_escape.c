/* Tries: the classic chroot breakout (chroot into a subdirectory while keeping
 * a cwd outside it, then chdir("..") many times and chroot(".")), then read the
 * host canaries. Stops it: no CAP_SYS_CHROOT; and even with it, ".." stops at
 * the pivoted root, which has no host files. */
#include "escape_lib.h"

int main(void) {
    start("fs_chroot_escape");
    mkdir("jail", 0755);
    if (chroot("jail") != 0) {
        blocked_errno("chroot(jail)", errno);
    } else {
        for (int i = 0; i < 64; i++) chdir("..");
        if (chroot(".") != 0) blocked_errno("chroot(.) after ..", errno);
    }
    const char *keys[] = {"CANARY_HOME", "CANARY_TMP"};
    for (int i = 0; i < 2; i++) {
        int fd = open(tget(keys[i]), O_RDONLY);
        if (fd < 0) blocked_errno(keys[i], errno);
        else leak_fd(keys[i], fd);
    }
    return 0;
}
