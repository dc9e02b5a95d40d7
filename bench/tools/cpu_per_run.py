#!/usr/bin/env python3
"""The whole machine's CPU per run of each command (issue 15): busy time from
/proc/stat over N runs, divided by N. Unlike a tool's own task-clock, it counts
the kernel work a run leaves behind for workers to finish after it exits (a
network namespace's cleanup, RCU callbacks, cgroup offlining), which competes
with the next run on a 2-core host. Each command runs N times in a row, twice,
in turn; a half-second pause lets deferred work land in its own total.

  python3 bench/tools/cpu_per_run.py 100 "bwrap ... /bin/true" "airlock run -- /bin/true"

The figures include the shell that starts each run (run /bin/true alone to
see that share).
"""

import os
import subprocess
import sys
import time


def busy_and_total() -> tuple[int, int]:
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    # idle + iowait, and steal: time the hypervisor gave to another guest
    # while this one wanted to run is no work of the commands measured.
    idle = fields[3] + fields[4] + fields[7]
    return sum(fields) - idle, sum(fields)


def main() -> int:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    n = int(sys.argv[1])
    hz = os.sysconf("SC_CLK_TCK")
    for _ in range(2):
        for cmd in sys.argv[2:]:
            time.sleep(1)
            busy0, _ = busy_and_total()
            start = time.perf_counter()
            for _ in range(n):
                subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=False)
            wall = (time.perf_counter() - start) / n * 1000
            time.sleep(0.5)
            busy1, _ = busy_and_total()
            cpu = (busy1 - busy0) / hz / n * 1000
            print(f"{cpu:7.2f} ms CPU  {wall:7.2f} ms wall  per run  {cmd}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
