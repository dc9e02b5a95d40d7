# Tries: write .git/info/attributes, info/exclude and info/sparse-checkout of
# the host repository with --apply (attributes select filter and diff drivers,
# exclude hides files from the user's review).
# Stops it: .git/info/ is outside the safe set: held for a person.
. ./escape_lib.sh
start ret_git_info
mkdir -p .git/info
printf '* filter=evil diff=evil\n' > .git/info/attributes
printf '*.py\n' >> .git/info/exclude
printf '/*\n' > .git/info/sparse-checkout
echo "wrote .git/info/* in the run's layer"
blocked "plant .git/info" "judged by the runner on the host"
