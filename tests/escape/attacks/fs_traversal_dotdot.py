# Tries: reach the caller's $HOME and /tmp canaries with relative ../ paths from the
# workspace, and with absolute paths. Stops it: the new root (pivot_root onto a
# tmpfs) holds neither $HOME nor the host's /tmp; landlock is the second wall.
import os
import escape_lib as L

L.start()
for key in ("CANARY_HOME", "CANARY_TMP", "CANARY_SSH"):
    target = L.T[key]
    rel = os.path.relpath(target, os.getcwd())
    L.try_read(f"relative {rel}", rel)
    L.try_read(f"deep ../ {key}", "../" * 20 + target.lstrip("/"))
    L.try_read(f"absolute {key}", target)
