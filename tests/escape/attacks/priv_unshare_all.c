/* Tries: unshare every other namespace type (mount, net, pid, ipc, uts, cgroup,
 * time) and setns back out. Stops it: seccomp denies unshare/setns, and there
 * are no capabilities anyway. */
#include "escape_lib.h"
#include <sched.h>

static int flag;
static const char *flagname;
static int one(void) {
    if (unshare(flag) == 0) escaped(flagname, "new namespace");
    else blocked_errno(flagname, errno);
    return 0;
}

int main(void) {
    start("priv_unshare_all");
    struct { int f; const char *n; } all[] = {
        {CLONE_NEWNS, "unshare(CLONE_NEWNS)"},     {CLONE_NEWNET, "unshare(CLONE_NEWNET)"},
        {CLONE_NEWPID, "unshare(CLONE_NEWPID)"},   {CLONE_NEWIPC, "unshare(CLONE_NEWIPC)"},
        {CLONE_NEWUTS, "unshare(CLONE_NEWUTS)"},   {CLONE_NEWCGROUP, "unshare(CLONE_NEWCGROUP)"},
        {0x00000080 /* CLONE_NEWTIME */, "unshare(CLONE_NEWTIME)"},
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        flag = all[i].f;
        flagname = all[i].n;
        in_child(flagname, one);
    }
    return 0;
}
