# Tries: with --apply, make the ordinary directory src/ a bare repository (HEAD,
# refs, objects borrowing the real ones through alternates, a config with
# diff.external): no name is `.git`, so no git-metadata rule matches. Any git
# command the user runs inside src/ obeys that config; `git diff` runs the
# external diff command.
# Stops it: the change-set policy holds a change inside a directory that would
# look like a git repository (builtin.git_dir_lookalike) for a person, so none
# of the set is applied; the runner runs `git diff` in src/ and looks at a canary.
. ./escape_lib.sh
start ret_git_bare_subdir
head=$(git rev-parse HEAD)
mkdir -p src/objects/info src/refs/heads
echo '../../.git/objects' > src/objects/info/alternates
echo "$head" > src/refs/heads/main
echo 'ref: refs/heads/main' > src/HEAD
printf '[core]\n\tbare = true\n[diff]\n\texternal = "sh -c \\"echo pwned-bare > %s\\""\n' "$GIT_CANARY" > src/config
GIT_DIR=src git rev-parse --is-bare-repository 2>/dev/null | grep -q true && echo "src/ reads as a bare repository"
blocked "host git in src/ obeys a planted bare repository's config" "judged by the runner with host git"
