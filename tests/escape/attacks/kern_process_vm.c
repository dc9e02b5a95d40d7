/* Tries: process_vm_readv/writev on our own child, on PID 1 and on the host
 * sentinel (whose stack holds the caller's secret; a hit prints it, which the
 * runner catches), and pidfd_getfd/kcmp. Stops it: seccomp denies all of them;
 * PID namespace. */
#include "escape_lib.h"
#include <signal.h>
#include <sys/uio.h>

static void scan(const char *what, pid_t pid) {
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE *f = fopen(path, "r");
    if (!f) {
        /* still try a blind read, so the syscall itself is exercised */
        char b[16];
        struct iovec l = {b, sizeof b}, r = {(void *)0x400000, sizeof b};
        if (process_vm_readv(pid, &l, 1, &r, 1, 0) < 0) blocked_errno(what, errno);
        else escaped(what, "blind read worked");
        return;
    }
    int tried = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, "[stack]")) continue;
        unsigned long lo, hi;
        sscanf(line, "%lx-%lx", &lo, &hi);
        size_t len = hi - lo;
        char *buf = malloc(len + 1);
        struct iovec l = {buf, len}, r = {(void *)lo, len};
        ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
        tried = 1;
        if (n < 0) {
            blocked_errno(what, errno);
        } else {
            buf[n] = 0;
            for (ssize_t i = 0; i + 22 < n; i++)
                if (memcmp(buf + i, "AIRLOCK_ESCAPE_SECRET=", 22) == 0) {
                    escaped(what, buf + i); /* prints the secret: the runner catches it */
                    break;
                }
            escaped(what, "read its stack");
        }
        free(buf);
    }
    fclose(f);
    if (!tried) blocked(what, "no stack mapping visible");
}

int main(void) {
    start("kern_process_vm");
    static char secret_in_child[] = "child-memory";
    pid_t c = fork();
    if (c == 0) {
        pause();
        _exit(0);
    }
    char b[32];
    struct iovec l = {b, sizeof secret_in_child}, r = {secret_in_child, sizeof secret_in_child};
    if (process_vm_readv(c, &l, 1, &r, 1, 0) < 0) blocked_errno("process_vm_readv own child", errno);
    else escaped("process_vm_readv own child", "read");
    if (process_vm_writev(c, &l, 1, &r, 1, 0) < 0) blocked_errno("process_vm_writev own child", errno);
    else escaped("process_vm_writev own child", "wrote");
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    scan("process_vm_readv pid 1", 1);
    scan("process_vm_readv host sentinel", (pid_t)tgetl("SENTINEL_PID"));
    long pfd = syscall(SYS_pidfd_open, getppid(), 0);
    if (pfd < 0) blocked_errno("pidfd_open(parent)", errno);
    else {
        long fd = syscall(SYS_pidfd_getfd, pfd, 1, 0);
        if (fd < 0) blocked_errno("pidfd_getfd(parent, 1)", errno);
        else escaped("pidfd_getfd(parent, 1)", "stole an fd");
    }
    long k = syscall(SYS_kcmp, getpid(), getppid(), 0 /* KCMP_FILE */, 0, 0);
    if (k < 0) blocked_errno("kcmp", errno);
    else escaped("kcmp", "answered");
    return 0;
}
