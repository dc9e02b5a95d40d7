# The peer of iso_peer_probe (started first by the runner, in its own sandbox and
# workspace): it leaves a token (PEER_TOKEN, which the probe is never told) in
# its /tmp, /dev/shm, a SysV segment and an abstract socket, waits while the probe
# runs, then checks that everything is intact and exits 0 with PEER-OK.
import ctypes
import os
import socket
import threading
import time
import escape_lib as L

print("CONTROL-START")
tok = L.T["PEER_TOKEN"]
for d in ("/tmp", "/dev/shm"):
    with open(f"{d}/peer-{L.T['MARKER']}", "w") as f:
        f.write(tok)
libc = ctypes.CDLL(None, use_errno=True)
shm = libc.shmget(int(L.T["IPC_KEY"]) + 1, 4096, 0o1000 | 0o666)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind("\0airlock-peer-" + L.T["MARKER"])
srv.listen(4)


def serve():
    while True:
        c, _ = srv.accept()
        c.send(tok.encode())
        c.close()


threading.Thread(target=serve, daemon=True).start()
with open("/tmp/peer-ready", "w") as f:
    f.write("ready")
print("PEER-READY", flush=True)
time.sleep(float(L.T.get("PEER_WAIT", "4")))
intact = all(open(f"{d}/peer-{L.T['MARKER']}").read() == tok for d in ("/tmp", "/dev/shm"))
if intact and shm >= 0:
    L.control_ok("PEER-OK: its /tmp, /dev/shm and segment are intact")
