/* Tries: bpf(): create a map and load a trivial socket-filter program (eBPF is
 * a large kernel attack surface). Stops it: seccomp denies bpf. */
#include "escape_lib.h"
#include <linux/bpf.h>

int main(void) {
    start("kern_bpf");
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.map_type = BPF_MAP_TYPE_ARRAY;
    a.key_size = 4;
    a.value_size = 4;
    a.max_entries = 1;
    TRY("bpf(BPF_MAP_CREATE)", syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a));
    struct bpf_insn prog[] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
        {.code = BPF_JMP | BPF_EXIT},
    };
    memset(&a, 0, sizeof a);
    a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
    a.insns = (unsigned long)prog;
    a.insn_cnt = 2;
    a.license = (unsigned long)"GPL";
    TRY("bpf(BPF_PROG_LOAD socket filter)", syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a));
    return 0;
}
