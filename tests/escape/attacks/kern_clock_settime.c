/* Tries: set the host's clocks (clock_settime, settimeofday, adjtimex in write
 * mode). The time written is the current time, so even a success leaves the
 * clock as it was. Stops it: no CAP_SYS_TIME (time is not namespaced for writes). */
#include "escape_lib.h"
#include <sys/time.h>
#include <sys/timex.h>
#include <time.h>

int main(void) {
    start("kern_clock_settime");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (clock_settime(CLOCK_REALTIME, &ts) == 0) escaped("clock_settime(REALTIME)", "accepted");
    else blocked_errno("clock_settime(REALTIME)", errno);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    if (settimeofday(&tv, NULL) == 0) escaped("settimeofday", "accepted");
    else blocked_errno("settimeofday", errno);
    struct timex tx = {.modes = ADJ_OFFSET_SINGLESHOT, .offset = 0};
    if (adjtimex(&tx) >= 0) escaped("adjtimex(ADJ_OFFSET_SINGLESHOT 0)", "accepted");
    else blocked_errno("adjtimex(write)", errno);
    return 0;
}
