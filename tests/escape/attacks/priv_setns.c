/* Tries: join other namespaces with setns(): those of every visible process
 * (PID 1 is airlock's helper), and the host sentinel's through its host PID.
 * Stops it: seccomp denies setns; host processes are not visible. */
#include "escape_lib.h"
#include <dirent.h>
#include <sched.h>

static char path[256];
static int join(void) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        blocked_errno(path, errno);
        return 0;
    }
    if (setns(fd, 0) == 0) escaped(path, "setns succeeded");
    else blocked_errno(path, errno);
    return 0;
}

int main(void) {
    start("priv_setns");
    const char *kinds[] = {"mnt", "net", "pid", "user", "ipc", "uts", "cgroup"};
    char pids[3][32];
    snprintf(pids[0], 32, "1");
    snprintf(pids[1], 32, "%s", tget("SENTINEL_PID"));
    snprintf(pids[2], 32, "%d", getppid());
    for (int p = 0; p < 3; p++)
        for (int k = 0; k < 7; k++) {
            snprintf(path, sizeof path, "/proc/%s/ns/%s", pids[p], kinds[k]);
            in_child(path, join);
        }
    return 0;
}
