/* Tries: hardlink the host /tmp canary (and the caller's ~/.ssh/id_rsa) into
 * the workspace, then read and overwrite it through the link, and link a
 * host system file to write it. Stops it: those files are not reachable inside,
 * and bind mounts are separate mounts, so link() across them gives EXDEV. */
#include "escape_lib.h"

static void hl(const char *what, const char *src, const char *dst) {
    if (link(src, dst) != 0) {
        blocked_errno(what, errno);
        return;
    }
    int fd = open(dst, O_RDWR);
    if (fd < 0) {
        blocked_errno(what, errno);
        return;
    }
    leak_fd(what, fd);
    if (pwrite(fd, "PWNED", 5, 0) == 5) escaped(what, "overwrote the host file through a hardlink");
    close(fd);
}

int main(void) {
    start("fs_hardlink_canary");
    hl("hardlink tmp canary", tget("CANARY_TMP"), "hl_tmp");
    hl("hardlink ssh key", tget("CANARY_SSH"), "hl_ssh");
    /* a system file that is visible read-only inside: linking it must not give a
     * writable name for it (in host mode this only proves the check: we do not write) */
    if (link("/etc/hostname", "hl_hostname") == 0) {
        int fd = open("hl_hostname", O_WRONLY | O_APPEND);
        if (fd >= 0) {
            escaped("hardlink /etc/hostname", "linked and opened for writing");
            close(fd);
        } else {
            blocked_errno("hardlink /etc/hostname opened for writing", errno);
        }
        unlink("hl_hostname");
    } else {
        blocked_errno("hardlink /etc/hostname", errno);
    }
    return 0;
}
