# Tries: with --apply, rewrite ordinary work-tree files that the repository's
# own .git/config runs: the pre-commit hook in `.hooks/` (core.hooksPath) and
# the clean filter's script `scripts/clean.sh` (filter.strip.clean, for *.dat).
# Neither path is on any list of held names; the user's next `git add` runs
# the filter and `git commit` the hook.
# Stops it: the host's git configuration is read when the set is judged, and
# every work-tree path it names needs a person (builtin.git_config_named); the
# runner runs host git and looks at a canary.
. ./escape_lib.sh
start ret_git_config_named
mkdir -p .hooks
printf '#!/bin/sh\necho pwned-hookspath > %s\n' "$GIT_CANARY" > .hooks/pre-commit
chmod +x .hooks/pre-commit
printf '#!/bin/sh\necho pwned-filter > %s\ncat\n' "$GIT_CANARY" > scripts/clean.sh
echo two >> x.dat
echo "wrote .hooks/pre-commit and scripts/clean.sh in the run's layer"
blocked "host git runs work-tree files its config names" "judged by the runner with host git"
