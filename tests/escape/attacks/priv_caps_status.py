# Tries: nothing; it looks at what the command was given: every capability set
# (inheritable, permitted, effective, bounding, ambient) must be empty,
# no_new_privs set and a seccomp filter in force.
import escape_lib as L

L.start()
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
    v = status.get(k, "").strip()
    if int(v or "1", 16) != 0:
        L.escaped(k, v)
    else:
        L.blocked(k, "empty")
if status.get("NoNewPrivs", "").strip() != "1":
    L.escaped("NoNewPrivs", status.get("NoNewPrivs", "?").strip())
else:
    L.blocked("NoNewPrivs", "set")
if status.get("Seccomp", "").strip() != "2":
    L.escaped("Seccomp", "mode " + status.get("Seccomp", "?").strip())
else:
    L.blocked("Seccomp", "filter mode")
uid_map = open("/proc/self/uid_map").read().split()
caller = L.T.get("CALLER_UID", "0")
if uid_map[:2] == ["0", "0"] and caller != "0" and not L.HOST_MODE:
    # Rootless mode: the command's user namespace is nested in the helper's,
    # whose root is the (unprivileged) caller, so the map reads "0 0 1" relative
    # to that parent. Host root is out of reach: the runner is uid `caller`, and
    # 47-rootless.sh checks that files written inside land owned by the caller.
    L.blocked("uid_map", f"{uid_map[:3]} in a namespace nested in the caller's (uid {caller})")
elif uid_map[:2] == ["0", "0"]:
    L.escaped("uid_map", f"root inside is host root: {uid_map}")
else:
    L.blocked("uid_map", f"{uid_map[:3]}")
