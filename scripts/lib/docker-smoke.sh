# The Docker-API backend's smoke checks, shared by 58-docker.sh (dockerd) and
# 58b-podman.sh (podman's service). The caller has set: bin (airlock), ws (an
# empty workspace), d (a private directory; `$d/nothing` must not exist),
# AIRLOCK_STATE_DIR, AIRLOCK_DOCKER_SOCKET and AIRLOCK_DOCKER_IMAGE, and
# defines containers (prints how many containers carry the airlock.run label);
# tag, if set, prefixes every check's name. Sets pass and fail.
pass=0 fail=0
check() { # name, then a command that must succeed
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "ok   ${tag:+$tag: }$name"; else fail=$((fail + 1)); echo "FAIL ${tag:+$tag: }$name"; return 1; fi
}
field() { python3 -c "import json,sys; print(json.load(sys.stdin).get('$1'))"; }
run() { (cd "$ws" && "$bin" run --backend docker "$@" </dev/null); }

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
print(n < 64)
# Wait for the children, as a build tool would: the helper names a pids kill
# from the cgroup of the container while it runs (the runtime removes that
# cgroup when the container ends, so a program exiting within a tick of the
# refused fork ends with its own status; the limit held either way).
while True:
    try:
        os.wait()
    except ChildProcessError:
        break')
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

