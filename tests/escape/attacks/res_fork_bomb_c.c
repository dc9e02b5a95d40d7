/* Tries: a fork bomb in C, where every child keeps forking and holds on.
 * Stops it: pids.max; airlock must report killed_by = "pids" and tear down. */
#include "escape_lib.h"

int main(void) {
    start("res_fork_bomb_c");
    int ok = 0, fail = 0;
    for (;;) {
        pid_t p = fork();
        if (p < 0) {
            if (++fail % 1000 == 1) say("fork failed: %s (after %d forks)", ename(errno), ok);
            usleep(1000);
        } else if (p > 0) {
            ok++;
        }
        /* both parent and child go on forking */
    }
}
