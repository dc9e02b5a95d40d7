#!/usr/bin/env bash
# The microVM backend as a user meets it: scripts/setup-microvm (Debian's
# kernel, busybox and QEMU; idempotent, cached), then `airlock run --backend
# microvm` cases: output, exit code, workspace changes and --apply, network
# none, network allowlist through the egress relay (virtio-serial to the
# host's egress proxy), the timeout, and escape attempts judged on host state
# (a canary outside the workspace, a host secret, the host's /proc).
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
netns_pids=()
cleanup() {
  # Only what this script started, by PID.
  for p in "${netns_pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$state" "$ws" "$canary_dir"
}
trap cleanup EXIT
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
# A piped stdin is read whole by airlock (at most 64 MiB) and given to the
# guest's command; without it the command reads /dev/null.
out=$(printf 'north\nsouth\n' | run -- cat)
check "piped stdin reaches the command" test "$out" = "$(printf 'north\nsouth')"
out=$(run --json -- cat </dev/null)
check "no stdin: the command reads an empty one and ends" test "$(echo "$out" | json 'o["exit_code"], o["killed_by"], o["stdout"]')" = "0 None " || echo "$out"
run --apply -- sh -c 'echo y > kept.txt' >/dev/null 2>&1
check "--apply copies the change back" test "$(cat "$ws/kept.txt" 2>/dev/null)" = y

# The probes that only look, and the one that tries to write out of the VM,
# share one boot (each boot costs 5-10 s under TCG): each prints under its own
# heading, and each check reads its own section.
probe looks 'for p in net who write read proc hostpid; do echo "## $p"; sh "$p.sh" 2>&1; done'
looks=$(run -- sh looks.sh 2>&1)
section() { awk -v h="## $1" '$0 == h { on = 1; next } /^## / { on = 0 } on' <<<"$looks"; }

out=$(section net)
check "network none: the VM's only interface is its own loopback ($(echo $out))" test "$(echo $out)" = "lo lo"

out=$(run --json -- sh sleep.sh)
check "the timeout kills the run" test "$(echo "$out" | json 'o["killed_by"]')" = timeout || echo "$out"

out=$(run --json -- sh out.sh)
check "output beyond limits.output is cut and the run killed" test "$(echo "$out" | json 'o["truncated"], o["killed_by"]')" = "True output" || echo "$out"

out=$(section who)
check "a non-root user without capabilities runs the command ($(echo $out))" test "$(echo $out)" = "2000000000 CapEff: 0000000000000000"

# Escape attempts, judged on the host.
out=$(section write)
check "a write outside the workspace does not reach the host" test "$(cat "$canary_dir/canary.txt")" = canary -a ! -e "$canary_dir/planted.txt" -a "${out/tried/}" != "$out"
out=$(section read)
check "host files outside the view are not in the guest" test "${out/tried/}" != "$out" -a "${out/host-secret-$$/}" = "$out"
out=$(section proc)
check "the guest's /proc is its own: PID 1 is the guest's init ($(echo $out))" test "$(echo "$out" | head -1)" = "/bin/sh /init "
out=$(section hostpid)
check "a host PID's command line is not visible ($(echo $out))" test "$(echo $out)" = tried

# -- Network allowlist mode: the egress relay. Two network namespaces made
# here and joined by a veth pair, nothing else: airlock (and its egress proxy,
# QEMU and the guest) runs in one, an HTTP server in the other on 11.0.0.1,
# an address the proxy does not refuse as private or as this host's own (no
# packet can leave the pair). One boot runs every probe.
allow_ws=$(mktemp -d)
netns_ok=0
unshare -n sleep 900 & netns_pids+=($!); ns_air=$!
unshare -n sleep 900 & netns_pids+=($!); ns_world=$!
sleep 0.2
if ip link add egress-air netns "$ns_air" type veth peer name egress-world netns "$ns_world" \
  && nsenter -t "$ns_air" -n sh -c 'ip addr add 11.0.0.2/24 dev egress-air && ip link set egress-air up && ip link set lo up' \
  && nsenter -t "$ns_world" -n sh -c 'ip addr add 11.0.0.1/24 dev egress-world && ip link set egress-world up && ip link set lo up'; then
  netns_ok=1
fi
check "two network namespaces joined by a veth pair for the allowlist cases" test "$netns_ok" = 1
if [ "$netns_ok" = 1 ]; then
  www=$allow_ws/www
  mkdir -p "$www"
  echo "through-the-relay" > "$www/small.txt"
  # Past the relay's flow-control window (256 KiB) many times over.
  head -c 3000000 /dev/urandom > "$www/big.bin"
  big_sha=$(sha256sum "$www/big.bin" | cut -d' ' -f1)
  nsenter -t "$ns_world" -n python3 -m http.server --bind 11.0.0.1 8080 --directory "$www" >/dev/null 2>&1 &
  netns_pids+=($!)
  for _ in $(seq 50); do nsenter -t "$ns_air" -n curl -s -o /dev/null http://11.0.0.1:8080/small.txt && break; sleep 0.1; done
  mkdir -p "$allow_ws/ws"
  cp scripts/lib/allowlist-policy.toml "$allow_ws/ws/airlock.toml"
  cat > "$allow_ws/ws/egress.py" <<'PY'
