# Tries: write, delete and chmod in a read-only workspace (workspace.mode = ro).
# Stops it: the workspace is mounted read-only. The runner checks the host copy.
. ./escape_lib.sh
start fs_ro_workspace
if (echo pwned > new.txt) 2>/dev/null; then escaped "create in ro workspace" "created"; else blocked "create in ro workspace" "refused"; fi
if (echo pwned >> readme.txt) 2>/dev/null; then escaped "append in ro workspace" "appended"; else blocked "append in ro workspace" "refused"; fi
if rm -f targets.env 2>/dev/null && [ ! -e targets.env ]; then escaped "delete in ro workspace" "deleted"; else blocked "delete in ro workspace" "refused"; fi
if chmod 777 readme.txt 2>/dev/null; then escaped "chmod in ro workspace" "changed"; else blocked "chmod in ro workspace" "refused"; fi
