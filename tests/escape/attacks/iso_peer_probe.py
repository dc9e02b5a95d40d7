# Tries: reach ANOTHER sandbox running at the same time (the runner starts a
# peer sandbox first, which puts a token in its /tmp, /dev/shm, a SysV segment,
# an abstract unix socket and its process list, then waits). We search our own
# view for any of it and try to connect to and signal it. Stops it: each sandbox
# has its own mount, IPC, PID and network namespaces and its own tmpfs /tmp.
import ctypes
import os
import signal
import socket
import escape_lib as L

L.start()
hits = []
for d in ("/tmp", "/dev/shm"):
    for name in os.listdir(d):
        if name.startswith("peer-"):
            hits.append(f"{d}/{name}")
            L.escaped(f"peer file {d}/{name}", open(f"{d}/{name}").read())
libc = ctypes.CDLL(None, use_errno=True)
shm = libc.shmget(int(L.T["IPC_KEY"]) + 1, 0, 0)
if shm >= 0:
    L.escaped("peer SysV segment", f"id {shm}")
else:
    L.blocked("peer SysV segment", L.ename(ctypes.get_errno()))
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1)
    s.connect("\0airlock-peer-" + L.T["MARKER"])
    L.escaped("peer abstract socket", s.recv(100).decode())
except OSError as e:
    L.blocked("peer abstract socket", L.ename(e))
for p in os.listdir("/proc"):
    if p.isdigit() and int(p) != os.getpid():
        try:
            cmd = open(f"/proc/{p}/cmdline", "rb").read()
        except OSError:
            continue
        if b"iso_peer_victim" in cmd:
            L.escaped("peer process visible", p)
            os.kill(int(p), signal.SIGKILL)
if not hits:
    L.blocked("peer /tmp and /dev/shm", "nothing of the peer")
