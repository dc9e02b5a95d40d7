# Tries: with --apply, put a file where .git/objects was. No deletion shows in
# the change set, only a "modified" entry, but applying it removes the host's
# whole object store: every commit that was never pushed is gone.
# Stops it: the change-set policy treats an entry of another type in place of
# one of git's history places as their deletion (builtin.git_history, a
# person); the runner compares them on the host before and after.
. ./escape_lib.sh
start ret_git_objects_replaced
python3 -c 'import shutil; shutil.rmtree(".git/objects"); open(".git/objects", "w").write("x")'
git log >/dev/null 2>&1 || echo "the history is gone inside the sandbox"
blocked "replace .git/objects with a file through --apply" "judged by the runner: objects unchanged on the host"
