#!/usr/bin/env bash
# An OCI helper killed outright (SIGKILL) in the middle of a run, with crun,
# with runc and on gVisor (runsc): what it started must not outlive it, its stage directory and owner
# file must go with the next run, and that run must not wait on anything the
# killed one left in its cgroup slot (a group below the slot made every later
# teardown of the slot wait out its 10 s timeout).
#
# What ends the command differs: crun's container and gVisor's sandbox
# (`runsc run` attached) end with the runtime process; runc's container lives
# on in the slot, and only the caller's sweep of slots no run holds
# (CgroupHost::empty_stray_slots) ends it. With the sweep disabled the runc
# case fails and the crun and gVisor cases still pass; all three guard the
# property, whatever provides it.
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
for r in crun runc runsc; do command -v "$r" >/dev/null || need+=("$r"); done
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
# The command, found by its one-off argument: a host process under crun and
# runc. Under gVisor it is a guest process, which `runsc ps` lists (run in the
# helper's mount namespace, where the stage's runsc state lives); what stands
# for it on the host is every process naming the run's stage (runsc, its gofer
# and sandbox) and the ptrace platform's stubs, all in the run's cgroup slot.
command_pids() { pgrep -f '^sleep 3\.0107$'; }
guest_runs() { # helper pid, stage directory
  local cid
  cid=$(nsenter -t "$1" -m runsc --root "$2/state" list 2>/dev/null | awk 'NR > 1 { print $1 }')
  [ -n "$cid" ] && nsenter -t "$1" -m runsc --root "$2/state" ps "$cid" 2>/dev/null | grep -qw sleep
}
slot_members() { cat /sys/fs/cgroup/pids/airlock/slot-*/cgroup.procs 2>/dev/null; }
# What of a run is still alive on the host: the command itself, or under
# gVisor anything naming its stage and anything in a cgroup slot.
alive() { # backend, stage directory
  if [ "$1" = gvisor ]; then
    { [ -n "$2" ] && pgrep -f "$(basename "$2")"; slot_members; } | sort -u
  else
    command_pids
  fi
}

killed_helper() { # backend, then the OCI runtime for --backend oci
  local backend=$1 rt=${2:-}
  local name=${rt:-$backend}
  [ -n "$rt" ] && export AIRLOCK_OCI_RUNTIME=$rt
  (cd "$ws" && exec "$bin" run --backend "$backend" -- sleep 3.0107) >/dev/null 2>&1 &
  local caller=$! owner= helper= ran=
  # Killed once the command runs, so that the check is about a live container.
  for _ in $(seq 200); do
    owner=$(ls /run/airlock-oci/*.owner 2>/dev/null | head -1)
    helper=$(pgrep -P "$caller" | head -1)
    if [ -n "$owner" ] && [ -n "$helper" ]; then
      if [ "$backend" = gvisor ]; then
        guest_runs "$helper" "${owner%.owner}" && ran=yes
      else
        command_pids >/dev/null && ran=yes
      fi
    fi
    [ -n "$ran" ] && break
    sleep 0.05
  done
  check "$name: the command ran (helper ${helper:-none})" test -n "$ran"
  [ -n "$helper" ] && kill -9 "$helper"
  wait "$caller" 2>/dev/null
  # Watched for the command's own 3 s: nothing of it may come back to life.
  local left=${owner%.owner} seen=
  for _ in $(seq 35); do
    seen+=$(alive "$backend" "$left" | tr '\n' ' ')
    sleep 0.1
  done
  check "$name: the killed helper's command died with its run (seen after: ${seen:-none})" test -z "$seen"
  check "$name: a killed helper left its stage (${left:-no owner file found})" test -n "$owner" -a -d "$left"
  local t0=$SECONDS
  (cd "$ws" && "$bin" run --backend "$backend" -- true) >/dev/null 2>&1
  check "$name: the next run swept the killed helper's stage and owner file" test -n "$owner" -a ! -e "$left" -a ! -e "$owner"
  check "$name: the next run took under 5 s ($((SECONDS - t0)) s)" test $((SECONDS - t0)) -lt 5
  local below
  below=$(find /sys/fs/cgroup/pids/airlock -mindepth 2 -type d -path '*/slot-*/*' 2>/dev/null | head -3)
  check "$name: no group is left below a cgroup slot (${below:-none})" test -z "$below"
  unset AIRLOCK_OCI_RUNTIME
}

killed_helper oci crun
killed_helper oci runc
killed_helper gvisor
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
