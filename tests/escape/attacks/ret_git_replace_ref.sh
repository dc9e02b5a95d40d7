# Tries: with --apply, add a replace ref (`git replace`) that makes host git
# read another tree, one with a direnv `.envrc`, in place of HEAD's. Git
# obeys replace refs everywhere by default: the user's `git reset --hard`
# writes the `.envrc`. The change set holds only a ref and two new objects,
# each the object its name says.
# Stops it: a replace ref, or a packed-refs file that gains one, needs a
# person (builtin.git_objects); the runner runs `git reset --hard` on the
# host and looks for the file.
. ./escape_lib.sh
start ret_git_replace_ref
T=$(git rev-parse 'HEAD^{tree}')
B=$(printf 'echo pwned-envrc\n' | git hash-object -w --stdin)
S=$(git rev-parse HEAD:src)
E=$(printf '100644 blob %s\t.envrc\n040000 tree %s\tsrc\n' "$B" "$S" | git mktree)
git replace -f "$T" "$E" && echo "refs/replace/$T now names a tree with an .envrc"
blocked "a replace ref standing another tree in for HEAD's: host git reset --hard writes it" "judged by the runner with host git"
