# Tries: read and write airlock's state directory (the audit log, approvals,
# grants) through a policy whose `filesystem.write` holds it: a read-write
# bind of the state dir's parent (a write path naming the state dir itself,
# or one inside it, is refused before anything runs: state_ws_inside_state_dir).
# The runner puts the state dir at
# <workspace>/.local/state/airlock and runs one command first, so the audit
# log there holds records.
# Stops it: the state dir is hidden (an empty mount) last, over every bind
# that would show it: the workspace, a read or write path, a grant.
. ./escape_lib.sh
start sec_state_write_path
d=.local/state/airlock
# Shell globs, not ls: a failed ls (statx rejected under gVisor) must not read as empty.
left=$(cd "$d" 2>/dev/null && for f in * .[!.]* ..?*; do [ -e "$f" ] && printf '%s ' "$f"; done)
if [ -n "$left" ]; then escaped "list the state dir in the workspace" "$left"; else blocked "list the state dir in the workspace" "empty or absent"; fi
if cat "$d"/audit/* >/dev/null 2>&1; then escaped "read the audit log in the workspace" "readable"; else blocked "read the audit log in the workspace" "not readable"; fi
if (echo pwned > "$d/audit/$PWNED") 2>/dev/null && [ -e "$d/audit/$PWNED" ]; then echo "wrote into the state dir view (the host copy is what counts)"; else blocked "write into the state dir" "refused"; fi
