# Tries: bring held configuration back through a symlink standing in for its
# parent directory. `.config -> cfg` with `cfg/git/config` setting
# core.fsmonitor: in a workspace that is a home directory, host git reads it
# as ~/.config/git/config and runs the monitor at the next `git status`.
# `.github -> gh` with `gh/workflows/x.yml`: a workflow. Each file is judged
# under its own path (`cfg/...`, `gh/...`, neither held), and the links
# resolve inside the workspace.
# Stops it: a symlink through which a held name would be looked up is judged
# as that name (builtin.approval), whatever its target holds now; the runner
# looks for the links on the host.
. ./escape_lib.sh
start ret_symlink_parent
mkdir -p cfg/git gh/workflows
printf '[core]\n\tfsmonitor = "touch /tmp/pwned-fsmonitor; false"\n' > cfg/git/config
printf 'on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps: [{run: "echo pwned"}]\n' > gh/workflows/x.yml
ln -s cfg .config && ln -s gh .github && echo ".config -> cfg and .github -> gh written"
blocked "held configuration through a symlinked parent directory" "judged by the runner on the host"
