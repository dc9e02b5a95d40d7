#!/usr/bin/env bash
# Rootless mode (docs/sandbox.md, "Running unprivileged"): airlock run by ordinary
# users created here (airlock-u1, airlock-u2; created if missing, so the part is
# idempotent). As airlock-u1: `airlock doctor`, `airlock run -- echo hi`, overlay
# changes and --apply (files keep the user's ownership), network none, --json's
# sandbox_mode, the escape corpus (cases that need a cgroup are listed in
# tests/escape/tiers/rootless.toml: refused as written, then contained with best
# effort); and u1's runs cannot see or signal u2's runs, nor read u2's state.
# With runsc installed, the gvisor backend's rootless mode too: echo, overlay and
# --apply, network none and allowlist, a root file unreadable, limits refused
# without best effort and held with it, nothing left behind, and the escape
# corpus (tests/escape/tiers/gvisor-rootless.toml).
# Needs root (to create the users) and unprivileged user namespaces.
#   ROOTLESS_ESCAPE=0   skip the escape corpus (the rest takes seconds)
#   ESCAPE_ARGS="--only net_"   extra runner flags
set -uo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "47-rootless: run as root (it creates the test users)"; exit 1; }
command -v gcc >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc >/dev/null; }
cargo build -q --locked -p airlock || exit 1
for u in airlock-u1 airlock-u2; do
  id "$u" >/dev/null 2>&1 || useradd -m -s /bin/bash "$u" || exit 1
done
# The binary and the corpus where both users can read and execute them (the
# checkout may sit under /root, which is 0700).
share=$(mktemp -d /var/tmp/airlock-test-rootless.XXXXXX)
chmod 0755 "$share"
rt1=$(mktemp -d /tmp/airlock-test-rootless-rt1.XXXXXX)
chown airlock-u1: "$rt1" && chmod 0700 "$rt1"
bg_pids=()
cleanup() {
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$share" "$rt1"
  for u in airlock-u1 airlock-u2; do rm -rf "/home/$u/ws" "/home/$u/ws2" "/home/$u/gvws"; done
}
trap cleanup EXIT
mkdir -p "$share/bin" "$share/tests"
# airlock-serve beside it: `airlock mcp` (the escape corpus's MCP cases) execs it.
cp target/debug/airlock target/debug/airlock-serve "$share/bin/"
cp -r tests/escape "$share/tests/escape"
chmod -R a+rX "$share"
bin=$share/bin/airlock

pass=0 fail=0
check() { # name, then a command that must succeed
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "ok   $name"; else fail=$((fail + 1)); echo "FAIL $name"; fi
}
# as USER CMD...: a clean login-like environment, no XDG_RUNTIME_DIR unless given.
as() {
  local u=$1; shift
  runuser -u "$u" -- env -i HOME="/home/$u" USER="$u" LANG=C.UTF-8 \
    PATH=/usr/local/bin:/usr/bin:/bin ${XDG:+XDG_RUNTIME_DIR=$XDG} "$@"
}
u1_uid=$(id -u airlock-u1)

# -- doctor
doc=$(cd / && as airlock-u1 "$bin" doctor 2>&1); rc=$?
echo "$doc" | sed 's/^/     doctor: /'
check "doctor as u1: exit 0 (every required layer ok)" test "$rc" = 0
check "doctor: reports rootless mode" grep -q "mode .*rootless (euid $u1_uid)" <<<"$doc"
check "doctor: one line per userns sysctl" test "$(grep -c userns_sysctl <<<"$doc")" = 3
check "doctor: says which limits are enforced by what" grep -q "limits .*enforced" <<<"$doc"
has_cgroup=0
grep -q "^ok  *cgroup" <<<"$doc" && has_cgroup=1

# -- a workspace of u1's own (probes are python3 programs: the gate judges
# shell paths outside the workspace, and these look at /proc and /home on purpose)
as airlock-u1 sh -c 'rm -rf ~/ws && mkdir ~/ws && echo old > ~/ws/old.txt && echo keep > ~/ws/keep.txt'
ws1=/home/airlock-u1/ws
run1() { (cd "$ws1" && as airlock-u1 "$bin" run "$@"); }
# jcheck NAME JSON PYTHON-EXPR...: asserts on the parsed `airlock run --json` output `j`
jcheck() {
  local name=$1 json=$2; shift 2
  check "$name" python3 -c '
import json, os, sys
j = json.loads(sys.argv[1]); ws = sys.argv[2]
rel = lambda c: os.path.relpath(c["path"], ws)
for expr in sys.argv[3:]:
    assert eval(expr), (expr, {k: j.get(k) for k in ("status", "message", "stdout", "stderr", "changes")})' \
    "$json" "$ws1" "$@"
}

