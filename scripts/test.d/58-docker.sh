#!/usr/bin/env bash
# The Docker-API backend as a user meets it: dockerd from Debian's packages
# (installed idempotently), started here with private roots and a private
# socket, an image built without any registry (debootstrap from Debian's
# packages, cached under target/docker-image, then `docker import`),
# `airlock run --backend docker` smoke checks (output, exit codes, changes and
# --apply, network none, limits, refusals, containers and stages removed, a
# killed caller), then the escape corpus on the docker backend
# (tests/escape/tiers/docker.toml lists the cases that do not apply).
#   DOCKER_ESCAPE=0   skip the corpus
# Skips (does not fail) when dockerd cannot run here, saying why.
set -uo pipefail
cd "$(dirname "$0")/../.."
skip() { echo "SKIPPED: the docker backend: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "it stages workspaces as root; running as uid $(id -u)"
# shellcheck source=scripts/lib/docker.sh
. scripts/lib/docker.sh
docker_install || skip "could not install docker.io and debootstrap from Debian's packages"
CARGO_INCREMENTAL=0 cargo build -q -p airlock --locked || exit 1
bin=$PWD/target/debug/airlock
docker=$DOCKER_CLI
image=airlock-sandbox:test
cache=$PWD/target/docker-image

d=$(mktemp -d /tmp/airlock-dockerd.XXXXXX)
state=$(mktemp -d)
ws=$(mktemp -d)
cleanup() {
  docker_stop "$d"
  rm -rf "$state" "$ws"
}
trap cleanup EXIT

# The daemon: private data and exec roots, a private socket, no host
# networking changes (no bridge, no iptables).
docker_start "$d" 2>&1 || skip "dockerd did not start here (its log's tail is above)"

# The image: a minimal Debian root with python3, built once from Debian's packages.
if ! docker_image "$d/sock" "$cache" "$image"; then
  [ -f "$cache/rootfs-py-git.tar" ] && exit 1
  skip "debootstrap failed"
fi

export AIRLOCK_STATE_DIR=$state AIRLOCK_DOCKER_SOCKET=$d/sock AIRLOCK_DOCKER_IMAGE=$image
pass=0 fail=0
check() { # name, then a command that must succeed
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "ok   $name"; else fail=$((fail + 1)); echo "FAIL $name"; return 1; fi
}
field() { python3 -c "import json,sys; print(json.load(sys.stdin).get('$1'))"; }
run() { (cd "$ws" && "$bin" run --backend docker "$@" </dev/null); }
containers() { "$docker" -H "unix://$d/sock" ps -aq --filter label=airlock.run | wc -l; }

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
check "doctor --backend docker is available" "$bin" doctor --backend docker >/dev/null
out=$(run -- cat in.txt)
check "a command runs and reads the workspace" test "$out" = hello
out=$(run --json -- python3 -c 'raise SystemExit(7)')
check "the exit code comes back" test "$(echo "$out" | field exit_code)" = 7 || echo "$out"
out=$(echo piped | (cd "$ws" && "$bin" run --backend docker -- cat 2>&1))
check "stdin reaches the command ($out)" test "$out" = piped
out=$(run --json -- python3 -c 'open("new.txt","w").write("x"); import os; os.remove("in.txt")')
check "changes are reported (added and deleted)" test "$(echo "$out" | python3 -c 'import json,sys; print(sorted(c["kind"] for c in json.load(sys.stdin)["changes"]))')" = "['added', 'deleted']"
check "overlay: the host workspace is unchanged" test -f "$ws/in.txt" -a ! -e "$ws/new.txt"
run --apply -- sh -c 'echo y > kept.txt' >/dev/null 2>&1
check "--apply copies the change back" test "$(cat "$ws/kept.txt" 2>/dev/null)" = y
check "an applied file belongs to the workspace's owner" test "$(stat -c %u "$ws/kept.txt" 2>/dev/null)" = "$(stat -c %u "$ws")"
out=$(run -- python3 -c 'print(sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]))' 2>&1)
check "network none: loopback only ($out)" test "$out" = "['lo']"
out=$(run -- python3 -c 'import os; print(os.getuid(), open("/proc/self/status").read().split("CapEff:")[1].split()[0], open("/proc/self/status").read().split("NoNewPrivs:")[1].split()[0], open("/proc/self/status").read().split("Seccomp:")[1].split()[0])' 2>&1)
check "not root, no capabilities, no_new_privs, seccomp ($out)" test "$out" = "100000 0000000000000000 1 2"
out=$(run -- python3 -c 'open("/usr/x","w")' 2>&1)
check "the image's root is read-only" grep -q "Read-only file system" <<<"$out"
out=$(run --json -- sh -c 'sleep 30')
check "the timeout kills the run" test "$(echo "$out" | field killed_by)" = timeout
out=$(run --json -- python3 -c 'x = bytearray(400 << 20); print(len(x))')
check "memory beyond limits.memory ends the run as memory" test "$(echo "$out" | field killed_by)" = memory || echo "$out" | head -30
out=$(run --json -- python3 -c '
import os
n = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            import time; time.sleep(3); os._exit(0)
        n += 1
except OSError:
    pass
print(n < 64)')
check "a fork past limits.pids ends the run as pids" test "$(echo "$out" | field killed_by)" = pids
out=$(run --json -- python3 -c 'print("y" * 100000)')
check "output beyond limits.output is cut and killed" test "$(echo "$out" | field truncated)" = True
out=$(run -- python3 -c 'import os; print(os.path.exists("/etc/shadow") and os.access("/etc/shadow", os.R_OK), os.path.exists("/root/.ssh"), os.path.exists("/work"))' 2>&1)
check "host secrets are not in the view ($out)" test "$out" = "False False False"
check "no container is left" test "$(containers)" = 0
check "no stage is left" test -z "$(ls -A /run/airlock-docker 2>/dev/null)"

# Refusals name what is refused and what would allow it.
out=$(AIRLOCK_DOCKER_IMAGE=airlock-missing:none run -- true 2>&1)
check "a missing image is refused with a hint, never pulled" grep -q "never pulls.*Hint" <<<"$out" || echo "$out"
out=$(AIRLOCK_DOCKER_SOCKET=$d/nothing run -- true 2>&1)
check "a missing daemon is refused with a hint" grep -q "Hint" <<<"$out" || echo "$out"
cp "$ws/airlock.toml" "$ws/airlock.toml.bak"
printf '[network]\nmode = "allowlist"\nallow = ["example.test"]\n' >> "$ws/airlock.toml"
out=$(run -- true 2>&1)
check "allowlist network is refused by the capability report" grep -q "cannot enforce.*network" <<<"$out" || echo "$out"
mv "$ws/airlock.toml.bak" "$ws/airlock.toml"

# A caller killed outright: its helper removes the container; a helper
# killed outright: the next run sweeps what it left.
(cd "$ws" && exec "$bin" run --backend docker -- sleep 4) >/dev/null 2>&1 &
caller=$!
for _ in $(seq 50); do [ "$(containers)" -gt 0 ] && break; sleep 0.1; done
kill -9 "$caller"; wait "$caller" 2>/dev/null
for _ in $(seq 50); do [ "$(containers)" = 0 ] && break; sleep 0.1; done
check "a killed caller's container is removed" test "$(containers)" = 0
(cd "$ws" && exec "$bin" run --backend docker -- sleep 4) >/dev/null 2>&1 &
caller=$!
for _ in $(seq 50); do [ "$(containers)" -gt 0 ] && break; sleep 0.1; done
helper=$(pgrep -P "$caller" | head -1)
[ -n "$helper" ] && kill -9 "$helper"
wait "$caller" 2>/dev/null
run -- true >/dev/null 2>&1
check "a killed helper's container and stage are swept by the next run" test "$(containers)" = 0 -a -z "$(ls -A /run/airlock-docker 2>/dev/null)"

echo "$pass passed, $fail failed"
status=0
[ "$fail" = 0 ] || status=1
if [ "${DOCKER_ESCAPE:-1}" = 1 ]; then
  mkdir -p target/escape
  python3 tests/escape/run.py --airlock "$bin" --backend-tier docker \
    --report target/escape/report-docker.json ${ESCAPE_ARGS:-} || status=1
fi
exit $status
