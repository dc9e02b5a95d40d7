/* Tries: use a file descriptor leaked from the caller. The runner starts airlock
 * with an open directory fd on the caller's $HOME; openat() relative to it
 * ignores the sandbox's mount view (the CVE-2024-21626 class). Stops it: only
 * fds 0-2 reach the command (close_range / CLOEXEC in the helper). */
#include "escape_lib.h"
#include <dirent.h>

int main(void) {
    start("fs_inherited_fd");
    int found = 0;
    for (int fd = 3; fd < 1024; fd++) {
        if (fcntl(fd, F_GETFD) < 0) continue;
        char link[64], target[512] = "";
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > 0) target[n] = 0;
        /* the fd this program's own libc may hold (none expected) */
        found++;
        int c = openat(fd, "canary.txt", O_RDONLY);
        char what[700];
        snprintf(what, sizeof what, "inherited fd %d (%s)", fd, target);
        if (c >= 0) leak_fd(what, c);
        else escaped(what, "an extra fd is open in the command");
    }
    if (!found) blocked("inherited fds", "only 0-2 are open");
    return 0;
}
