/* Tries: create a device node for the host's root disk (its major:minor is in
 * targets.env) in the workspace and in /tmp, then read the disk's first sector.
 * Contents are never printed. Stops it: no CAP_MKNOD, and nodev mounts.
 * /dev is the one mount of the view that allows device nodes (it holds the
 * host's null, zero, full, random and urandom): no node can be made there
 * either. */
#include "escape_lib.h"
#include <sys/stat.h>
#include <sys/sysmacros.h>

static void try_dev(const char *path) {
    dev_t dev = makedev((unsigned)tgetl("ROOT_DEV_MAJOR"), (unsigned)tgetl("ROOT_DEV_MINOR"));
    char what[300];
    snprintf(what, sizeof what, "mknod %s", path);
    if (mknod(path, S_IFBLK | 0600, dev) != 0) {
        blocked_errno(what, errno);
        return;
    }
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        blocked_errno("open the host disk node", errno);
    } else {
        char buf[512];
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) escaped("read the host's root disk", "a sector was read");
        else blocked_errno("read the host disk node", errno);
        close(fd);
    }
    unlink(path);
}

int main(void) {
    start("priv_mknod_disk");
    try_dev("disk");
    try_dev("/tmp/disk");
    try_dev("/dev/shm/disk");
    try_dev("/dev/airlock-escape-disk");
    if (mknod("fifo", S_IFIFO | 0600, 0) == 0) say("mkfifo works (fine: no device)");
    return 0;
}
