/* Tries: create nested user namespaces, which give back a full capability set
 * (the door to netfilter, fsconfig and cgroup release_agent exploits):
 * unshare(CLONE_NEWUSER), clone(CLONE_NEWUSER), clone3 and the unshare(1) tool.
 * Stops it: seccomp denies unshare and namespace flags in clone; clone3 answers
 * ENOSYS so glibc falls back to clone. */
#include "escape_lib.h"
#include <sched.h>
#include <linux/sched.h>

static int try_unshare(void) {
    if (unshare(CLONE_NEWUSER) == 0) escaped("unshare(CLONE_NEWUSER)", "new user namespace");
    else blocked_errno("unshare(CLONE_NEWUSER)", errno);
    return 0;
}

static int child_fn(void *arg) { (void)arg; return 0; }

int main(void) {
    start("priv_userns_nested");
    in_child("unshare(CLONE_NEWUSER)", try_unshare);
    static char stack[65536];
    int pid = clone(child_fn, stack + sizeof stack, CLONE_NEWUSER | SIGCHLD, NULL);
    if (pid < 0) blocked_errno("clone(CLONE_NEWUSER)", errno);
    else { escaped("clone(CLONE_NEWUSER)", "child in a new user namespace"); waitpid(pid, NULL, 0); }
    struct clone_args ca = {.flags = CLONE_NEWUSER, .exit_signal = SIGCHLD};
    long r = syscall(SYS_clone3, &ca, sizeof ca);
    if (r == 0) _exit(0);
    if (r < 0) {
        char d[64];
        snprintf(d, sizeof d, "%s%s", ename(errno), errno == ENOSYS ? " (as designed)" : " (expected ENOSYS)");
        if (errno == ENOSYS) blocked("clone3(CLONE_NEWUSER)", d);
        else escaped("clone3 does not answer ENOSYS", d);
    } else {
        escaped("clone3(CLONE_NEWUSER)", "child created");
        waitpid((pid_t)r, NULL, 0);
    }
    int rc = system("unshare -U true 2>/dev/null");
    if (rc == 0) escaped("unshare -U true", "succeeded");
    else blocked("unshare -U true", "failed");
    return 0;
}
