#!/usr/bin/env bash
# The OCI and gVisor backends as a user meets them: the runtimes installed from
# Debian's packages (idempotent), `airlock run --backend oci` smoke checks
# (output, exit codes, changes and --apply, network none, limits, refusals) with
# crun and with runc (AIRLOCK_OCI_RUNTIME), the same on `--backend gvisor`
# (runsc) plus a look from the host at what a gVisor guest is there (uid,
# no_new_privs, seccomp, nice, oom_score_adj), then the escape corpus on OCI
# (crun) and on gVisor (tiers/oci.toml, tiers/gvisor.toml list the cases that do
# not apply or are judged differently, with the reason). Network allowlist mode
# on oci (crun, runc): CLI smoke checks (proxy env, the relay delivering to the
# egress proxy, which refuses what the policy does not allow, a loopback server
# the test starts never reached, direct attempts refused and recorded), the
# end-to-end test through the proxy to loopback servers (airlock-netproxy's
# sandbox_e2e), and the corpus's network category with `--network allowlist`;
# on gvisor the same through the relay inside the sandbox (airlock-relay,
# built by scripts/build-relay), except that direct attempts fail for want of a
# route and are not recorded; and, in network mode none, a host unix socket in
# the workspace stays out of reach (runsc's --host-uds is for allowlist only).
#   TIERS_ESCAPE=0     skip the corpora
#   TIERS_CRUN=0       skip the crun smoke checks (and crun's end-to-end test)
#   TIERS_RUNC=0       skip the runc smoke checks
#   TIERS_YOUKI=0      skip the youki smoke checks
#   TIERS_YOUKI_BUILD=1  build youki when it is not cached (see below; ~14 min)
#   TIERS_GVISOR=0     skip gVisor (slow: its ptrace platform costs ~0.2-0.4 s a run)
#   TIERS_GVISOR_CORPUS=0  skip only the escape corpus on gVisor (about 3 minutes,
#                      plus 15 s for its network category in allowlist mode)
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then
  echo "the oci and gvisor backends run as root; skipped as uid $(id -u)"
  exit 0
fi
need=()
command -v crun >/dev/null || need+=(crun)
command -v runsc >/dev/null || need+=(runsc)
[ "${TIERS_RUNC:-1}" = 1 ] && ! command -v runc >/dev/null && need+=(runc)
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null || exit 1
fi
# youki is in no Debian release: `cargo install` builds it, with the features
# airlock's bundles need (seccomp; cgroup v1 and v2: youki has no default
# features, and without them it applies no seccomp profile and no limits). A
# cold build takes about 14 minutes on a 2-core host, half of CI's 30-minute
# aim, so this part builds it only when asked (TIERS_YOUKI_BUILD=1); otherwise
# it uses a youki already installed or cached under /var/cache/airlock-youki
# (kept between CI runs, as the build's target directory is), and says so when
# there is none.
youki_cache=/var/cache/airlock-youki
youki_version=0.7.0
if [ "${TIERS_YOUKI:-1}" = 1 ] && [ ! -x /usr/local/bin/youki ]; then
  if [ ! -x "$youki_cache/bin/youki" ] && [ "${TIERS_YOUKI_BUILD:-0}" = 1 ]; then
    command -v pkg-config >/dev/null && [ -f /usr/include/seccomp.h ] \
      || DEBIAN_FRONTEND=noninteractive apt-get install -y -q pkg-config libseccomp-dev >/dev/null
    echo "building youki $youki_version (cached under $youki_cache)"
    CARGO_TARGET_DIR=$youki_cache/target nice cargo install -q youki --version "$youki_version" \
      --locked --features seccomp,v1,v2 --root "$youki_cache" || echo "youki did not build"
  fi
  # airlock looks for runtimes in the system's directories, not on PATH.
  [ -x "$youki_cache/bin/youki" ] && ln -sf "$youki_cache/bin/youki" /usr/local/bin/youki
