# Tries: plant a submodule: `.git/modules/lib/` with a config that sets
# core.fsmonitor, and `lib/.git` (gitdir: ../.git/modules/lib), then --apply: a
# `git status` in lib/ runs the command.
# Stops it: .git/modules/ and a new `.git` need a person.
. ./escape_lib.sh
start ret_git_modules_config
mkdir -p .git/modules/lib/objects .git/modules/lib/refs/heads lib
printf 'ref: refs/heads/main\n' > .git/modules/lib/HEAD
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ../../../lib\n\tfsmonitor = "echo pwned-modules > %s"\n' "$GIT_CANARY" > .git/modules/lib/config
printf 'gitdir: ../.git/modules/lib\n' > lib/.git
printf '[submodule "lib"]\n\tpath = lib\n\turl = ./lib\n' > .gitmodules
echo "wrote a submodule in the run's layer"
blocked "host git obeys a planted submodule config" "judged by the runner with host git"
