/* Tries: take more than a fair share of the host: real-time scheduling
 * (SCHED_FIFO 99 can starve the host), nice -20, real-time I/O priority, and
 * making itself the OOM killer's last choice (oom_score_adj -1000). Nothing
 * spins afterwards. Stops it: no CAP_SYS_NICE / CAP_SYS_RESOURCE / CAP_SYS_ADMIN. */
#include "escape_lib.h"
#include <sched.h>
#include <sys/resource.h>

int main(void) {
    start("res_sched_priority");
    struct sched_param sp = {.sched_priority = 99};
    if (sched_setscheduler(0, SCHED_FIFO, &sp) == 0) {
        escaped("sched_setscheduler(SCHED_FIFO, 99)", "real-time priority granted");
        sp.sched_priority = 0;
        sched_setscheduler(0, SCHED_OTHER, &sp);
    } else {
        blocked_errno("sched_setscheduler(SCHED_FIFO, 99)", errno);
    }
    if (setpriority(PRIO_PROCESS, 0, -20) == 0) escaped("setpriority(-20)", "raised");
    else blocked_errno("setpriority(-20)", errno);
    /* IOPRIO_CLASS_RT (1) << 13 | level 0, for this process (IOPRIO_WHO_PROCESS = 1) */
    if (syscall(SYS_ioprio_set, 1, 0, (1 << 13) | 0) == 0) escaped("ioprio_set(RT)", "granted");
    else blocked_errno("ioprio_set(RT)", errno);
    int fd = open("/proc/self/oom_score_adj", O_WRONLY);
    if (fd < 0) blocked_errno("open oom_score_adj", errno);
    else if (write(fd, "-1000", 5) == 5) escaped("oom_score_adj -1000", "the OOM killer will spare us");
    else blocked_errno("oom_score_adj -1000", errno);
    return 0;
}
