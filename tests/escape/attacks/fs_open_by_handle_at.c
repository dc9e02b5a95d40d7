/* Tries: the "shocker" escape. open_by_handle_at() opens a file by its file
 * handle on any mount of the same filesystem, ignoring the mount view. We are
 * given the real handle of the caller's ~/canary.txt and use the workspace
 * (same host filesystem) as the mount fd. Stops it: CAP_DAC_READ_SEARCH in the
 * initial user namespace is required, and seccomp denies the call. */
#include "escape_lib.h"

int main(void) {
    start("fs_open_by_handle_at");
    const char *hex = tget("HANDLE_HEX");
    size_t n = strlen(hex) / 2;
    struct file_handle *fh = malloc(sizeof *fh + 128);
    fh->handle_bytes = n;
    fh->handle_type = (int)tgetl("HANDLE_TYPE");
    for (size_t i = 0; i < n && i < 128; i++) sscanf(hex + 2 * i, "%2hhx", &fh->f_handle[i]);
    int mfd = open(".", O_RDONLY | O_DIRECTORY);
    int fd = open_by_handle_at(mfd, fh, O_RDONLY);
    if (fd < 0) blocked_errno("open_by_handle_at(home canary)", errno);
    else leak_fd("open_by_handle_at(home canary)", fd);
    /* name_to_handle_at itself is a probe of the host fs: allowed or not, it must not
     * lead anywhere, but seccomp is expected to deny the pair */
    struct file_handle *h2 = malloc(sizeof *h2 + 128);
    h2->handle_bytes = 128;
    int mid;
    if (name_to_handle_at(AT_FDCWD, ".", h2, &mid, 0) == 0) {
        fd = open_by_handle_at(mfd, h2, O_RDONLY);
        if (fd < 0) blocked_errno("open_by_handle_at(own workspace handle)", errno);
        else escaped("open_by_handle_at(own workspace handle)", "opened");
    } else {
        blocked_errno("name_to_handle_at", errno);
    }
    return 0;
}
