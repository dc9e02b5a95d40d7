#!/usr/bin/env bash
# The native sandbox as a user meets it: `airlock doctor` on this host, then the
# README's main command. (The layer-by-layer tests run with the Rust tests.)
set -uo pipefail
cargo build -q -p airlock --locked || exit 1
bin=$PWD/target/debug/airlock
state=$(mktemp -d)
ws=$(mktemp -d)
trap 'rm -rf "$state" "$ws"' EXIT
pass=0 fail=0
check() { # name, then a command that must succeed
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "ok   $name"; else fail=$((fail + 1)); echo "FAIL $name"; fi
}
export AIRLOCK_STATE_DIR=$state
check "doctor: every layer enforceable" "$bin" doctor
out=$(cd "$ws" && "$bin" run -- python3 -c 'print("hello from the sandbox")')
check "run: python3 prints from the sandbox" test "$out" = "hello from the sandbox"
out=$(cd "$ws" && "$bin" run -- python3 -c 'print(" ".join(open("/proc/self/uid_map").read().split()))')
check "run: root inside maps to host uid 2000000000" test "$out" = "0 2000000000 1"
(cd "$ws" && "$bin" run -- sudo true >/dev/null 2>&1); rc=$?
check "run: gate refusal exits 77" test "$rc" = 77
check "runs dir empty after the runs" test -z "$(ls -A "$state/runs" 2>/dev/null)"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
