# Tries: plant symlinks in the workspace that point at the host canaries (and at
# /) and read through them. Stops it: a symlink is resolved inside the sandbox's
# own root, where those host paths do not exist.
import os
import escape_lib as L

L.start()
for key in ("CANARY_HOME", "CANARY_TMP"):
    link = f"link-{key}"
    os.symlink(L.T[key], link)
    L.try_read(f"symlink to {key}", link)
os.symlink("/", "rootlink")
for key in ("CANARY_HOME", "CANARY_TMP"):
    L.try_read(f"via rootlink {key}", "rootlink" + L.T[key])
os.symlink("../../../../../../../../..", "uplink")
L.try_read("via uplink", "uplink" + L.T["CANARY_TMP"])
