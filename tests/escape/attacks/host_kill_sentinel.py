# Tries: kill a host process: the sentinel by its host PID, and any process
# whose command line names it, found by scanning /proc. The runner checks the
# sentinel is still alive. Stops it: PID namespace (host PIDs are not
# reachable; a same-numbered PID inside is a sandbox process).
import os
import signal
import escape_lib as L

L.start()
pid = int(L.T["SENTINEL_PID"])
try:
    cmd = open(f"/proc/{pid}/cmdline", "rb").read()
except OSError:
    cmd = b""
if cmd.startswith(f"airlock-escape-sentinel-{L.T['MARKER']}".encode()):
    try:
        os.kill(pid, signal.SIGKILL)
        L.escaped("kill host sentinel by pid", "signal delivered")
    except OSError as e:
        L.blocked("kill host sentinel by pid", L.ename(e))
else:
    try:
        os.kill(pid, 0)
        L.blocked("host sentinel pid", "the number names a sandbox process, not the sentinel")
    except OSError as e:
        L.blocked("kill host sentinel by pid", L.ename(e))
found = 0
needle = f"airlock-escape-sentinel-{L.T['MARKER']}".encode()
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) == os.getpid():
        continue
    try:
        if open(f"/proc/{p}/cmdline", "rb").read().startswith(needle):
            found += 1
            os.kill(int(p), signal.SIGKILL)
            L.escaped("kill sentinel found in /proc", p)
    except OSError:
        pass
if not found:
    L.blocked("find the sentinel in /proc", "not visible")
