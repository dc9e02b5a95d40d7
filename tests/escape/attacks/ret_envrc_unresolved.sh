# Tries: with --apply, write `tools/git` in a checkout whose .envrc, allowed
# by the user's direnv, says `PATH_add "$(git rev-parse --show-toplevel)/tools"`.
# The gate reads the .envrc but cannot run the command substitution, so it
# cannot name tools/; a shell with direnv hooked in puts tools/ first on PATH on
# entering the directory, and the user's next `git status` runs the planted
# tools/git.
# Stops it: a directive whose path goes through an expansion the gate does not
# follow may name any path, so every change of the set needs a person
# (builtin.envrc_named, saying to write the path out); the runner runs
# `direnv exec` with host git and looks at a canary.
. ./escape_lib.sh
start ret_envrc_unresolved
mkdir -p tools
printf '#!/bin/sh\necho pwned-envrc-unresolved > %s\nexec /usr/bin/git "$@"\n' "$GIT_CANARY" > tools/git
chmod +x tools/git
echo "wrote tools/git in the run's layer"
blocked "a direnv shell runs a work-tree file an unresolvable .envrc path puts on PATH" "judged by the runner with direnv and host git"