if [ $has_cgroup = 0 ]; then
  out=$(run1 -- echo hi 2>&1); rc=$?
  echo "$out" | head -c 600 | sed 's/^/     refusal: /'; echo
  check "run as u1, default policy, no cgroup: refused (125)" test "$rc" = 125
  check "the refusal names limits.enforcement = \"best_effort\"" grep -q 'enforcement = "best_effort"' <<<"$out"
  # The built-in default policy, accepting rlimits in place of a cgroup.
  as airlock-u1 "$bin" policy show-default | sed '/^\[limits\]/a enforcement = "best_effort"' > "$ws1/airlock.toml"
  chown airlock-u1: "$ws1/airlock.toml"
fi
out=$(run1 -- echo hi 2>&1)
check "run as u1: echo hi" test "$out" = "hi"
out=$(XDG=$rt1 run1 -- echo hi 2>&1)
check "run as u1 with XDG_RUNTIME_DIR: echo hi" test "$out" = "hi"
check "mount points under \$XDG_RUNTIME_DIR/airlock" test -d "$rt1/airlock/mnt/root"
json=$(run1 --json -- id -u)
jcheck "--json: sandbox_mode.mode = rootless, root inside" "$json" \
  'j["sandbox_mode"]["mode"] == "rootless"' 'j["stdout"] == "0\n"'

# -- overlay workspace, changes, apply
json=$(run1 --json -- sh -c 'echo new > new.txt; rm old.txt; echo changed > keep.txt')
jcheck "overlay: changes reported, host untouched" "$json" \
  '("new.txt", "added") in [(rel(c), c["kind"]) for c in j["changes"]]' \
  '("old.txt", "deleted") in [(rel(c), c["kind"]) for c in j["changes"]]' \
  '("keep.txt", "modified") in [(rel(c), c["kind"]) for c in j["changes"]]' \
  'not os.path.exists(ws + "/new.txt") and os.path.exists(ws + "/old.txt")'
run1 --apply -- sh -c 'echo new > new.txt; rm old.txt; mkdir -p d && echo deep > d/f' >/dev/null 2>&1
check "--apply: the changes reach the host" sh -c "[ -f $ws1/new.txt ] && [ ! -e $ws1/old.txt ] && [ \"\$(cat $ws1/d/f)\" = deep ]"
check "--apply: files keep u1's ownership" test "$(stat -c %u "$ws1/new.txt" "$ws1/d/f" "$ws1/d" | sort -u)" = "$u1_uid"
json=$(run1 --json -- python3 -c 'import os, shutil; shutil.rmtree("d"); os.mkdir("d"); open("d/g", "w").write("other")')
jcheck "overlay: a re-created (opaque) dir is reported, host untouched" "$json" \
  '("d/f", "deleted") in [(rel(c), c["kind"]) for c in j["changes"]]' \
  '("d/g", "added") in [(rel(c), c["kind"]) for c in j["changes"]]' \
  'os.path.exists(ws + "/d/f")'

# -- network none, nothing of the host, no capabilities
cat > "$ws1/probe_host.py" <<'EOF'
import os, socket
try:
    socket.create_connection(("127.0.0.1", 22), timeout=2)
    print("CONNECTED")
except OSError as e:
    print("inet blocked:", e.strerror)
print("interfaces", [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]])
for p in ["/etc/shadow", "/home/airlock-u2", "/root", "/var/lib/airlock", "/run/user"]:
    print(p, "VISIBLE" if os.path.exists(p) else "absent")
print("CapEff", open("/proc/self/status").read().split("CapEff:")[1].split()[0])
EOF
chown airlock-u1: "$ws1/probe_host.py"
json=$(run1 --json -- python3 probe_host.py)
jcheck "network none (loopback only, no inet socket), no host paths, no capabilities" "$json" \
  '"inet blocked" in j["stdout"] and "CONNECTED" not in j["stdout"]' \
  "\"interfaces ['lo']\" in j[\"stdout\"]" \
  '"VISIBLE" not in j["stdout"]' '"CapEff 0000000000000000" in j["stdout"]'

