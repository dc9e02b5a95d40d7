/* cgroup v1: what a fresh process pays to enter a fresh group after a quiet moment (issue 15).
 *   mode 0: its pid written to each hierarchy's cgroup.procs (takes the kernel's global
 *           cgroup_threadgroup_rwsem for writing: the first writer after a quiet moment waits one
 *           RCU grace period);
 *   mode 1: "0" written to each hierarchy's tasks by the process itself, single-threaded (a
 *           thread moving itself: the kernel takes no such lock). What init does.
 * Prints one time per round, in ms, for memory, pids and cpu. Root; own child groups of
 * /sys/fs/cgroup/<ctrl>/airlock only.
 *   gcc -O2 bench/tools/cgroup_v1_self_join.c -o /tmp/sj && /tmp/sj MODE ROUNDS GAP_MS */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
static void wr(const char *p, const char *v) {
  int fd = open(p, O_WRONLY);
  if (fd < 0 || write(fd, v, strlen(v)) < 0) { perror(p); _exit(1); }
  close(fd);
}
static const char *ctr[] = {"memory", "pids", "cpu"};
int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: %s MODE(0|1) ROUNDS GAP_MS\n", argv[0]); return 2; }
  int mode = atoi(argv[1]), rounds = atoi(argv[2]), gap = atoi(argv[3]);
  for (int i = 0; i < rounds; i++) {
    usleep(gap * 1000);
    char d[3][256];
    for (int k = 0; k < 3; k++) {
      snprintf(d[k], sizeof d[k], "/sys/fs/cgroup/%s/airlock/sj-%d-%d", ctr[k], getpid(), i);
      mkdir(d[k], 0755);
    }
    int pp[2];
    if (pipe(pp)) return 1;
    pid_t c = fork();
    if (c == 0) {
      double t0 = now();
      char p[320], me[32];
      snprintf(me, sizeof me, "%d", getpid());
      for (int k = 0; k < 3; k++) {
        snprintf(p, sizeof p, "%s/%s", d[k], mode ? "tasks" : "cgroup.procs");
        wr(p, mode ? "0" : me);
      }
      double t = now() - t0;
      if (write(pp[1], &t, sizeof t) != sizeof t) _exit(1);
      _exit(0);
    }
    double t = -1;
    if (read(pp[0], &t, sizeof t) != sizeof t) t = -1;
    waitpid(c, 0, 0);
    close(pp[0]); close(pp[1]);
    printf("%.3f ", t);
    fflush(stdout);
    for (int k = 0; k < 3; k++) rmdir(d[k]);
  }
  printf("\n");
  return 0;
}
