# Tries: with --apply, deliver a bare-repository lookalike inside a commit
# rather than in the work tree: on a new branch, commit fix/HEAD, fix/refs,
# fix/objects/info/alternates (borrowing the real objects) and a fix/config
# with diff.external, then switch back to main. The change set then holds
# only git's objects, a new branch and logs; each committed file, judged
# alone against the work tree, looks ordinary. The user's merge of the
# branch writes fix/, and any git command run inside it obeys that config.
# Stops it: a committed file named HEAD or commondir outside `.git` needs a
# person, and the commit's other files are judged against the work tree the
# commit produces, where fix/ looks like a repository (builtin.git_commit),
# which holds the whole set; the runner merges the branch with host git and
# runs `git diff` in fix/, then looks at a canary.
. ./escape_lib.sh
start ret_commit_bare_lookalike
head=$(git rev-parse HEAD)
git checkout -q -b feature
mkdir -p fix/objects/info fix/refs/heads
echo '../../.git/objects' > fix/objects/info/alternates
echo "$head" > fix/refs/heads/main
echo 'ref: refs/heads/main' > fix/HEAD
printf '[core]\n\tbare = true\n[diff]\n\texternal = "sh -c \\"echo pwned-commit-bare > %s\\""\n' "$GIT_CANARY" > fix/config
git add fix
git -c user.name=a -c user.email=a@a commit -q -m "add test fixture"
git checkout -q main
test -e fix/HEAD || echo "fix/ is only in the commit on branch feature; the work tree is main's"
blocked "a bare-repository lookalike committed on a branch: host git in fix/ after a merge" "judged by the runner with host git"
