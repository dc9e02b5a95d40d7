# Tries: learn about the host from /proc: its processes (count, other users'
# command lines), its mounts (host paths in /proc/self/mountinfo), its network
# sockets (the runner's listener ports in /proc/net/tcp*). Stops it: PID and
# network namespaces, a fresh /proc, a pivoted root.
import os
import escape_lib as L

L.start()
pids = [p for p in os.listdir("/proc") if p.isdigit()]
if len(pids) > 20:
    L.escaped("process table", f"{len(pids)} processes visible")
else:
    L.blocked("process table", f"{len(pids)} processes (own namespace)")
ports = {int(L.T["TCP_PORT"]), int(L.T["TCP6_PORT"])}
for f in ("/proc/net/tcp", "/proc/net/tcp6", "/proc/net/udp"):
    try:
        lines = L.read_file(f).decode().splitlines()[1:]
    except OSError as e:
        L.blocked(f, L.ename(e))
        continue
    seen = {int(line.split()[1].split(":")[1], 16) for line in lines if line.strip()}
    if seen & ports:
        L.escaped(f, "the host's listener sockets are visible")
    else:
        L.blocked(f, f"{len(lines)} sockets, none of the host's")
mi = L.read_file("/proc/self/mountinfo").decode()
if L.T["FAKE_HOME"] in mi or L.T["TMP_CANARY_DIR"] in mi:
    L.escaped("mountinfo", "host canary paths mounted")
else:
    L.blocked("mountinfo", "no host canary paths")
