/* Tries: gain privilege through setuid binaries: a copy of itself made setuid
 * in the workspace, and the host's real setuid-root binaries (mount, su,
 * firejail). After exec, the child reports its capability sets.
 * Stops it: no_new_privs, nosuid mounts, and empty bounding/ambient sets. */
#include "escape_lib.h"
#include <sys/stat.h>

static unsigned long long cap_eff(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long v = ~0ULL;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "CapEff:", 7) == 0) v = strtoull(line + 7, NULL, 16);
    if (f) fclose(f);
    return v;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "report") == 0) {
        unsigned long long c = cap_eff();
        char d[96];
        snprintf(d, sizeof d, "euid=%d CapEff=%llx", geteuid(), c);
        if (c) escaped("capabilities after exec of a setuid copy", d);
        else blocked("capabilities after exec of a setuid copy", d);
        return 0;
    }
    start("priv_setuid_exec");
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    /* copy ourselves and set the setuid bit */
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "cp '%s' ./suid_copy", self);
    if (system(cmd) == 0 && chmod("./suid_copy", 04755) == 0) {
        fflush(stdout);
        pid_t p = fork();
        if (p == 0) {
            execl("./suid_copy", "suid_copy", "report", (char *)NULL);
            blocked_errno("exec setuid copy", errno);
            _exit(0);
        }
        waitpid(p, NULL, 0);
    } else {
        blocked_errno("chmod u+s in workspace", errno);
    }
    /* host setuid-root mount(8): as a setuid binary it would try mount(2) */
    mkdir("mnt", 0755);
    int rc = system("/usr/bin/mount -t tmpfs none ./mnt >/dev/null 2>&1");
    if (rc == 0) {
        escaped("setuid /usr/bin/mount -t tmpfs", "mounted");
        system("/usr/bin/umount ./mnt >/dev/null 2>&1");
    } else {
        blocked("setuid /usr/bin/mount -t tmpfs", "refused");
    }
    /* firejail is setuid root on this host: it must not become a way out */
    rc = system("/usr/bin/firejail --quiet --noprofile cat /proc/self/status 2>/dev/null | grep -q '^CapEff:.*[1-9a-f]'");
    if (rc == 0) escaped("setuid firejail", "ran with capabilities");
    else blocked("setuid firejail", "no capabilities gained");
    return 0;
}
