# Tries: create a whole repository directory `sub/.git/` (HEAD, objects, refs,
# config with core.fsmonitor) below the workspace, then --apply: `git status`
# in sub/ runs the command.
# Stops it: a new `.git` directory at any depth, and everything below it outside
# the safe set, needs a person.
. ./escape_lib.sh
start ret_git_nested_repo
mkdir -p sub/.git/objects sub/.git/refs/heads
printf 'ref: refs/heads/main\n' > sub/.git/HEAD
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "echo pwned-nested > %s"\n' "$GIT_CANARY" > sub/.git/config
echo "wrote sub/.git/ in the run's layer"
blocked "host git obeys a nested repository's config" "judged by the runner with host git"
