# Tries: in workspace mode rw (write-through), write the protected paths
# .git/hooks and .git/config directly, and replace the directory by a symlink.
# Stops it: workspace.protect paths stay read-only (bind-mounted over) in rw mode.
. ./escape_lib.sh
start fs_rw_protected
if (printf '#!/bin/sh\necho pwned\n' > .git/hooks/pre-commit) 2>/dev/null; then escaped "write .git/hooks/pre-commit" "written through"; else blocked "write .git/hooks/pre-commit" "refused"; fi
if (echo "[core] hooksPath = /tmp" >> .git/config) 2>/dev/null; then escaped "append .git/config" "written through"; else blocked "append .git/config" "refused"; fi
if mv .git/hooks .git/hooks.old 2>/dev/null; then escaped "rename .git/hooks" "renamed"; mkdir -p .git/hooks; echo pwned > .git/hooks/pre-commit; else blocked "rename .git/hooks" "refused"; fi
if rm -rf .git/hooks 2>/dev/null && [ ! -e .git/hooks ]; then escaped "remove .git/hooks" "removed"; else blocked "remove .git/hooks" "refused"; fi
echo fine > allowed.txt && echo "rw write of an ordinary file works"
