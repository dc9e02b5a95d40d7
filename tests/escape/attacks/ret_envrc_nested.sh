# Tries: with --apply, write `svc/bin/git` in a checkout whose svc/.envrc,
# allowed by the user's direnv, says `PATH_add bin`, which puts svc/bin first
# on PATH in a shell in svc. The path is on no list of held names, and the
# workspace root's .envrc does not name it.
# Stops it: the .envrc files in the directories of a set's changes are read
# on the host when the set is judged (builtin.envrc_named); the runner runs
# `direnv exec svc git status` with host git and looks at a canary.
. ./escape_lib.sh
start ret_envrc_nested
mkdir -p svc/bin
printf '#!/bin/sh\necho pwned-envrc-nested > %s\nexec /usr/bin/git "$@"\n' "$GIT_CANARY" > svc/bin/git
chmod +x svc/bin/git
echo "wrote svc/bin/git in the run's layer"
blocked "a direnv shell in svc runs what svc/.envrc puts on PATH" "judged by the runner with direnv and host git"
