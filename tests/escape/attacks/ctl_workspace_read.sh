# Control: the workspace is readable at its real absolute path, and is the cwd.
. ./escape_lib.sh
echo CONTROL-START
[ "$(pwd)" = "$WS" ] || { echo "cwd is $(pwd), not $WS"; exit 1; }
tok=$(cat "$WS/readme.txt") || exit 1
case "$tok" in workspace-token-"$MARKER") control_ok "read $tok";; *) echo "unexpected: $tok"; exit 1;; esac
