# Tries: find the caller's secret in the memory of other processes: /proc/1/mem
# (airlock's helper), the parent chain, and the host sentinel; searching their
# stack and heap for "AIRLOCK_ESCAPE_SECRET=". Stops it: the helper never holds
# the caller's environment, ptrace access checks, PID namespace.
import os
import re
import escape_lib as L

L.start()
pids = {"1", L.T["SENTINEL_PID"]}
p = os.getppid()
while p > 1:
    pids.add(str(p))
    try:
        p = int(L.read_file(f"/proc/{p}/stat").split(b")")[1].split()[1])
    except (OSError, IndexError, ValueError):
        break
pat = re.compile(rb"AIRLOCK_ESCAPE_SECRET=(\w+)")
found = False
for pid in sorted(pids, key=int):
    try:
        maps = L.read_file(f"/proc/{pid}/maps").decode().splitlines()
        mem = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError as e:
        L.blocked(f"/proc/{pid}/mem", L.ename(e))
        continue
    for line in maps:
        if not ("[stack]" in line or "[heap]" in line):
            continue
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        try:
            data = os.pread(mem, min(hi - lo, 64 << 20), lo)
        except OSError as e:
            L.blocked(f"/proc/{pid}/mem read", L.ename(e))
            continue
        m = pat.search(data)
        if m:
            L.escaped(f"secret in memory of pid {pid}", m.group(1).decode())
            found = True
    os.close(mem)
if not found:
    L.blocked("secret in any readable process memory", "not found")