import errno, hashlib, os, socket, subprocess, urllib.request
U = "http://11.0.0.1:8080"
def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.read()
    except Exception as e:
        return "ERR " + str(e)[:100]
big = fetch(U + "/big.bin")
print("urllib-big", hashlib.sha256(big).hexdigest() if isinstance(big, bytes) else big)
print("urllib-refused", fetch("http://evil.test/x"))
def curl(*args):
    r = subprocess.run(["curl", "-sS", "--max-time", "30", *args], capture_output=True, text=True)
    return (r.stdout.strip() or r.stderr.strip())[:100]
print("curl-http", curl(U + "/small.txt"))
print("curl-socks", curl("--proxy", os.environ["ALL_PROXY"], U + "/small.txt"))
print("curl-direct", curl("--noproxy", "*", "--connect-timeout", "5", U + "/small.txt") or "empty")
try:
    socket.create_connection(("11.0.0.1", 8080), timeout=5)
    print("direct connected")
except OSError as e:
    print("direct", errno.errorcode.get(e.errno, e.errno))
PY
  out=$(cd "$allow_ws/ws" && AIRLOCK_STATE_DIR=$allow_ws/state timeout -s KILL "$call_timeout" \
    nsenter -t "$ns_air" -n "$bin" run --backend microvm --json -- python3 egress.py)
  stdout=$(echo "$out" | json 'o["stdout"]')
  line() { echo "$stdout" | sed -n "s/^$1 //p"; }
  check "allowlist: python urllib fetches 3 MB through the relay, byte for byte" test "$(line urllib-big)" = "$big_sha" || echo "$out" | head -c 2000
  check "allowlist: curl through the HTTP proxy port ($(line curl-http))" test "$(line curl-http)" = through-the-relay
  check "allowlist: curl through the SOCKS5 port ($(line curl-socks))" test "$(line curl-socks)" = through-the-relay
  check "allowlist: a host outside the allowlist is refused by the proxy ($(line urllib-refused))" \
    grep -q "403" <<<"$(line urllib-refused)"
  check "allowlist: a direct connect finds no route out of the VM ($(line direct))" test "$(line direct)" = ENETUNREACH
  check "allowlist: curl without the proxy fails ($(line curl-direct))" test "${stdout/curl-direct through-the-relay/}" = "$stdout"
  v=$(echo "$out" | json '"|".join(sorted(set(x["kind"] + ":" + x["detail"] for x in o["violations"])))')
  check "allowlist: the refusal is in the outcome's violations" grep -q "network:blocked: evil.test (not in allowlist)" <<<"$v" || echo "$v"
  check "allowlist: the allowed connections are logged" grep -q "network_connection:" <<<"$v" || echo "$v"
  audit=$(cat "$allow_ws/state"/audit/*.jsonl 2>/dev/null)
  check "allowlist: the audit record holds the proxy's refusal" grep -q '"not_in_allowlist"' <<<"$audit"
  check "allowlist: the proxy context is gone after the run" test -z "$(ls "$allow_ws/state/proxy" 2>/dev/null)"
fi
rm -rf "$allow_ws"

# Cancellation through a server: a client that goes away (curl gives up)
# cancels its microVM run at once, not at the policy's 60 s timeout; the run
# is recorded as cancelled and its VM is gone.
cancel_ws=$(mktemp -d) cancel_state=$(mktemp -d)
cat > "$cancel_ws/airlock.toml" <<'TOML'
[workspace]
root = "."
[commands]
allow = ["sleep"]
[limits]
timeout = "60s"
memory = "256MiB"
[sandbox]
backend = "microvm"
TOML
(cd "$cancel_ws" && AIRLOCK_STATE_DIR="$cancel_state" exec "$bin" serve --socket "$cancel_state/s.sock" --pool 0 \
  >"$cancel_state/serve.log" 2>&1) &
serve_pid=$!
for _ in $(seq 200); do [ -S "$cancel_state/s.sock" ] && break; sleep 0.05; done
curl -s --unix-socket "$cancel_state/s.sock" --max-time 12 -X POST http://airlock/v1/run \
  -H 'Content-Type: application/json' -d '{"argv":["sleep","55"]}' >/dev/null
gone_at=$(date +%s)
record=
for _ in $(seq 300); do
  record=$(grep -h '"killed_by"' "$cancel_state"/audit/*.jsonl 2>/dev/null | tail -1)
  [ -n "$record" ] && break
  sleep 0.1
done
waited=$(( $(date +%s) - gone_at ))
check "a server's microVM run whose client left is recorded as cancelled (${waited}s after)" \
  grep -q '"killed_by":"cancelled"' <<<"$record" || { echo "$record"; tail -5 "$cancel_state/serve.log"; }
check "it ended at once, not at its 60 s timeout" test "$waited" -lt 20
kill -TERM "$serve_pid" 2>/dev/null; wait "$serve_pid" 2>/dev/null
rm -rf "$cancel_ws" "$cancel_state"

left=$(ls /run/airlock-microvm 2>/dev/null | wc -l)
check "no run's stage is left behind" test "$left" = 0
pgrep -f "qemu-system-x86_64 -M microvm -accel" -u 2000000000 >/dev/null
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
