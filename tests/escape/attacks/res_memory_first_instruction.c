/* Tries: use more memory than the sandbox's limit in the moment before the
 * cgroup holds the command (issue 15 moved init's migration off the critical
 * path: it must still come before the command runs). Right after announcing
 * itself, the command touches twice its memory limit (128 MiB under 64 MiB).
 * Stops it: init forks the command only once it is in the run's cgroup with
 * the limits written (v1: moved there by the helper; v2: born there by
 * clone3(CLONE_INTO_CGROUP)), so the OOM killer ends it, reported as memory.
 * Proven able to fail with run.py --cgroup-attach-late (debug builds, v1):
 * init then forks the command 300 ms before it is moved. */
#include "escape_lib.h"
#include <sys/mman.h>

int main(void) {
    start("res_memory_first_instruction");
    size_t len = (size_t)128 << 20;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        blocked_errno("map 128 MiB", errno);
        return 1;
    }
    for (size_t off = 0; off < len; off += 4096) p[off] = 1;
    escaped("touch 128 MiB under a 64 MiB limit", "survived: the memory limit was not in force");
    return 0;
}
