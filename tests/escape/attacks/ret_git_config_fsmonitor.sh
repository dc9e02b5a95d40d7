# Tries: append core.fsmonitor to the host repository's .git/config with
# --apply, and replace .git/description and .git/hooks (protected, and git
# metadata outside the safe set).
# Stops it: .git/config and .git/hooks are denied (workspace.protect), the rest
# is held for a person; the runner runs host git and looks at a canary.
. ./escape_lib.sh
start ret_git_config_fsmonitor
printf '[core]\n\tfsmonitor = "echo pwned-config > %s"\n' "$GIT_CANARY" >> .git/config
echo 'evil' > .git/description
mkdir -p .git/hooks && printf '#!/bin/sh\necho pwned > %s\n' "$GIT_CANARY" > .git/hooks/post-checkout
echo "wrote .git/config in the run's layer"
blocked "host git obeys an appended core.fsmonitor" "judged by the runner with host git"
