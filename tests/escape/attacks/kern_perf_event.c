/* Tries: perf_event_open (software clock on ourselves, and a CPU-wide hardware
 * counter): a kernel attack surface and a side channel. Stops it: seccomp. */
#include "escape_lib.h"
#include <linux/perf_event.h>

int main(void) {
    start("kern_perf_event");
    struct perf_event_attr pe;
    memset(&pe, 0, sizeof pe);
    pe.type = PERF_TYPE_SOFTWARE;
    pe.size = sizeof pe;
    pe.config = PERF_COUNT_SW_CPU_CLOCK;
    pe.disabled = 1;
    TRY("perf_event_open(sw cpu clock, self)", syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
    pe.type = PERF_TYPE_HARDWARE;
    pe.config = PERF_COUNT_HW_INSTRUCTIONS;
    TRY("perf_event_open(hw, all tasks on cpu 0)", syscall(SYS_perf_event_open, &pe, -1, 0, -1, 0));
    return 0;
}
