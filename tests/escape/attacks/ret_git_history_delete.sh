# Tries: with --apply, delete the repository's history: .git/objects,
# .git/refs and .git/HEAD. Nothing runs on the host, but every commit that was
# never pushed is gone, and git gc never deletes these whole.
# Stops it: the change-set policy holds the deletion of the places git keeps
# history whole for a person (builtin.git_history), and a set with a held
# change is not applied; the runner compares them on the host before and after.
. ./escape_lib.sh
start ret_git_history_delete
rm -rf .git/objects .git/refs .git/HEAD
git log >/dev/null 2>&1 || echo "the history is gone inside the sandbox"
blocked "delete the repository's history through --apply" "judged by the runner: objects, refs and HEAD unchanged on the host"