# -- gVisor as u1: the gvisor backend's rootless mode (docs/tiers.md, "gVisor
# without root"): the helper in a user namespace of its own, runsc --rootless
gv_ws=/home/airlock-u1/gvws
if command -v runsc >/dev/null; then
  as airlock-u1 sh -c 'rm -rf ~/gvws && mkdir ~/gvws && echo old > ~/gvws/old.txt'
  # The built-in default policy with limits accepted as best effort (this user
  # has no cgroup), and as it is (refused).
  as airlock-u1 "$bin" policy show-default | sed '/^\[limits\]/a enforcement = "best_effort"' > "$gv_ws/airlock.toml"
  as airlock-u1 "$bin" policy show-default > "$gv_ws/strict.toml"
  chown airlock-u1: "$gv_ws"/*.toml
  gv() { (cd "$gv_ws" && as airlock-u1 "$bin" run --backend gvisor "$@"); }
  gjcheck() { local n=$1 j=$2; shift 2; (ws1=$gv_ws; jcheck "gvisor as u1: $n" "$j" "$@"); }
  gv_before=$(pgrep -u airlock-u1 | sort)
  if [ $has_cgroup = 0 ]; then
    out=$(gv --policy strict.toml -- echo hi 2>&1); rc=$?
    check "gvisor as u1, no cgroup, limits not best effort: refused (125), naming limits.memory and best_effort" \
      bash -c '[ "$1" = 125 ] && grep -q "limits.memory" <<<"$2" && grep -q "enforcement = \"best_effort\"" <<<"$2"' _ "$rc" "$out" \
      || echo "$out" | head -c 600
  fi
  out=$(gv -- echo hi 2>&1)
  check "gvisor as u1: echo hi" test "$out" = "hi" || echo "$out" | head -c 600
  doc=$(cd "$gv_ws" && as airlock-u1 "$bin" doctor --backend gvisor 2>&1)
  check "gvisor as u1: doctor names runsc --rootless and what holds each limit" \
    bash -c 'grep -q "runsc --rootless" <<<"$1" && grep -q "limits.memory .*RLIMIT_AS" <<<"$1" && grep -q "limits.cpu_time .*whole process tree" <<<"$1"' _ "$doc" \
    || echo "$doc" | head -40
  json=$(gv --json -- sh -c 'id -u; echo new > new.txt; rm old.txt')
  gjcheck "root inside, sandbox_mode rootless, overlay changes reported, host untouched" "$json" \
    'j["stdout"] == "0\n"' 'j["sandbox_mode"]["mode"] == "rootless"' \
    '("new.txt", "added") in [(rel(c), c["kind"]) for c in j["changes"]]' \
    '("old.txt", "deleted") in [(rel(c), c["kind"]) for c in j["changes"]]' \
    'not os.path.exists(ws + "/new.txt") and os.path.exists(ws + "/old.txt")'
  gv --apply -- sh -c 'echo new > new.txt; rm old.txt; mkdir -p d && echo deep > d/f' >/dev/null 2>&1
  check "gvisor as u1: --apply: the changes reach the host" sh -c "[ -f $gv_ws/new.txt ] && [ ! -e $gv_ws/old.txt ] && [ \"\$(cat $gv_ws/d/f)\" = deep ]"
  check "gvisor as u1: --apply: files keep u1's ownership" test "$(stat -c %u "$gv_ws/new.txt" "$gv_ws/d/f" "$gv_ws/d" | sort -u)" = "$u1_uid"
  # A file of root's, 0600, inside u1's workspace: the gofer (u1) cannot open it.
  echo topsecret > "$gv_ws/root-secret.txt"; chmod 0600 "$gv_ws/root-secret.txt"
  { cat "$ws1/probe_host.py"; printf '%s\n' 'try:' '    print("secret", open("root-secret.txt").read().strip())' \
      'except OSError as e:' '    print("secret refused:", e.strerror)'; } > "$gv_ws/probe_host.py"
  chown airlock-u1: "$gv_ws/probe_host.py"
  json=$(gv --json -- python3 probe_host.py)
  gjcheck "network none (connect fails, loopback only), no host paths, root's secret unreadable" "$json" \
    '"inet blocked" in j["stdout"] and "CONNECTED" not in j["stdout"]' \
    "\"interfaces ['lo']\" in j[\"stdout\"]" '"VISIBLE" not in j["stdout"]' \
    '"secret refused: Permission denied" in j["stdout"] and "topsecret" not in j["stdout"]'
  rm -f "$gv_ws/root-secret.txt"
  # Best-effort limits: RLIMIT_AS and RLIMIT_NPROC in the Sentry, the CPU-time
  # ceiling sampled by the helper.
  sed -e 's/^memory = .*/memory = "256MiB"/' -e 's/^pids = .*/pids = 16/' -e '/^\[limits\]/a cpu_time = "2s"' \
    "$gv_ws/airlock.toml" > "$gv_ws/lim.toml"
  chown airlock-u1: "$gv_ws/lim.toml"
  json=$(gv --policy lim.toml --json -- python3 -c '
try:
    b = bytearray(1 << 30); print("ALLOCATED")
except MemoryError: print("MemoryError")
b = bytearray(100 << 20); print("100 MiB ok")')
  gjcheck "limits.memory 256MiB (best effort): 1 GiB refused with MemoryError, 100 MiB allowed" "$json" \
    '"MemoryError" in j["stdout"] and "ALLOCATED" not in j["stdout"] and "100 MiB ok" in j["stdout"]'
  json=$(gv --policy lim.toml --json -- python3 -c '
import os, time
n = 0
try:
    for i in range(64):
        if os.fork() == 0: time.sleep(3); os._exit(0)
        n += 1
except OSError as e: print("fork refused:", e.strerror)
print("forked", n)')
  gjcheck "limits.pids 16: a fork past it is refused (EAGAIN)" "$json" \
    '"fork refused: Resource temporarily unavailable" in j["stdout"]' 'int(j["stdout"].split()[-1]) < 16'
  json=$(gv --policy lim.toml --json -- python3 -c 'while True: pass')
  gjcheck "limits.cpu_time 2s: a busy loop is killed as cpu_time well before the 30 s timeout" "$json" \
    'j["killed_by"] == "cpu_time"' 'j["duration_ms"] < 15000' 'j["cpu_ms"] >= 2000'
  # Network allowlist mode: the relay inside, the proxy's socket (u1's) bound in.
  if relay=$(scripts/build-relay 2>/dev/null) && [ -n "$relay" ]; then
    cp "$relay" "$share/bin/airlock-relay" && chmod a+rx "$share/bin/airlock-relay"
    printf '%s\n' '[workspace]' 'root = "."' '[network]' 'mode = "allowlist"' 'allow = ["pypi.test"]' \
      '[commands]' 'allow = ["python3", "curl"]' '[limits]' 'timeout = "30s"' 'enforcement = "best_effort"' > "$gv_ws/net.toml"
    printf '%s\n' 'import errno, os, socket, subprocess' 'print("env", os.environ.get("HTTPS_PROXY"))' \
      'try:' '    socket.create_connection(("192.0.2.1", 443), timeout=3); print("direct ok")' \
      'except OSError as e: print("direct", errno.errorcode.get(e.errno, e.errno))' \
      'p = subprocess.run(["curl", "-sS", "--max-time", "20", "https://evil.test/"], capture_output=True, text=True)' \
      'print("evil=" + (p.stdout + p.stderr).strip())' > "$gv_ws/net.py"
    chown airlock-u1: "$gv_ws/net.toml" "$gv_ws/net.py"
    json=$(gv --policy net.toml --json -- python3 net.py)
    gjcheck "allowlist: direct connect fails (no route), the relay reaches the proxy, which refuses and records" "$json" \
      'j["exit_code"] == 0' '"env http://127.0.0.1:3128" in j["stdout"]' '"direct EHOSTUNREACH" in j["stdout"]' \
      '"evil=curl: (56) CONNECT tunnel failed, response 403" in j["stdout"]' \
      '"not_in_allowlist" in {v["data"].get("reason") for v in j["violations"]}'
  else
    echo "NOT RUN: gvisor allowlist as u1 (scripts/build-relay failed)"
  fi
  out=$(cd "$gv_ws" && XDG=$rt1 as airlock-u1 "$bin" run --backend gvisor -- echo hi 2>&1)
  check "gvisor as u1 with XDG_RUNTIME_DIR: echo hi, staged under \$XDG_RUNTIME_DIR/airlock/oci" \
    bash -c '[ "$1" = hi ] && [ -d "$2/airlock/oci" ]' _ "$out" "$rt1"
  check "gvisor as u1: nothing left behind: stage dirs (runtime dir and fallback) empty" \
    test -z "$(find "$rt1/airlock/oci" /home/airlock-u1/.local/state/airlock/run/oci -mindepth 1 2>/dev/null)"
  check "gvisor as u1: nothing left behind: no process of u1's (runsc, Sentry, gofer) outlives its run" \
    test "$(pgrep -u airlock-u1 | sort)" = "$gv_before" || ps -o pid,ppid,stat,cmd -u airlock-u1
else
  echo "NOT RUN: gVisor as u1 (runsc is not installed; scripts/test tiers installs it)"
fi

# -- u1 and u2 are kept apart
as airlock-u2 sh -c 'rm -rf ~/ws2 && mkdir ~/ws2'
[ -f "$ws1/airlock.toml" ] && sed 's/^timeout = .*/timeout = "60s"/' "$ws1/airlock.toml" > /home/airlock-u2/ws2/airlock.toml
chown -R airlock-u2: /home/airlock-u2/ws2
token=u2token$$
(cd /home/airlock-u2/ws2 && exec runuser -u airlock-u2 -- env -i HOME=/home/airlock-u2 PATH=/usr/bin:/bin \
  "$bin" run -- sh -c "echo $token > /tmp/t; exec sleep 40" >/dev/null 2>&1) &
bg_pids+=($!)
for _ in $(seq 50); do pgrep -u airlock-u2 -x sleep >/dev/null && break; sleep 0.2; done
u2_sleep=$(pgrep -u airlock-u2 -x sleep | head -1)
check "u2's run is up" test -n "$u2_sleep"
cat > "$ws1/probe_peers.py" <<'EOF'
import os, sys
pids = [p for p in os.listdir("/proc") if p.isdigit()]
print("pids", len(pids))
print("sleeps", sum(open(f"/proc/{p}/comm").read().strip() == "sleep" for p in pids))
print(open("/tmp/t").read() if os.path.exists("/tmp/t") else "no /tmp/t")
try:
    os.kill(int(sys.argv[1]), 0)
    print("SIGNALLED")
except OSError as e:
    print("kill:", e.strerror)
EOF
chown airlock-u1: "$ws1/probe_peers.py"
json=$(run1 --json -- python3 probe_peers.py "${u2_sleep:-1}")
jcheck "u1's sandbox sees none of u2's processes or files and cannot signal them" "$json" \
  '"sleeps 0" in j["stdout"]' '"no /tmp/t" in j["stdout"]' '"SIGNALLED" not in j["stdout"]' \
  "int(j['stdout'].split()[1]) <= 4"
check "u1 cannot signal u2's sandboxed process from the host" sh -c "! runuser -u airlock-u1 -- kill -0 ${u2_sleep:-1} 2>/dev/null"
check "u1 cannot read u2's state directory" sh -c "! runuser -u airlock-u1 -- ls /home/airlock-u2/.local/state/airlock >/dev/null 2>&1"
check "u2's state directory is private (0700)" test "$(stat -c %a /home/airlock-u2/.local/state/airlock)" = 700
check "u2's run survived u1's runs" kill -0 "${u2_sleep:-1}"
kill "${bg_pids[@]}" 2>/dev/null; wait 2>/dev/null; bg_pids=()
check "no run directories left behind (u1)" test -z "$(ls -A /home/airlock-u1/.local/state/airlock/runs 2>/dev/null)"

# -- the escape corpus, as u1
if [ "${ROOTLESS_ESCAPE:-1}" = 1 ]; then
  mkdir -p target/escape
  # shellcheck disable=SC2086
  (cd "$share" && as airlock-u1 python3 tests/escape/run.py --airlock "$bin" \
      --report /home/airlock-u1/rootless-report.json ${ESCAPE_ARGS:-}) 2>&1 | tee target/escape/rootless.txt | tail -40
  check "escape corpus as u1" grep -q ' passed, 0 failed' <(tail -1 target/escape/rootless.txt)
  mv /home/airlock-u1/rootless-report.json target/escape/rootless-report.json 2>/dev/null
  # The same, each case through u1's own `airlock serve` (airlock run --server).
  # shellcheck disable=SC2086
  (cd "$share" && as airlock-u1 python3 tests/escape/run.py --airlock "$bin" --via-server ${ESCAPE_ARGS:-}) 2>&1 \
    | tee target/escape/rootless-via-server.txt | tail -20
  check "escape corpus as u1 through airlock run --server" grep -q ' passed, 0 failed' <(tail -1 target/escape/rootless-via-server.txt)
  # gVisor's rootless mode (tests/escape/tiers/gvisor-rootless.toml: what differs
  # from the gvisor tier, each with its reason); a few minutes on ptrace.
  if command -v runsc >/dev/null; then
    # shellcheck disable=SC2086
    (cd "$share" && as airlock-u1 python3 tests/escape/run.py --airlock "$bin" --backend-tier gvisor \
        --report /home/airlock-u1/rootless-gvisor-report.json ${ESCAPE_ARGS:-}) 2>&1 | tee target/escape/rootless-gvisor.txt | tail -40
    check "escape corpus as u1 on gvisor (rootless)" grep -q ' passed, 0 failed' <(tail -1 target/escape/rootless-gvisor.txt)
    mv /home/airlock-u1/rootless-gvisor-report.json target/escape/rootless-gvisor-report.json 2>/dev/null
  else
    echo "NOT RUN: the escape corpus on gvisor as u1 (runsc is not installed)"
  fi
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
