# Tries: a workspace .python-version whose "version" is an absolute host path laid
# out like a Python install (bin/python3, lib/python3.*). airlock follows pyenv's
# shims on the caller's PATH to the version's prefix and shows that prefix
# read-only; a path there would show any host dir, at its real path, past its
# 0700 parent. Reads the secret beside it. Stops it: a version is only a plain
# name, and its prefix must lie under pyenv's own versions dir.
import os
import sys
import escape_lib as L

L.start()
victim = L.T["VICTIM_DIR"]
L.say(f"INFO python {sys.executable} prefix {sys.prefix}")
L.say(f"INFO PATH {os.environ.get('PATH', '')}")
L.try_read("secret beside the planted install", victim + "/.local/share/secrets/token")
L.try_read("secret in the planted install's parent", victim + "/secret.txt")
L.attempt("list the planted install", lambda: os.listdir(victim + "/.local"))
