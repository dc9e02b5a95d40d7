#!/usr/bin/env bash
# The microVM backend as a user meets it: scripts/setup-microvm (Debian's
# kernel, busybox and QEMU; idempotent, cached), then `airlock run --backend
# microvm` cases: output, exit code, workspace changes and --apply, network
# none, the timeout, and escape attempts judged on host state (a canary
# outside the workspace, a host secret, the host's /proc).
# Software emulation (TCG) on this kind of host: every run boots a kernel
# (5-10 s each), so the cases are few. A watchdog bounds each airlock call.
#   MICROVM_CALL_TIMEOUT=120   seconds for one airlock call (the watchdog)
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then
  echo "SKIPPED 59-microvm: the microvm backend runs as root (staging, apt); skipped as uid $(id -u)"
  exit 0
fi
if ! scripts/setup-microvm; then
  echo "SKIPPED 59-microvm: scripts/setup-microvm could not provide QEMU and a Debian kernel (output above)"
  exit 0
fi
CARGO_INCREMENTAL=0 cargo build -q -p airlock --locked || exit 1
bin=$PWD/target/debug/airlock
call_timeout=${MICROVM_CALL_TIMEOUT:-120}
state=$(mktemp -d)
ws=$(mktemp -d)
canary_dir=$(mktemp -d)
trap 'rm -rf "$state" "$ws" "$canary_dir"' EXIT
export AIRLOCK_STATE_DIR=$state
pass=0 fail=0
check() { # name, then a command that must succeed
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "ok   $name"; else fail=$((fail + 1)); echo "FAIL $name"; return 1; fi
}
json() { python3 -c "import json,sys; o=json.load(sys.stdin); print($1)" 2>/dev/null; }
# One airlock call in the workspace, bounded by the watchdog.
run() { (cd "$ws" && timeout -s KILL "$call_timeout" "$bin" run --backend microvm "$@"); }

cat > "$ws/airlock.toml" <<'TOML'
[workspace]
root = "."
[commands]
allow = ["sh", "echo", "cat", "true", "false", "sleep"]
[limits]
timeout = "5s"
memory = "256MiB"
pids = 64
output = "4KiB"
TOML
echo hello > "$ws/in.txt"
# Host state the guest must not reach: a canary file outside the workspace
# (world-writable, so that only the VM boundary stops a write) and a secret.
echo canary > "$canary_dir/canary.txt"
chmod 0777 "$canary_dir" && chmod 0666 "$canary_dir/canary.txt"
echo "host-secret-$$" > "$canary_dir/secret.txt"
chmod 0644 "$canary_dir/secret.txt"

check "doctor --backend microvm says the backend is available" "$bin" doctor --backend microvm >/dev/null
out=$(AIRLOCK_PROFILE=1 run -- /bin/echo hi 2> "$state/profile.txt")
check "a command runs and its output comes back" test "$out" = hi
grep -q "QEMU start to exit" "$state/profile.txt" && grep -q "accelerator" "$state/profile.txt"
check "the profile reports the accelerator and boot-to-exit time" test $? = 0
sed -n 's/^airlock profile: *//p' "$state/profile.txt" | sed 's/^/     /'

# The probes are scripts in the workspace: the policy gate judges `sh FILE`,
# and what the script does inside is the VM's to contain.
probe() { # name, script text
  printf '%s\n' "$2" > "$ws/$1.sh"
}
probe exit 'cat in.txt; echo gone >&2; echo new > new.txt; rm in.txt; exit 7'
probe net 'ls /sys/class/net; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
probe out 'yes | head -c 100000'
probe who 'id -u; grep CapEff /proc/self/status'
probe write "echo pwned > $canary_dir/canary.txt; echo pwned > $canary_dir/planted.txt; echo tried"
probe read "cat $canary_dir/secret.txt /etc/shadow 2>&1; ls /root 2>&1; echo tried"
probe proc 'tr "\0" " " < /proc/1/cmdline; echo'
probe hostpid "test -e /proc/$$/cmdline && tr '\0' ' ' < /proc/$$/cmdline; echo tried"
probe sleep 'sleep 60'
# The probes themselves are in the workspace: not a change of the runs.
out=$(run --json -- sh exit.sh)
check "exit code, stdout and stderr come back" test "$(echo "$out" | json 'o["exit_code"], o["stdout"].strip(), o["stderr"].strip()')" = "7 hello gone" || echo "$out"
check "changes are reported (added and deleted)" test "$(echo "$out" | json 'sorted(c["kind"] for c in o["changes"])')" = "['added', 'deleted']" || echo "$out"
check "overlay: the host workspace is unchanged" test -f "$ws/in.txt" -a ! -e "$ws/new.txt"
run --apply -- sh -c 'echo y > kept.txt' >/dev/null 2>&1
check "--apply copies the change back" test "$(cat "$ws/kept.txt" 2>/dev/null)" = y