fi
CARGO_INCREMENTAL=0 cargo build -q -p airlock --locked || exit 1
bin=$PWD/target/debug/airlock
# gVisor's allowlist mode runs airlock-relay inside the sandbox: a static
# build of its own (seconds), found through $AIRLOCK_RELAY.
if [ "${TIERS_GVISOR:-1}" = 1 ]; then
  AIRLOCK_RELAY=$(scripts/build-relay) || exit 1
  export AIRLOCK_RELAY
fi
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

smoke() { # backend [OCI runtime]
  local backend=$1 b=$1${2:+/$2}
  export AIRLOCK_OCI_RUNTIME=${2:-}
  run() { (cd "$ws" && "$bin" run --backend "$backend" "$@"); }
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
  check "$b: doctor --backend $backend is available" "$bin" doctor --backend "$backend"
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
  if [ "$backend" = oci ]; then
    # A runtime built without seccomp support (youki's default features) would
    # start the command unfiltered.
    out=$(run -- python3 -c 'import os, socket
s = open("/proc/self/status").read()
try:
    socket.socket(socket.AF_INET); net = "inet allowed"
except OSError as e:
    net = "inet %d" % e.errno
print(s.split("NoNewPrivs:")[1].split()[0], s.split("Seccomp:")[1].split()[0], net)' 2>&1)
    check "$b: no_new_privs, the seccomp filter refuses inet sockets ($out)" test "$out" = "1 2 inet 97"
  fi
  out=$(run --json -- sh -c 'sleep 30')
  check "$b: the timeout kills the run" test "$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["killed_by"])')" = timeout
  out=$(run --json -- python3 -c 'x = bytearray(400 << 20); print(len(x))')
  if [ "${2:-}" = youki ]; then
    # youki 0.7 puts the container in a cgroup of its own at the hierarchy's
    # root (a relative cgroupsPath) with the bundle's linux.resources, and
    # exits with the signal's number: the kill is held to the limit by
    # youki's cgroup but not named as memory.
    check "$b: memory beyond limits.memory is killed (youki's own cgroup; not named)" \
      test "$(echo "$out" | python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["exit_code"] == 9 or o["signal"] == 9)')" = True || echo "$out"
  elif [ "${2:-}" = runc ]; then
    # runc puts the container in a child cgroup of the run's and deletes it on
    # exit; on cgroup v1 the OOM-kill counter lives in that child, so the kill
    # is seen, held to the limit, but not named as memory.
    check "$b: memory beyond limits.memory is killed within the limit (not named: v1 OOM counter in runc's own cgroup)" \
      test "$(echo "$out" | python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["signal"] == 9 and o["peak_memory_bytes"] <= 256 << 20)')" = True
  else
    check "$b: memory beyond limits.memory ends the run as memory" test "$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["killed_by"])')" = memory
  fi
  out=$(run --json -- python3 -c 'print("y" * 100000)')
  check "$b: output beyond limits.output is cut and killed" test "$(echo "$out" | python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["truncated"])')" = True
  out=$(run -- python3 -c 'import os; print(os.path.exists("/etc/shadow"), os.path.exists("/etc/ssh"), os.path.exists("/var/lib"))' 2>&1)
  check "$b: host secrets are not in the view ($out)" test "$out" = "False False False"
  ls /run/airlock-oci 2>/dev/null | grep -q . && fail=$((fail + 1)) && echo "FAIL $b: a run's stage was left behind"
  # A helper killed outright: scripts/test.d/62-killed-helper.sh (alone,
  # since its container would sit in a free cgroup slot for an instant,
  # which a corpus beside it counts as its own leftover).
}

allowlist() { # backend [OCI runtime]: network allowlist mode through the CLI
  local backend=$1 b=$1${2:+/$2}
  export AIRLOCK_OCI_RUNTIME=${2:-}
  rm -rf "$ws"/* "$ws"/.[!.]* 2>/dev/null
  # A loopback HTTP server on the host, named by an allowlisted host: the proxy
  # must refuse the address it resolves to, and a direct connect must not
  # reach it, so the server sees no connection at all (it logs each accept).
  rm -f "$state/port"
  python3 -c 'import http.server, sys
class Server(http.server.HTTPServer):
    def get_request(self):
        c, a = super().get_request()
        sys.stderr.write("accepted %s:%s\n" % a); sys.stderr.flush()
        return c, a
s = Server(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
open(sys.argv[1] + ".tmp", "w").write(str(s.server_port))
__import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()' "$state/port" 2>"$state/http.log" &
  local server=$! port=
  for _ in $(seq 50); do [ -s "$state/port" ] && break; sleep 0.1; done
  port=$(cat "$state/port")
  : >"$state/http.log"
  cat > "$ws/airlock.toml" <<'TOML'
[workspace]
root = "."
[network]
mode = "allowlist"
allow = ["pypi.test", "localhost"]
[commands]
allow = ["sh", "curl", "python3"]
[limits]
timeout = "30s"
TOML
  cat > "$ws/probe.py" <<'PY'
import errno, os, socket, subprocess, sys
print("env", os.environ.get("HTTPS_PROXY"), os.environ.get("ALL_PROXY"))
def attempt(name, fn):
    try:
        fn(); print(name, "ok")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
attempt("direct", lambda: socket.create_connection(("192.0.2.1", 443), timeout=3))
attempt("dns", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("192.0.2.53", 53)))
# The host's loopback server, straight: the sandbox's 127.0.0.1 is its own.
attempt("loop", lambda: socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3))
def curl(*args):
    p = subprocess.run(["curl", "-sS", "--max-time", "20", *args], capture_output=True, text=True)
    return (p.stdout + p.stderr).strip()
print("evil=" + curl("https://evil.test/"))
# localhost is in NO_PROXY: --noproxy "" sends it to the proxy all the same.
print("local=" + curl("--noproxy", "", "-o", "/dev/null", "-w", "%{http_code}", "http://localhost:%s/" % sys.argv[1]))
PY
  local o="$state/allowlist.json"
  (cd "$ws" && "$bin" run --backend "$backend" --json -- python3 probe.py "$port") >"$o"
  kill "$server" 2>/dev/null; wait "$server" 2>/dev/null
  j() { python3 -c "import json,sys; o=json.load(open('$o')); $1" 2>/dev/null; }
  check "$b: allowlist: the run ran (exit $(j 'print(o.get("exit_code"))'))" test "$(j 'print(o.get("exit_code"))')" = 0 || head -c 1500 "$o"
  check "$b: allowlist: proxy env inside" j 'sys.exit("env http://127.0.0.1:3128 socks5h://127.0.0.1:1080" not in o["stdout"])'
  check "$b: allowlist: the relay reaches the proxy, which refuses a host not listed (CONNECT 403)" \
    j 'sys.exit("evil=curl: (56) CONNECT tunnel failed, response 403" not in o["stdout"])' || head -c 1500 "$o"
  check "$b: allowlist: a listed host resolving to loopback is refused by the proxy (HTTP 403)" j 'sys.exit("local=403" not in o["stdout"])' || head -c 1500 "$o"
  check "$b: allowlist: the host's loopback server saw no connection" test ! -s "$state/http.log" || cat "$state/http.log"
  check "$b: allowlist: the proxy's refusals are recorded" j 'r={v["data"].get("reason") for v in o["violations"]}; sys.exit(not {"not_in_allowlist","resolved_to_blocked_address"} <= r)'
  if [ "$backend" = gvisor ]; then
    # The guest's only interface is the Sentry's loopback; gVisor has no
    # seccomp user notification, so nothing records these.
    check "$b: allowlist: direct connect and UDP DNS fail (EHOSTUNREACH: no route)" \
      j 'sys.exit(not ("direct EHOSTUNREACH" in o["stdout"] and "dns EHOSTUNREACH" in o["stdout"]))' || head -c 1500 "$o"
    check "$b: allowlist: a direct connect to the host's loopback server is refused (ECONNREFUSED: the guest's own loopback)" \
      j 'sys.exit("loop ECONNREFUSED" not in o["stdout"])' || head -c 1500 "$o"
    check "$b: allowlist: the direct attempts are not recorded (no seccomp user notification in gVisor)" \
      j 'sys.exit(any("not via proxy" in v["detail"] for v in o["violations"]))' || j 'print(o["violations"])'
  else
    check "$b: allowlist: direct connect, UDP DNS and the host's loopback refused (EACCES, netwatch)" \
      j 'sys.exit(not ("direct EACCES" in o["stdout"] and "dns EACCES" in o["stdout"] and "loop EACCES" in o["stdout"]))' || head -c 1500 "$o"
    check "$b: allowlist: the direct attempts are recorded as violations" \
      j 'd=[v["detail"] for v in o["violations"]]; sys.exit(not ("blocked: connect to 192.0.2.1:443 (not via proxy)" in d and "blocked: DNS query to 192.0.2.53:53 (not via proxy)" in d))' \
      || j 'print(o["violations"])'
  fi
  ls /run/airlock-oci 2>/dev/null | grep -q . && fail=$((fail + 1)) && echo "FAIL $b: a run's stage was left behind"
}

gvisor_host_uds() { # network none: a host unix socket in the workspace stays out of reach
  rm -rf "$ws"/* "$ws"/.[!.]* 2>/dev/null
  # A read-only workspace is a plain bind, through which runsc's gofer would
  # connect (with --host-uds=open) to the socket; an overlay would not.
  printf '[workspace]\nroot = "."\nmode = "ro"\n[commands]\nallow = ["python3"]\n[limits]\ntimeout = "20s"\n' > "$ws/airlock.toml"
  rm -f "$state/uds.log"
  python3 -c 'import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen()
open(sys.argv[2] + ".ready", "w").close()
while True:
    c, _ = s.accept(); open(sys.argv[2], "a").write("accepted\n"); c.close()' "$ws/host.sock" "$state/uds.log" &
  local server=$!
  for _ in $(seq 50); do [ -e "$state/uds.log.ready" ] && break; sleep 0.1; done
  out=$(cd "$ws" && "$bin" run --backend gvisor -- python3 -c '
import errno, socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("host.sock"); print("connected")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))' 2>&1)
  kill "$server" 2>/dev/null; wait "$server" 2>/dev/null
  check "gvisor: network none: a host unix socket in a read-only workspace cannot be connected to ($out), the host server saw nothing" \
    test "$out" != connected -a ! -s "$state/uds.log"
  rm -f "$ws/host.sock" "$state/uds.log.ready"
}

open_abstract() { # OCI runtime: network open shares the host's namespace, not its abstract sockets
  local rt=$1
  rm -rf "$ws"/* "$ws"/.[!.]* 2>/dev/null
  printf '[workspace]\nroot = "."\n[network]\nmode = "open"\n[commands]\nallow = ["python3"]\n[limits]\ntimeout = "20s"\n' > "$ws/airlock.toml"
  rm -f "$state/abstract.log" "$state/abstract.log.ready"
  # A listener on the host's own abstract name, as an X11 display, a D-Bus
  # bus or an old containerd shim has.
  python3 scripts/lib/abstract_probe.py listen "$state/abstract.log" "airlock-tiers-abstract-$$" &
  local server=$!
  for _ in $(seq 50); do [ -e "$state/abstract.log.ready" ] && break; sleep 0.1; done
  cp scripts/lib/abstract_probe.py "$ws/"
  out=$(cd "$ws" && AIRLOCK_OCI_RUNTIME=$rt "$bin" run --backend oci -- python3 abstract_probe.py attempt "airlock-tiers-abstract-$$" 2>&1)
  kill "$server" 2>/dev/null; wait "$server" 2>/dev/null
  check "$rt: network open: the host's abstract unix socket cannot be connected to, the container's own can ($out), the host listener saw nothing" \
    test "$out" = "EPERM connected" -a ! -s "$state/abstract.log"
  rm -f "$state/abstract.log.ready"
}

gvisor_host() { # a live guest that asked for nice -20 and oom_score_adj -1000, seen from the host
  rm -rf "$ws"/* "$ws"/.[!.]* 2>/dev/null
  printf '[workspace]\nroot = "."\n[commands]\nallow = ["python3"]\n[limits]\ntimeout = "20s"\n' > "$ws/airlock.toml"
  (cd "$ws" && "$bin" run --backend gvisor -- python3 -c '
import os, time
os.setpriority(os.PRIO_PROCESS, 0, -20)
open("/proc/self/oom_score_adj", "w").write("-1000")
print("held %d %s" % (os.getpriority(os.PRIO_PROCESS, 0), open("/proc/self/oom_score_adj").read().strip()), flush=True)
time.sleep(3)' >"$state/held.txt" 2>&1) &
  local runner=$! held=
  for _ in $(seq 100); do
    held=$(sed -n 's/^held //p' "$state/held.txt") && [ -n "$held" ] && break
    sleep 0.1
  done
  check "gvisor: the guest holds nice -20 and oom_score_adj -1000 inside ($held)" test "$held" = "-20 -1000"
  out=$(python3 tests/escape/tiers/gvisor_host.py)
  local rc=$?
  check "gvisor: on the host, runsc's processes are not root, have no_new_privs and seccomp, keep nice and oom_score_adj (${out##*$'\n'})" test "$rc" = 0 || echo "$out"
  wait "$runner"
}

if [ "${TIERS_CRUN:-1}" = 1 ]; then
  smoke oci crun
  allowlist oci crun
fi
if [ "${TIERS_RUNC:-1}" = 1 ]; then
  smoke oci runc
  allowlist oci runc
fi
[ "${TIERS_CRUN:-1}" = 1 ] && open_abstract crun
[ "${TIERS_RUNC:-1}" = 1 ] && open_abstract runc
if [ "${TIERS_YOUKI:-1}" = 1 ]; then
  if [ -x /usr/local/bin/youki ]; then
    smoke oci youki
  else
    echo "NOT RUN: the youki smoke checks: youki is not installed or cached under $youki_cache (TIERS_YOUKI_BUILD=1 builds it, about 14 minutes)"
  fi
fi
if [ "${TIERS_GVISOR:-1}" = 1 ]; then
  smoke gvisor
  allowlist gvisor
  gvisor_host_uds
  gvisor_host
fi
unset AIRLOCK_OCI_RUNTIME
# Bytes through the relay and the proxy to loopback servers (the proxy's
# test-only allowance for them), with crun, runc and gVisor.
e2e=(--skip native)
[ "${TIERS_CRUN:-1}" = 1 ] || e2e+=(--skip oci_crun)
[ "${TIERS_RUNC:-1}" = 1 ] || e2e+=(--skip oci_runc)
e2e_on=oci
if [ "${TIERS_GVISOR:-1}" = 1 ]; then e2e_on+=", gvisor"; else e2e+=(--skip gvisor); fi
if CARGO_INCREMENTAL=0 cargo test -q --locked --workspace --test sandbox_e2e -- "${e2e[@]}"; then
  pass=$((pass + 1)); echo "ok   allowlist end to end through the relay and the proxy ($e2e_on)"
else
  fail=$((fail + 1)); echo "FAIL allowlist end to end through the relay and the proxy ($e2e_on)"
fi
echo "$pass passed, $fail failed"
status=0
[ "$fail" = 0 ] || status=1
if [ "${TIERS_ESCAPE:-1}" = 1 ]; then
  mkdir -p target/escape
  python3 tests/escape/run.py --airlock "$bin" --backend-tier oci \
    --report target/escape/report-oci.json ${ESCAPE_ARGS:-} || status=1
  python3 tests/escape/run.py --airlock "$bin" --backend-tier oci --category network --network allowlist \
    --report target/escape/report-oci-allowlist.json ${ESCAPE_ARGS:-} || status=1
  if [ "${TIERS_GVISOR:-1}" = 1 ] && [ "${TIERS_GVISOR_CORPUS:-1}" = 1 ]; then
    python3 tests/escape/run.py --airlock "$bin" --backend-tier gvisor \
      --report target/escape/report-gvisor.json ${ESCAPE_ARGS:-} || status=1
    python3 tests/escape/run.py --airlock "$bin" --backend-tier gvisor --category network --network allowlist \
      --report target/escape/report-gvisor-allowlist.json ${ESCAPE_ARGS:-} || status=1
  else
    echo "NOT RUN: the escape corpus on gVisor (TIERS_GVISOR=0 or TIERS_GVISOR_CORPUS=0)"
  fi
fi
exit $status
