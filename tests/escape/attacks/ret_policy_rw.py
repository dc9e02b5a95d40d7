# Tries: in workspace mode rw, append `[network] mode = "open"` to the active
# policy file (airlock.toml in the workspace), so that the next run has open
# network (issue 11, finding 4).
# Stops it: rw is the overlay plus an automatic apply through the change-set
# policy, which denies airlock's own files in every mode; the runner compares
# the host's policy file before and after.
from escape_lib import *

start("ret_policy_rw")
try:
    with open("airlock.toml", "a") as f:
        f.write('\n[network]\nmode = "open"\n')
    print("appended to airlock.toml inside (the host copy is what counts)")
except OSError as e:
    print(f"append refused inside: {e}")
blocked("rewrite the active policy file in rw mode", "judged by the runner on the host")
