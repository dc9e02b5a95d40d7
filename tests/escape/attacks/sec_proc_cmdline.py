# Tries: read /proc/<pid>/cmdline of every visible process, PID 1 first. When
# airlock forks the sandbox's helper in advance (`airlock run`), PID 1 is a
# copy of the caller's process: its cmdline would show the caller's own
# command line (`airlock run --policy /host/path ... --`), host paths included.
# Stops it: the forked helper zeroes its argv and environment strings before
# anything else (native::prefork; `run.py --prefork-scrub-off` shows this case
# failing without it), and the PID namespace hides host processes.
import os
import escape_lib as L

L.start()
me = os.getpid()
pids = sorted({p for p in os.listdir("/proc") if p.isdigit()} | {"1"}, key=int)
hits = 0
for pid in pids:
    if int(pid) == me:
        continue
    try:
        raw = L.read_file(f"/proc/{pid}/cmdline")
    except OSError as e:
        L.blocked(f"/proc/{pid}/cmdline", L.ename(e))
        continue
    words = [w for w in raw.split(b"\0") if w]
    print(f"--- /proc/{pid}/cmdline: {words!r}")
    if b"--policy" in words or any(b"policy-" in w for w in words):
        L.escaped(f"/proc/{pid}/cmdline", "shows the caller's command line")
        hits += 1
if not hits:
    L.blocked("the caller's command line in any /proc/*/cmdline", "none found")
