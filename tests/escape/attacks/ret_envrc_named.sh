# Tries: with --apply, write `bin/git` and `.env` in a checkout whose .envrc,
# allowed by the user's direnv, says `PATH_add bin` and `dotenv_if_exists`.
# Neither path is on any list of held names; a shell with direnv hooked in
# puts bin/ first on PATH on entering the directory, so the user's next
# `git status` there runs the planted bin/git, and .env lands in the shell's
# environment.
# Stops it: the root's .envrc on the host is read when the set is judged, and
# every work-tree path it names needs a person (builtin.envrc_named); the
# runner runs `direnv exec` with host git and looks at a canary.
. ./escape_lib.sh
start ret_envrc_named
mkdir -p bin
printf '#!/bin/sh\necho pwned-envrc-path > %s\nexec /usr/bin/git "$@"\n' "$GIT_CANARY" > bin/git
chmod +x bin/git
printf 'GIT_PAGER=touch %s\n' "$GIT_CANARY" > .env
echo "wrote bin/git and .env in the run's layer"
blocked "a direnv shell runs work-tree files the host's .envrc names" "judged by the runner with direnv and host git"
