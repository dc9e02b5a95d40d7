# Tries: /proc/1/root, /proc/1/cwd and /proc/<pid>/root of every visible process,
# including PID 1 (airlock's helper) and the host sentinel's host PID. If the
# helper kept the host root, /proc/1/root is the whole host. Stops it: the
# helper pivots too, and the PID namespace hides host processes.
import os
import escape_lib as L

L.start()
pids = sorted({p for p in os.listdir("/proc") if p.isdigit()} | {"1", L.T["SENTINEL_PID"], L.T["RUNNER_PID"]}, key=int)
for pid in pids:
    for sub in ("root", "cwd"):
        for key in ("CANARY_HOME", "CANARY_TMP"):
            L.try_read(f"/proc/{pid}/{sub} {key}", f"/proc/{pid}/{sub}{L.T[key]}")
