/* Tries: mount things: a tmpfs, a bind of / onto the workspace, a remount of
 * /usr read-write, a fresh proc, and the new mount API (fsopen/fsmount/
 * open_tree/move_mount). Every success is undone at once (this program is also
 * run with no sandbox to prove the checks fail). Stops it: seccomp denies the
 * mount family; no CAP_SYS_ADMIN. */
#include "escape_lib.h"
#include <sys/mount.h>
#include <sys/stat.h>
#include <linux/mount.h>

int main(void) {
    start("priv_mount");
    mkdir("mnt", 0755);
    if (mount("none", "mnt", "tmpfs", 0, NULL) == 0) { escaped("mount tmpfs", "mounted"); umount2("mnt", MNT_DETACH); }
    else blocked_errno("mount tmpfs", errno);
    if (mount("/", "mnt", NULL, MS_BIND | MS_REC, NULL) == 0) { escaped("bind mount /", "mounted"); umount2("mnt", MNT_DETACH); }
    else blocked_errno("bind mount /", errno);
    if (mount(NULL, "/usr", NULL, MS_REMOUNT | MS_BIND, NULL) == 0) escaped("remount /usr rw", "remounted");
    else blocked_errno("remount /usr rw", errno);
    if (mount("proc", "mnt", "proc", 0, NULL) == 0) { escaped("mount proc", "mounted"); umount2("mnt", MNT_DETACH); }
    else blocked_errno("mount proc", errno);
    long fs = syscall(SYS_fsopen, "tmpfs", 0);
    if (fs >= 0) { escaped("fsopen(tmpfs)", "got an fs context"); close(fs); }
    else blocked_errno("fsopen(tmpfs)", errno);
    long t = syscall(SYS_open_tree, AT_FDCWD, "/", 1 /* OPEN_TREE_CLONE */ | AT_RECURSIVE);
    if (t >= 0) { escaped("open_tree(/, CLONE)", "detached copy of /"); close(t); }
    else blocked_errno("open_tree(/, CLONE)", errno);
    /* these two would wreck the host's own mount table when run with no sandbox */
    if (host_mode()) {
        escaped("umount /proc and pivot_root", "not attempted: no sandbox");
        return 0;
    }
    if (umount2("/proc", MNT_DETACH) == 0) escaped("umount /proc", "unmounted");
    else blocked_errno("umount /proc", errno);
    if (syscall(SYS_pivot_root, ".", "mnt") == 0) escaped("pivot_root", "pivoted");
    else blocked_errno("pivot_root", errno);
    return 0;
}
