# Tries: with --apply in overlay mode, replace the active policy file
# (airlock.toml in the workspace) by one that allows everything.
# Stops it: airlock's own files are denied by the change-set policy, always.
from escape_lib import *

start("ret_policy_apply")
with open("airlock.toml", "w") as f:
    f.write('[workspace]\nmode = "rw"\n[network]\nmode = "open"\n[commands]\nallow = ["*"]\n')
print("rewrote airlock.toml inside")
blocked("rewrite the active policy file through --apply", "judged by the runner on the host")
