/* Runs a command under a seccomp filter that allows everything: the cost any
 * syscall filter has here, with nothing else of a sandbox around it
 * (bench/results/seccomp-floor-2026-12-06.txt, section 4).
 *   gcc -O2 bench/tools/seccomp_allow_exec.c -o /tmp/secexec && /tmp/secexec python3 -c pass */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <unistd.h>
int main(int argc, char **argv) {
  struct sock_filter f[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  struct sock_fprog p = {1, f};
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p)) return 1;
  execvp(argv[1], argv + 1);
  return 127;
}
