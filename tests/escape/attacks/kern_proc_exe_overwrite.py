# Tries: the runc CVE-2019-5736 class: open /proc/1/exe (airlock's own binary on
# the host, as PID 1 is the helper) and /proc/self/exe for writing, directly and
# by re-opening an O_PATH fd through /proc/self/fd. Nothing is written: an open
# for writing that succeeds is the escape (the runner also hashes the binary).
# Stops it: the binary is on a read-only mount, ETXTBSY, no write access.
import os
import escape_lib as L

L.start()
for target in ("/proc/1/exe", "/proc/self/exe", "/proc/%d/exe" % os.getppid()):
    if L.HOST_MODE and target == "/proc/1/exe":
        target = "/proc/self/exe"  # host pid 1 is the VM's init
    try:
        fd = os.open(target, os.O_WRONLY)
        os.close(fd)
        L.escaped(f"open {target} for writing", "opened")
    except OSError as e:
        L.blocked(f"open {target} for writing", L.ename(e))
    try:
        p = os.open(target, os.O_PATH)
        fd = os.open(f"/proc/self/fd/{p}", os.O_WRONLY)
        os.close(fd)
        L.escaped(f"reopen {target} O_PATH for writing", "opened")
    except OSError as e:
        L.blocked(f"reopen {target} O_PATH for writing", L.ename(e))
if L.T.get("AIRLOCK_BIN"):
    try:
        fd = os.open(L.T["AIRLOCK_BIN"], os.O_WRONLY)
        os.close(fd)
        L.escaped("open the airlock binary by path for writing", "opened")
    except OSError as e:
        L.blocked("open the airlock binary by path for writing", L.ename(e))
