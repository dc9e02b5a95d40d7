# Tries: share state with the host through SysV IPC (a segment, semaphore set
# and message queue under a key the runner watches in the host's
# /proc/sysvipc) and POSIX shared memory in /dev/shm. Stops it: IPC namespace;
# /dev/shm is the sandbox's own tmpfs.
import ctypes
import os
import escape_lib as L

L.start()
libc = ctypes.CDLL(None, use_errno=True)
key = int(L.T["IPC_KEY"])
IPC_CREAT = 0o1000
for name, call in (("shmget", lambda: libc.shmget(key, 4096, IPC_CREAT | 0o666)),
                   ("semget", lambda: libc.semget(key, 1, IPC_CREAT | 0o666)),
                   ("msgget", lambda: libc.msgget(key, IPC_CREAT | 0o666))):
    r = call()
    if r < 0:
        L.blocked(name, L.ename(ctypes.get_errno()))
    else:
        L.say(f"{name} created id {r} (the host must not see key {key})")
try:
    with open("/proc/sysvipc/shm") as f:
        rows = f.read().splitlines()[1:]
    L.say(f"{len(rows)} SysV segments visible")
    foreign = [r for r in rows if int(r.split()[0]) != key]
    if foreign:
        L.escaped("host SysV segments visible", f"{len(foreign)}")
    else:
        L.blocked("host SysV segments", "none visible")
except OSError as e:
    L.blocked("/proc/sysvipc/shm", L.ename(e))
try:
    with open(f"/dev/shm/{L.T['PWNED']}", "w") as f:
        f.write("x")
    L.say("wrote /dev/shm file (the host must not see it)")
except OSError as e:
    L.blocked("/dev/shm write", L.ename(e))
