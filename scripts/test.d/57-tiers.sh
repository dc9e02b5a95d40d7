#!/usr/bin/env bash
# The OCI and gVisor backends as a user meets them: the runtimes installed from
# Debian's packages (idempotent), `airlock run --backend oci` (crun) and
# `--backend gvisor` (runsc) smoke checks (output, exit codes, changes and
# --apply, network none, limits, refusals), then the escape corpus on each
# (tiers/oci.toml, tiers/gvisor.toml list the cases that do not apply, with the
# reason).
#   TIERS_ESCAPE=0     skip the corpora
#   TIERS_GVISOR=0     skip gVisor (slow: its ptrace platform costs ~0.2-0.4 s a run)
#   TIERS_GVISOR_CORPUS=1  also run the escape corpus on gVisor. Not by default yet:
#                      with this runsc (2022) 12 cases still fail (docs/tiers.md lists
#                      them); the gVisor backend stays open work until they pass.
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then
  echo "the oci and gvisor backends run as root; skipped as uid $(id -u)"
  exit 0
fi
need=()
command -v crun >/dev/null || need+=(crun)
command -v runsc >/dev/null || need+=(runsc)
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null || exit 1
fi
CARGO_INCREMENTAL=0 cargo build -q -p airlock --locked || exit 1
bin=$PWD/target/debug/airlock
state=$(mktemp -d)
ws=$(mktemp -d)
trap 'rm -rf "$state" "$ws"' EXIT
export AIRLOCK_STATE_DIR=$state
pass=0 fail=0
check() { # name, then a command that must succeed
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "ok   $name"; else fail=$((fail + 1)); echo "FAIL $name"; return 1; fi
}
field() { python3 -c "import json,sys; print(json.load(sys.stdin).get('$1'))"; }

smoke() { # backend
  local b=$1
  run() { (cd "$ws" && "$bin" run --backend "$b" "$@"); }
  rm -rf "$ws"/* "$ws"/.[!.]* 2>/dev/null
  cat > "$ws/airlock.toml" <<'TOML'
[workspace]
root = "."
[commands]
allow = ["sh", "echo", "cat", "python3", "true", "false", "sleep"]
[limits]
timeout = "5s"
memory = "256MiB"
pids = 64
output = "4KiB"
TOML
  echo hello > "$ws/in.txt"
  check "$b: doctor --backend $b is available" "$bin" doctor --backend "$b"
  out=$(run -- cat in.txt)
  check "$b: a command runs and reads the workspace" test "$out" = hello
  out=$(run --json -- python3 -c 'raise SystemExit(7)')
  check "$b: the exit code comes back" test "$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["exit_code"])')" = 7 || echo "$out"
  out=$(run --json -- python3 -c 'open("new.txt","w").write("x"); import os; os.remove("in.txt")')
  check "$b: changes are reported (added and deleted)" test "$(echo "$out" | python3 -c 'import json,sys; print(sorted(c["kind"] for c in json.load(sys.stdin)["changes"]))')" = "['added', 'deleted']"
  check "$b: overlay: the host workspace is unchanged" test -f "$ws/in.txt" -a ! -e "$ws/new.txt"
  run --apply -- sh -c 'echo y > kept.txt' >/dev/null 2>&1
  check "$b: --apply copies the change back" test "$(cat "$ws/kept.txt" 2>/dev/null)" = y
  out=$(run -- python3 -c 'print(sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]))' 2>&1)
  check "$b: network none: loopback only ($out)" test "$out" = "['lo']"
  out=$(run -- python3 -c 'import os; print(os.getuid(), open("/proc/self/status").read().split("CapEff:")[1].split()[0])' 2>&1)
  check "$b: root inside, no capabilities ($out)" test "$out" = "0 0000000000000000"
  out=$(run --json -- sh -c 'sleep 30')
  check "$b: the timeout kills the run" test "$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["killed_by"])')" = timeout
  out=$(run --json -- python3 -c 'x = bytearray(400 << 20); print(len(x))')
  check "$b: memory beyond limits.memory ends the run as memory" test "$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["killed_by"])')" = memory
  out=$(run --json -- python3 -c 'print("y" * 100000)')
  check "$b: output beyond limits.output is cut and killed" test "$(echo "$out" | python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["truncated"])')" = True
  out=$(run -- python3 -c 'import os; print(os.path.exists("/etc/shadow"), os.path.exists("/etc/ssh"), os.path.exists("/var/lib"))' 2>&1)
  check "$b: host secrets are not in the view ($out)" test "$out" = "False False False"
  ls /run/airlock/oci 2>/dev/null | grep -q . && fail=$((fail + 1)) && echo "FAIL $b: a run's stage was left behind"
}

smoke oci
[ "${TIERS_GVISOR:-1}" = 1 ] && smoke gvisor
echo "$pass passed, $fail failed"
status=0
[ "$fail" = 0 ] || status=1
if [ "${TIERS_ESCAPE:-1}" = 1 ]; then
  mkdir -p target/escape
  python3 tests/escape/run.py --airlock "$bin" --backend-tier oci \
    --report target/escape/report-oci.json ${ESCAPE_ARGS:-} || status=1
  if [ "${TIERS_GVISOR:-1}" = 1 ] && [ "${TIERS_GVISOR_CORPUS:-0}" = 1 ]; then
    python3 tests/escape/run.py --airlock "$bin" --backend-tier gvisor \
      --report target/escape/report-gvisor.json ${ESCAPE_ARGS:-} || status=1
  else
    echo "NOT RUN: the escape corpus on gVisor (12 known failures with this runsc, see docs/tiers.md; TIERS_GVISOR_CORPUS=1 runs it)"
  fi
fi
exit $status
