#!/usr/bin/env bash
# An OCI helper killed outright (SIGKILL) in the middle of a run, with crun and
# with runc: what it started must not outlive it, its stage directory and owner
# file must go with the next run, and that run must not wait on anything the
# killed one left in its cgroup slot (a group below the slot made every later
# teardown of the slot wait out its 10 s timeout).
#
# A part of its own, run alone: for an instant the killed run's container sits
# in a cgroup slot that no run holds, which an escape corpus running beside it
# would count as its own leftover. Needs root; prints `N passed, N failed` last.
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then
  echo "the oci backend runs as root; skipped as uid $(id -u)"
  exit 0
fi
need=()
for r in crun runc; do command -v "$r" >/dev/null || need+=("$r"); done
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null || exit 1
fi
CARGO_INCREMENTAL=0 cargo build -q -p airlock --locked || exit 1
bin=$PWD/target/debug/airlock
state=$(mktemp -d)
ws=$(mktemp -d)
trap 'rm -rf "$state" "$ws"' EXIT
export AIRLOCK_STATE_DIR=$state
pass=0
fail=0
check() { # name, then a command that must succeed
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "ok   $name"; else fail=$((fail + 1)); echo "FAIL $name"; return 1; fi
}
cat > "$ws/airlock.toml" <<'TOML'
[workspace]
root = "."
[commands]
allow = ["true", "sleep"]
[limits]
timeout = "10s"
TOML
# The command, found by its one-off argument.
command_pids() { pgrep -f '^sleep 3\.0107$'; }

killed_helper() { # OCI runtime
  local rt=$1
  export AIRLOCK_OCI_RUNTIME=$rt
  (cd "$ws" && exec "$bin" run --backend oci -- sleep 3.0107) >/dev/null 2>&1 &
  local caller=$! owner= helper=
  # Killed once the command runs, so that the check is about a live container.
  for _ in $(seq 200); do
    owner=$(ls /run/airlock-oci/*.owner 2>/dev/null | head -1)
    helper=$(pgrep -P "$caller" | head -1)
    [ -n "$owner" ] && [ -n "$helper" ] && command_pids >/dev/null && break
    sleep 0.05
  done
  check "$rt: the command ran (helper ${helper:-none})" command_pids >/dev/null
  [ -n "$helper" ] && kill -9 "$helper"
  wait "$caller" 2>/dev/null
  # Watched for the command's own 3 s: nothing of it may come back to life.
  local seen=
  for _ in $(seq 35); do
    seen+=$(command_pids | tr '\n' ' ')
    sleep 0.1
  done
  check "$rt: the killed helper's command died with its run (seen after: ${seen:-none})" test -z "$seen"
  local left=${owner%.owner}
  check "$rt: a killed helper left its stage (${left:-no owner file found})" test -n "$owner" -a -d "$left"
  local t0=$SECONDS
  (cd "$ws" && "$bin" run --backend oci -- true) >/dev/null 2>&1
  check "$rt: the next run swept the killed helper's stage and owner file" test -n "$owner" -a ! -e "$left" -a ! -e "$owner"
  check "$rt: the next run took under 5 s ($((SECONDS - t0)) s)" test $((SECONDS - t0)) -lt 5
  local below
  below=$(find /sys/fs/cgroup/pids/airlock -mindepth 2 -type d -path '*/slot-*/*' 2>/dev/null | head -3)
  check "$rt: no group is left below a cgroup slot (${below:-none})" test -z "$below"
}

killed_helper crun
killed_helper runc
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
