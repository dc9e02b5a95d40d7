/* Tries: load a kernel module (init_module with a bogus image, finit_module on
 * a workspace file), remove one, and kexec_file_load. Bogus arguments make all
 * of these harmless even with no sandbox; only EPERM (seccomp or no
 * CAP_SYS_MODULE/CAP_SYS_BOOT) counts as stopped, any other error means the
 * call reached the kernel's own checks. */
#include "escape_lib.h"

static void expect_eperm(const char *what, long r) {
    if (r < 0 && (errno == EPERM || errno == EACCES || errno == ENOSYS)) blocked_errno(what, errno);
    else if (r < 0) escaped(what, ename(errno));
    else escaped(what, "succeeded");
}

int main(void) {
    start("kern_modules_kexec");
    char junk[64] = "not an ELF module";
    errno = 0;
    expect_eperm("init_module(junk)", syscall(SYS_init_module, junk, sizeof junk, ""));
    int fd = open("targets.env", O_RDONLY);
    errno = 0;
    expect_eperm("finit_module(targets.env)", syscall(SYS_finit_module, fd, "", 0));
    errno = 0;
    expect_eperm("delete_module(airlock_escape_absent)", syscall(SYS_delete_module, "airlock_escape_absent", O_NONBLOCK));
    errno = 0;
    expect_eperm("kexec_file_load(bad fds)", syscall(SYS_kexec_file_load, fd, fd, 1, "", 0));
    errno = 0;
    expect_eperm("acct(targets.env)", host_mode() ? (errno = EBUSY, -1) : syscall(SYS_acct, "targets.env"));
    errno = 0;
    expect_eperm("swapoff(targets.env)", syscall(SYS_swapoff, "targets.env"));
    return 0;
}
