/* What one durable audit record costs (issue 15): fdatasync after appending a
 * 600-byte line (the file grows: ext4 commits its journal for the new size),
 * and after overwriting 600 bytes inside a region written and synced before
 * (no size or extent change: only the data and the disk's cache flush). The
 * second is what preallocating the audit log would buy.
 *   gcc -O2 bench/tools/fdatasync_cost.c -o /tmp/fc && /tmp/fc /var/tmp/fc.log 3000
 * (the file, on the filesystem of the state directory; microseconds between records) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N 100
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static void report(const char *what, double *ts) {
  qsort(ts, N, sizeof ts[0], cmp);
  printf("%-34s median %5.0f us, p10 %5.0f, p90 %5.0f\n", what, ts[N / 2], ts[N / 10], ts[N * 9 / 10]);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s FILE GAP_US\n", argv[0]);
    return 2;
  }
  int gap = atoi(argv[2]);
  char rec[600];
  memset(rec, 'a', sizeof rec - 1);
  rec[sizeof rec - 1] = '\n';
  double ts[N];

  int fd = open(argv[1], O_CREAT | O_TRUNC | O_WRONLY | O_APPEND, 0600);
  if (fd < 0) return 1;
  for (int i = 0; i < N; i++) {
    usleep(gap);
    if (write(fd, rec, sizeof rec) != sizeof rec) return 1;
    double t = now();
    fdatasync(fd);
    ts[i] = now() - t;
  }
  close(fd);
  report("append, fdatasync:", ts);

  static char zeros[N * sizeof rec];
  fd = open(argv[1], O_CREAT | O_TRUNC | O_WRONLY, 0600);
  if (fd < 0 || write(fd, zeros, sizeof zeros) != sizeof zeros || fsync(fd)) return 1;
  for (int i = 0; i < N; i++) {
    usleep(gap);
    if (pwrite(fd, rec, sizeof rec, (off_t)i * sizeof rec) != sizeof rec) return 1;
    double t = now();
    fdatasync(fd);
    ts[i] = now() - t;
  }
  close(fd);
  unlink(argv[1]);
  report("overwrite written region, fdatasync:", ts);
  return 0;
}
