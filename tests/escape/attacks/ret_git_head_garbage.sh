# Tries: with --apply, overwrite .git/HEAD with something that is neither a
# branch nor an object name. Host git then no longer takes the directory for
# a repository (`git status`: "not a git repository"); in a checkout nested
# in another repository it would work on the outer one instead.
# Stops it: a HEAD whose content git would not accept needs a person
# (builtin.git_objects); the runner checks the host repository still works.
. ./escape_lib.sh
start ret_git_head_garbage
printf 'x\n' > .git/HEAD
echo ".git/HEAD now reads: $(cat .git/HEAD)"
blocked "a HEAD git would not accept" "judged by the runner on the host"
