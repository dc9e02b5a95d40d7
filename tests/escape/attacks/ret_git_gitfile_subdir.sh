# Tries: inside a host repository, plant `sub/.git` as a gitfile pointing at a
# repository of the command's making (fsmonitor in its config), then --apply: a
# user's `git status` in sub/ runs it.
# Stops it: a new `.git` at any depth needs a person.
. ./escape_lib.sh
start ret_git_gitfile_subdir
mkdir -p sub/code .cache/r/objects .cache/r/refs/heads
echo 'print(1)' > sub/code/main.py
printf 'ref: refs/heads/main\n' > .cache/r/HEAD
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "echo pwned-subgitfile > %s"\n' "$GIT_CANARY" > .cache/r/config
printf 'gitdir: ../.cache/r\n' > sub/.git && echo "wrote sub/.git in the run's layer"
blocked "host git obeys a gitfile in a subdirectory" "judged by the runner with host git"
