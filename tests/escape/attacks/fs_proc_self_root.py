# Tries: reach host files through /proc/self/root, /proc/self/cwd and
# /proc/thread-self/root. Stops it: these are the sandbox's own root and cwd.
import escape_lib as L

L.start()
for base in ("/proc/self/root", "/proc/thread-self/root", "/proc/self/cwd/" + "../" * 12):
    for key in ("CANARY_HOME", "CANARY_TMP"):
        L.try_read(f"{base} {key}", base.rstrip("/") + L.T[key])
