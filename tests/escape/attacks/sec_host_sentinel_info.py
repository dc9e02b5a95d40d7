# Tries: look at the host sentinel and the runner through their host PIDs:
# cmdline, status, maps, fds. Stops it: PID namespace (host PIDs do not exist
# inside, or name unrelated sandbox processes).
import escape_lib as L

L.start()
marker = L.T["MARKER"]
for pid in (L.T["SENTINEL_PID"], L.T["RUNNER_PID"]):
    try:
        cmd = L.read_file(f"/proc/{pid}/cmdline").replace(b"\0", b" ").decode()
    except OSError as e:
        L.blocked(f"/proc/{pid}/cmdline", L.ename(e))
        continue
    if "sentinel" in cmd or "run.py" in cmd:
        L.escaped(f"host process {pid} visible", cmd[:120])
    else:
        L.blocked(f"host process {pid}", f"pid names a sandbox process: {cmd[:60]!r}")
