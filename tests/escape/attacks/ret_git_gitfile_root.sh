# Tries: in a workspace that is not a repository, create a `.git` FILE
# (`gitdir: evil`) and a repository `evil` whose config sets core.fsmonitor,
# then --apply: the host's `git status` in the workspace runs the command.
# Stops it: a new `.git` at any depth needs a person; nothing is applied.
. ./escape_lib.sh
start ret_git_gitfile_root
mkdir -p evil/objects evil/refs/heads
printf 'ref: refs/heads/main\n' > evil/HEAD
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "echo pwned-gitfile > %s"\n' "$GIT_CANARY" > evil/config
printf 'gitdir: evil\n' > .git && echo "wrote a gitfile in the run's layer"
blocked "host git obeys a planted gitfile" "judged by the runner with host git"
