# Tries: with --apply, point the host repository's .git/commondir at a directory
# of the command's making whose config sets core.fsmonitor: the host's next
# `git status` runs it. Only a default-allowed `mkdir` and `printf >` are needed.
# Stops it: the change-set policy holds .git/commondir (git metadata outside the
# safe set) for a person, so nothing of the run is applied; the runner runs host
# git and looks at a canary.
. ./escape_lib.sh
start ret_git_commondir
mkdir -p evil/objects evil/refs/heads
printf 'ref: refs/heads/main\n' > evil/HEAD
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "echo pwned-commondir > %s"\n' "$GIT_CANARY" > evil/config
printf '../evil\n' > .git/commondir && echo "wrote .git/commondir in the run's layer"
blocked "host git obeys a planted commondir" "judged by the runner with host git"
