/* Tries: ptrace in all its forms: PTRACE_TRACEME, attaching to our own child,
 * to PID 1 (airlock's helper), and to the host sentinel by its host PID (the
 * runner checks that the sentinel is alive and not stopped afterwards).
 * Stops it: seccomp denies ptrace; PID namespace hides host processes. */
#include "escape_lib.h"
#include <signal.h>
#include <sys/ptrace.h>

static int traceme(void) {
    if (ptrace(PTRACE_TRACEME, 0, 0, 0) == 0) escaped("PTRACE_TRACEME", "allowed");
    else blocked_errno("PTRACE_TRACEME", errno);
    return 0;
}

static void attach(const char *what, pid_t pid) {
    if (ptrace(PTRACE_ATTACH, pid, 0, 0) == 0) {
        escaped(what, "attached");
        waitpid(pid, NULL, __WALL);
        ptrace(PTRACE_DETACH, pid, 0, 0);
    } else {
        blocked_errno(what, errno);
    }
    if (ptrace(PTRACE_SEIZE, pid, 0, 0) == 0) {
        escaped(what, "seized");
        ptrace(PTRACE_DETACH, pid, 0, 0);
    }
}

int main(void) {
    start("kern_ptrace");
    in_child("PTRACE_TRACEME", traceme);
    pid_t c = fork();
    if (c == 0) {
        pause();
        _exit(0);
    }
    attach("PTRACE_ATTACH own child", c);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    if (!host_mode()) attach("PTRACE_ATTACH pid 1", 1);  /* host pid 1 is the VM's init */
    attach("PTRACE_ATTACH host sentinel", (pid_t)tgetl("SENTINEL_PID"));
    return 0;
}
