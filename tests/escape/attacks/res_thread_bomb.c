/* Tries: a thread bomb (threads count against pids.max too) that reports how
 * many threads it got. Stops it: pids.max; the run then ends by timeout or
 * pids. THREADS= must stay within the pid limit. */
#include "escape_lib.h"
#include <pthread.h>

static void *sleeper(void *a) { (void)a; for (;;) pause(); return NULL; }

int main(void) {
    start("res_thread_bomb");
    int n = 0;
    for (int i = 0; i < 100000; i++) {
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setstacksize(&at, 65536);
        if (pthread_create(&t, &at, sleeper, NULL) != 0) break;
        n++;
    }
    say("THREADS=%d", n);
    for (;;) pause();
}
