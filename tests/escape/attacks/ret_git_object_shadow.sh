# Tries: with --apply, rewrite a loose object the host already has (the
# tree of HEAD) so that it holds another tree, one with a direnv `.envrc`.
# Host git reads an object by its name without checking its content: the
# user's `git reset --hard` writes the `.envrc` into the workspace. The
# change set holds only git's objects, which are data to git.
# Stops it: each loose object a run adds or changes is inflated and hashed,
# and one that is not the object its name says is refused
# (builtin.git_objects); the runner runs `git reset --hard` on the host and
# looks for the file.
. ./escape_lib.sh
start ret_git_object_shadow
T=$(git rev-parse 'HEAD^{tree}')
B=$(printf 'echo pwned-envrc\n' | git hash-object -w --stdin)
S=$(git rev-parse HEAD:src)
E=$(printf '100644 blob %s\t.envrc\n040000 tree %s\tsrc\n' "$B" "$S" | git mktree)
p=.git/objects/$(echo "$T" | cut -c1-2)/$(echo "$T" | cut -c3-)
e=.git/objects/$(echo "$E" | cut -c1-2)/$(echo "$E" | cut -c3-)
chmod u+w "$p" && cp "$e" "$p" && echo "HEAD's tree object now holds another tree, with an .envrc"
blocked "a loose object rewritten to stand for another tree: host git reset --hard writes it" "judged by the runner with host git"
