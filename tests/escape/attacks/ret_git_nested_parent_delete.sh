# Tries: with --apply, delete a directory that holds a nested repository
# (vendor/ with vendor/lib/.git). The change set lists one deletion,
# `vendor`; applied, every commit of vendor/lib that was never pushed is gone.
# Stops it: the change-set policy looks below a deleted directory on the host
# for a `.git` (bounded in depth and size) and holds the deletion for a person
# (builtin.git_history); the runner compares vendor/lib/.git before and after.
. ./escape_lib.sh
start ret_git_nested_parent_delete
python3 -c 'import shutil; shutil.rmtree("vendor")'
[ -e vendor ] || echo "vendor and its repository are gone inside the sandbox"
blocked "delete a nested repository through its parent with --apply" "judged by the runner: vendor/lib/.git unchanged on the host"
