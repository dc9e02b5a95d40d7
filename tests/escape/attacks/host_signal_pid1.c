/* Tries: kill airlock's helper (PID 1 inside) and the parent, to break the
 * reaper and escape supervision: SIGKILL and SIGSTOP to PID 1 and to every
 * other process (kill(-1)). A process in the namespace cannot kill its init
 * with a signal init does not handle. The runner checks that airlock still
 * reports a proper outcome and that nothing is left. With no sandbox, only our
 * own process group is signalled. */
#include "escape_lib.h"
#include <signal.h>

int main(void) {
    start("host_signal_pid1");
    if (host_mode()) {
        escaped("signal pid 1", "not attempted: no sandbox (pid 1 is the VM's init)");
        return 0;
    }
    if (getpid() == 1) {
        /* The command is its namespace's init (OCI and gVisor tiers): no airlock
         * process shares the namespace, so pid 1 is this program. (gVisor's Sentry
         * lets init kill itself, which ends only the command.) */
        blocked("signal pid 1", "pid 1 is this command: no airlock process is in its namespace");
        if (kill(-1, SIGKILL) == 0) say("kill(-1, SIGKILL) delivered inside the namespace");
        else blocked_errno("kill(-1, SIGKILL)", errno);
        return 0;
    }
    if (kill(1, SIGKILL) == 0) blocked("kill(1, SIGKILL)", "delivered, but init of a pid namespace ignores it");
    else blocked_errno("kill(1, SIGKILL)", errno);
    kill(1, SIGSTOP);
    signal(SIGTERM, SIG_IGN);
    /* kill(-1) reaches every process we may signal except init and ourselves */
    if (kill(-1, SIGKILL) == 0) say("kill(-1, SIGKILL) delivered inside the namespace");
    else blocked_errno("kill(-1, SIGKILL)", errno);
    usleep(200000);
    say("still alive after signalling pid 1");
    blocked("signal pid 1", "the helper survived (judged by the outcome)");
    return 0;
}
