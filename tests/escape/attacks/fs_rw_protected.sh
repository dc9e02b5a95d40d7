# Tries: in workspace mode rw, write the protected paths .git/hooks and
# .git/config, and replace the directory by a renamed copy with a hook in it.
# Stops it: rw is the overlay plus an automatic apply through the change-set
# policy (issue 11): protected paths are denied, other git metadata is held for
# a person (so nothing of this run reaches the host). The writes inside land in
# the run's own layer; what counts is the host copy, which the runner compares
# (protected_unchanged, host_ws_absent). ctl_rw_write shows that an ordinary rw
# write still arrives.
. ./escape_lib.sh
start fs_rw_protected
if (printf '#!/bin/sh\necho pwned\n' > .git/hooks/pre-commit) 2>/dev/null; then echo "pre-commit written in the run's layer"; else blocked "write .git/hooks/pre-commit" "refused inside"; fi
if (echo "[core] hooksPath = /tmp" >> .git/config) 2>/dev/null; then echo ".git/config appended in the run's layer"; else blocked "append .git/config" "refused inside"; fi
if mv .git/hooks .git/hooks.old 2>/dev/null; then echo "renamed .git/hooks in the run's layer"; mkdir -p .git/hooks; echo pwned > .git/hooks/pre-commit; else blocked "rename .git/hooks" "refused inside"; fi
rm -rf .git/hooks 2>/dev/null
echo fine > allowed.txt
blocked "protected paths reach the host in rw mode" "judged by the runner on the host"
