# Tries: with --apply, commit files the return path holds for a person (a CI
# workflow, a direnv `.envrc`), delete them from the work tree and put the
# index back as it was: the change set then holds no such file and an index
# the host already had, only git's objects and a moved branch. The host
# user's `git reset --hard` writes the commit's files into the workspace.
# Stops it: the change-set policy reads each commit the run wrote (its new
# trees) and judges every file it names as the work-tree write it can become,
# unless the resulting work tree already holds that content
# (builtin.git_commit, a person); the runner runs `git reset --hard` on the
# host and looks for the files.
. ./escape_lib.sh
start ret_git_commit_held
mkdir -p .github/workflows
printf 'on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps: [{run: "echo pwned"}]\n' > .github/workflows/x.yml
printf 'echo pwned-envrc\n' > .envrc
git add .github/workflows/x.yml .envrc
git -c user.name=a -c user.email=a@a commit -q -m "add files"
rm -f .envrc .github/workflows/x.yml && rmdir .github/workflows .github
git read-tree HEAD~1
git cat-file -p HEAD^{tree} | grep -q envrc && echo "HEAD's tree has .envrc and a workflow; the work tree and the index do not"
blocked "commit held files, then delete them: host git reset --hard writes them" "judged by the runner with host git"
