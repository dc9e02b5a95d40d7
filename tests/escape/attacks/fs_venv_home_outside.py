# Tries: workspace venvs whose pyvenv.cfg `home` names host dirs (one that does not
# exist, one whose python3 only links to the system's). The python preset shows
# the parent of a venv's home read-only, so that its interpreter's stdlib is
# there; taken as written, that is any host dir the workspace names (rootless:
# the caller's ~/.ssh). Stops it: home must hold an interpreter whose resolved
# bin dir is a Python installation's (prefix/lib/python3.*), outside the system
# directories; only that prefix is shown.
import os
import escape_lib as L

L.start()
victim = L.T["VICTIM_DIR"]
L.try_read("secret in the parent of a nonexistent home", victim + "/secret.txt")
L.try_read("secret beside a home linking to the system python", victim + "/.local/share/secrets/token")
L.attempt("list the parent of a nonexistent home", lambda: os.listdir(victim))
