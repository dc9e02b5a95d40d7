/* What a hand-off between two processes costs (issue 15): a pipe round trip
 * between a process and its child, on the same CPU and across the two CPUs,
 * after the child has slept for GAP microseconds (0, 2 ms, 20 ms, 600 ms: a
 * pooled sandbox sleeps for seconds before its request). On this VM an idle
 * vCPU halts, and waking it goes through the hypervisor.
 *   gcc -O2 bench/tools/wake_latency.c -o /tmp/wl && /tmp/wl   (2 CPUs) */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static void pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  sched_setaffinity(0, sizeof s, &s);
}
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void series(int peer_cpu, int gap_us, int n) {
  int to[2], from[2];
  if (pipe(to) || pipe(from)) exit(1);
  pid_t child = fork();
  if (child == 0) {
    close(to[1]);
    pin(peer_cpu);
    char c;
    while (read(to[0], &c, 1) == 1) write(from[1], &c, 1);
    _exit(0);
  }
  close(to[0]);
  close(from[1]);
  pin(0);
  double ts[256];
  char c = 'x';
  for (int i = 0; i < n; i++) {
    if (gap_us) usleep(gap_us);
    double t = now();
    write(to[1], &c, 1);
    read(from[0], &c, 1);
    ts[i] = now() - t;
  }
  close(to[1]);
  waitpid(child, 0, 0);
  qsort(ts, n, sizeof ts[0], cmp);
  printf("%-10s after %6d us asleep: round trip median %7.1f us, p10 %7.1f, p90 %7.1f (%d)\n",
         peer_cpu ? "cpu 0 <-> 1" : "cpu 0 <-> 0", gap_us, ts[n / 2], ts[n / 10], ts[n * 9 / 10], n);
}

int main(void) {
  int gaps[] = {0, 2000, 20000, 600000};
  for (int g = 0; g < 4; g++) {
    int n = gaps[g] >= 600000 ? 20 : 200;
    series(0, gaps[g], n);
    series(1, gaps[g], n);
  }
  return 0;
}
