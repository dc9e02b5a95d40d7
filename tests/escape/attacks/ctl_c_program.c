/* Control: a compiled program runs, forks, waits and uses a pipe. */
#include "escape_lib.h"

int main(void) {
    say("CONTROL-START");
    int p[2];
    if (pipe(p) != 0) return 1;
    pid_t c = fork();
    if (c == 0) {
        write(p[1], "ping", 4);
        _exit(7);
    }
    char b[8] = {0};
    read(p[0], b, 4);
    int st;
    waitpid(c, &st, 0);
    if (strcmp(b, "ping") == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 7) say("CONTROL-OK fork, pipe and wait work");
    return 0;
}
