# Tries: read airlock's own state directory from inside: the audit log (every
# earlier command and its output), approvals, grants and other runs' overlay
# layers. Stops it: the state directory is not in the sandbox's view.
. ./escape_lib.sh
start sec_state_dir
for p in "$STATE_DIR" "$STATE_DIR/audit" "$STATE_DIR/runs" /var/lib/airlock /run/airlock; do
  if ls "$p" >/dev/null 2>&1; then escaped "list $p" "$(ls "$p" 2>&1 | head -5 | tr '\n' ' ')"; else blocked "list $p" "not visible"; fi
done
if cat "$STATE_DIR"/audit/* >/dev/null 2>&1; then escaped "read the audit log" "readable"; else blocked "read the audit log" "not visible"; fi