out=$(run -- sh net.sh 2>&1)
check "network none: the VM's only interface is its own loopback ($(echo $out))" test "$(echo $out)" = "lo lo"

out=$(run --json -- sh sleep.sh)
check "the timeout kills the run" test "$(echo "$out" | json 'o["killed_by"]')" = timeout || echo "$out"

out=$(run --json -- sh out.sh)
check "output beyond limits.output is cut and the run killed" test "$(echo "$out" | json 'o["truncated"], o["killed_by"]')" = "True output" || echo "$out"

out=$(run -- sh who.sh 2>&1)
check "a non-root user without capabilities runs the command ($(echo $out))" test "$(echo $out)" = "100000 CapEff: 0000000000000000"

# Escape attempts, judged on the host.
out=$(run -- sh write.sh 2>&1)
check "a write outside the workspace does not reach the host" test "$(cat "$canary_dir/canary.txt")" = canary -a ! -e "$canary_dir/planted.txt" -a "${out/tried/}" != "$out"
out=$(run -- sh read.sh 2>&1)
check "host files outside the view are not in the guest" test "${out/tried/}" != "$out" -a "${out/host-secret-$$/}" = "$out"
out=$(run -- sh proc.sh 2>&1)
check "the guest's /proc is its own: PID 1 is the guest's init ($(echo $out))" test "$(echo "$out" | head -1)" = "/bin/sh /init "
out=$(run -- sh hostpid.sh 2>&1)
check "a host PID's command line is not visible ($(echo $out))" test "$(echo $out)" = tried

left=$(ls /run/airlock-microvm 2>/dev/null | wc -l)
check "no run's stage is left behind" test "$left" = 0
pgrep -f "qemu-system-x86_64 -M microvm -accel" -u 100000 >/dev/null
check "no QEMU of a run is left" test $? != 0
echo "$pass passed, $fail failed"
status=0
[ "$fail" = 0 ] || status=1

# A subset of the escape corpus (tests/escape/tiers/microvm.toml says what
# differs on this tier), a few cases per kind: escapes through the filesystem,
# privileges and the kernel; hidden files (airlock's state dir in the
# workspace, the host's homes); the return path; resources and the timeout;
# network none; a control. About 14 boots: under 3 minutes under TCG.
# The whole corpus (139 cases, one boot each: about 25 minutes of one core
# under TCG; bench/results/escape-microvm.txt has the last figures):
#   python3 tests/escape/run.py --backend-tier microvm
# Each case has a watchdog (its deadline plus the tier's boot allowance; or
# --watchdog SECONDS) that kills airlock's process group and fails the case.
#   MICROVM_ESCAPE=0   skips the subset
if [ "${MICROVM_ESCAPE:-1}" = 1 ]; then
  mkdir -p target/escape
  only=()
  for c in fs_abs_paths fs_symlink_read priv_mount kern_ptrace host_kill_sentinel \
    sec_state_in_ws sec_root_home ret_symlink_out ret_git_config_fsmonitor \
    res_cpu_spin res_fork_bomb_c net_tcp_loopback net_interfaces ctl_python_runs; do
    only+=(--only "$c")
  done
  python3 tests/escape/run.py --airlock "$bin" --backend-tier microvm "${only[@]}" \
    --report target/escape/report-microvm.json ${ESCAPE_ARGS:-} || status=1
fi
exit $status
