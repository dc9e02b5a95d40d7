/* What having any seccomp filter costs a syscall-heavy loop (issue 15: the
 * stat-heavy workload within 5 % of bare). 200k stat("/") with no filter, with
 * a filter that allows everything, and with one that compares the syscall
 * number 20 times first. The kernel caches the verdict of a filter that reads
 * only the syscall number and architecture, so depth should not matter; what
 * is left is the slow syscall entry every filtered task takes.
 *   gcc -O2 bench/tools/seccomp_floor.c -o /tmp/sf && for a in "" 0 20; do /tmp/sf $a; done */
#define _GNU_SOURCE
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  if (argc > 1) {
    int depth = atoi(argv[1]);
    if (depth < 0 || depth > 60) return 2;
    struct sock_filter f[64];
    int i = 0;
    f[i++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0);
    for (int j = 0; j < depth; j++)
      f[i++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 100000 + j, 0, 0);
    f[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = {.len = i, .filter = f};
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
      perror("seccomp");
      return 1;
    }
  }
  struct stat st;
  double best = 1e9;
  for (int r = 0; r < 7; r++) {
    double a = now_ms();
    for (int i = 0; i < 200000; i++) stat("/", &st);
    double b = now_ms() - a;
    if (b < best) best = b;
  }
  printf("filter %s: best of 7, 200k stat(\"/\"): %.1f ms\n", argc > 1 ? argv[1] : "none", best);
  return 0;
}
