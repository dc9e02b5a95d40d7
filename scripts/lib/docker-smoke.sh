# The Docker-API backend's smoke checks, shared by 58-docker.sh (dockerd) and
# 58b-podman.sh (podman's service). The caller has set: bin (airlock), ws (an
# empty workspace), d (a private directory; `$d/nothing` must not exist),
# AIRLOCK_STATE_DIR, AIRLOCK_DOCKER_SOCKET, AIRLOCK_DOCKER_IMAGE and
# AIRLOCK_RELAY (scripts/build-relay's static binary), and defines containers
# (prints how many containers carry the airlock.run label) and import_image
# (imports a root tarball, on stdin, as the image named by its argument); tag,
# if set, prefixes every check's name. Sets pass and fail, and smoke_pids (the
# processes the allowlist checks start, for the caller's cleanup to kill by
# PID should the script end early).
pass=0 fail=0 smoke_pids=()
# The sandbox's host uid and gid (SANDBOX_HOST_UID in native/namespaces.rs).
sandbox_uid=2000000000
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
check "not root, no capabilities, no_new_privs, seccomp ($out)" test "$out" = "$sandbox_uid 0000000000000000 1 2"
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
# Nothing of the host's sysfs; podman mounts the container's own cgroup tree
# at /sys/fs/cgroup over the empty /sys, which is all it may hold.
out=$(run -- python3 -c 'import os
extra = sorted(set(os.listdir("/sys")) - {"fs"})
fs = sorted(set(os.listdir("/sys/fs")) - {"cgroup"}) if os.path.isdir("/sys/fs") else []
print(extra, fs, os.path.exists("/sys/kernel/vmcoreinfo"), os.path.exists("/sys/firmware"))' 2>&1)
check "/sys holds no host sysfs, at most the container's cgroup tree ($out)" test "$out" = "[] [] False False"
check "no container is left" test "$(containers)" = 0
check "no stage is left" test -z "$(ls -A /run/airlock-docker 2>/dev/null)"

# Refusals name what is refused and what would allow it.
out=$(AIRLOCK_DOCKER_IMAGE=airlock-missing:none run -- true 2>&1)
check "a missing image is refused with a hint, never pulled" grep -q "never pulls.*Hint" <<<"$out" || echo "$out"
out=$(AIRLOCK_DOCKER_SOCKET=$d/nothing run -- true 2>&1)
check "a missing daemon is refused with a hint" grep -q "Hint" <<<"$out" || echo "$out"

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

# A second airlock on the same daemon from another pid namespace (a CI
# container, another host) cannot see the first one's helper: its sweep must
# leave that run's container and stage alone.
out1=$(mktemp)
(cd "$ws" && exec "$bin" run --backend docker --json -- sh -c 'sleep 3; echo finished') >"$out1" 2>/dev/null &
first=$!
for _ in $(seq 50); do [ "$(containers)" -gt 0 ] && break; sleep 0.1; done
(cd "$ws" && unshare -pf --mount-proc "$bin" run --backend docker -- true) >/dev/null 2>&1
wait "$first"
check "a run from another pid namespace does not sweep a live run ($(field stdout <"$out1" | tr -d '\n'))" \
  test "$(field stdout <"$out1")" = finished
rm -f "$out1"

# A live run's stage is in the host's mount namespace (the daemon resolves
# its bind sources there) and root's alone: another local user can neither
# list it nor read the staged workspace through it (the overlay's merged
# root is the upper layer's 0755 directory, so only the stage's own 0700
# directories keep them out).
other=airlock-u1
id -u "$other" >/dev/null 2>&1 || other=nobody
(cd "$ws" && exec "$bin" run --backend docker -- sleep 4) >/dev/null 2>&1 &
caller=$!
for _ in $(seq 50); do [ "$(containers)" -gt 0 ] && break; sleep 0.1; done
stage=$(ls -d /run/airlock-docker/*/ 2>/dev/null | head -1)
modes=$(stat -c %a /run/airlock-docker "${stage:-/nonexistent}" 2>&1 | tr '\n' ' ')
check "a live run's stage and its base are 0700 ($modes)" test "$modes" = "700 700 "
peeks=()
for peek in "ls /run/airlock-docker" "ls $stage" "ls ${stage}merged" "cat ${stage}merged/in.txt" "cat ${stage}lower/in.txt"; do
  [ -n "$stage" ] && runuser -u "$other" -- sh -c "$peek" >/dev/null 2>&1 && peeks+=("$peek")
done
check "another local user ($other) cannot list or read a live run's stage (${peeks[*]:-nothing got through})" test -n "$stage" -a ${#peeks[@]} = 0
wait "$caller" 2>/dev/null

# -- Network allowlist mode: the in-sandbox relay (airlock-relay exec) in
# front of the command, NetworkMode none. Two network namespaces made here and
# joined by a veth pair, nothing else: airlock (and its egress proxy) runs in
# one, an HTTP server in the other on 11.0.0.1, an address the proxy does not
# refuse as private or as this host's own (no packet can leave the pair). The
# daemon stays in the host's namespace, where this script also starts a
# loopback listener that no direct connection may reach.
unshare -n sleep 600 & smoke_pids+=($!); ns_air=$!
unshare -n sleep 600 & smoke_pids+=($!); ns_world=$!
sleep 0.2
netns_ok=0
if ip link add airlock-de0 netns "$ns_air" type veth peer name airlock-de1 netns "$ns_world" \
  && nsenter -t "$ns_air" -n sh -c 'ip addr add 11.0.0.2/24 dev airlock-de0 && ip link set airlock-de0 up && ip link set lo up' \
  && nsenter -t "$ns_world" -n sh -c 'ip addr add 11.0.0.1/24 dev airlock-de1 && ip link set airlock-de1 up && ip link set lo up'; then
  netns_ok=1
fi
check "allowlist: two network namespaces joined by a veth pair" test "$netns_ok" = 1
www=$d/www
mkdir -p "$www"
echo through-the-relay > "$www/small.txt"
head -c 3000000 /dev/urandom > "$www/big.bin"
big_sha=$(sha256sum "$www/big.bin" | cut -d' ' -f1)
nsenter -t "$ns_world" -n python3 -m http.server --bind 11.0.0.1 8080 --directory "$www" >/dev/null 2>&1 &
smoke_pids+=($!)
# The host's loopback listener: it records every connection it accepts.
python3 -c 'import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
__import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, a = s.accept(); open(sys.argv[2], "a").write("accepted %s\n" % (a,)); c.close()' "$d/lport" "$d/listener.log" &
smoke_pids+=($!)
for _ in $(seq 50); do
  [ -s "$d/lport" ] && nsenter -t "$ns_air" -n python3 -c 'import urllib.request; urllib.request.urlopen("http://11.0.0.1:8080/small.txt", timeout=1)' 2>/dev/null && break
  sleep 0.1
done
lport=$(cat "$d/lport")
aws=$d/allow-ws
astate=$d/allow-state
mkdir -p "$aws" "$astate"
cp "$(dirname "${BASH_SOURCE[0]}")/allowlist-policy.toml" "$aws/airlock.toml"
cat > "$aws/egress.py" <<'PY'
import errno, hashlib, os, socket, sys, time, urllib.request
U = "http://11.0.0.1:8080"
print("env", os.environ.get("HTTPS_PROXY"), os.environ.get("ALL_PROXY"))
def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.read()
    except Exception as e:
        return "ERR " + str(e)[:100]
big = fetch(U + "/big.bin")
print("urllib-big", hashlib.sha256(big).hexdigest() if isinstance(big, bytes) else big)
print("urllib-small", fetch(U + "/small.txt").decode().strip())
print("urllib-refused", fetch("http://evil.test/x"))
def socks(host, port, path):
    s = socket.create_connection(("127.0.0.1", 1080), timeout=30)
    s.sendall(b"\x05\x01\x00")
    if s.recv(2) != b"\x05\x00":
        return "no-auth refused"
    h = host.encode()
    s.sendall(b"\x05\x01\x00\x03" + bytes([len(h)]) + h + port.to_bytes(2, "big"))
    head = s.recv(4)
    if len(head) < 4 or head[1] != 0:
        return "refused %r" % head[:2]
    # The bound address (IPv4, IPv6 or a name) and port, then the tunnel.
    n = {1: 4, 4: 16}.get(head[3])
    s.recv((s.recv(1)[0] if n is None else n) + 2)
    s.sendall(b"GET " + path.encode() + b" HTTP/1.0\r\nHost: " + h + b"\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.split(b"\r\n\r\n", 1)[-1].decode().strip()
print("socks", socks("11.0.0.1", 8080, "/small.txt"))
def attempt(name, addr):
    try:
        socket.create_connection(addr, timeout=5)
        print(name, "connected")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
attempt("direct", ("11.0.0.1", 8080))
attempt("loopback", ("127.0.0.1", int(sys.argv[1])))
def change(name, fn):
    try:
        fn(); print(name, "done")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
change("relay-chmod", lambda: os.chmod("/run/airlock/relay", 0o777))
# The relay runs from it as PID 1, which the command cannot end, so a write
# meets ETXTBSY first; the bind's own mode shows in its mount options.
change("relay-write", lambda: open("/run/airlock/relay", "r+b").write(b"\0"))
change("relay-utime", lambda: os.utime("/run/airlock/relay", (0, 0)))
for m in open("/proc/self/mountinfo"):
    f = m.split()
    if f[4] == "/run/airlock/relay":
        print("relay-mount", f[5].split(",")[0])
# An init-like wait for every child finds only the command's own (the relay
# is its parent, not its child), even with an orphaned grandchild about.
import subprocess
subprocess.Popen(["sh", "-c", "sleep 0.2 &"])
t = time.time()
try:
    while True:
        os.wait()
except ChildProcessError:
    pass
print("wait-all", "returned" if time.time() - t < 5 else "held")
# Connections held open through the relay cost the command no tasks: 40 of
# them under pids = 64, and the command still forks.
held = [socket.create_connection(("127.0.0.1", 3128), timeout=5) for _ in range(40)]
time.sleep(0.3)
open_ = 0
for c in held:
    c.setblocking(False)
    try:
        c.recv(1)
    except BlockingIOError:
        open_ += 1
forks = sum(subprocess.call(["true"]) == 0 for _ in range(10))
print("held", open_, "forks", forks)
for c in held:
    c.close()
st = os.stat("/run/airlock/proxy.sock")
print("socket-inside", st.st_uid, oct(st.st_mode & 0o777))
sys.stdout.flush()
# Long enough for the host side to look at the proxy's own socket.
time.sleep(2)
PY
# The relay the container gets is a copy owned by the container's uid: only
# the read-only bind, not its owner, keeps the command from writing it.
cp "$AIRLOCK_RELAY" "$d/relay-owned"
chown "$sandbox_uid:$sandbox_uid" "$d/relay-owned"
chmod 0755 "$d/relay-owned"
relay_sha=$(sha256sum "$d/relay-owned" | cut -d' ' -f1)
(cd "$aws" && AIRLOCK_STATE_DIR=$astate AIRLOCK_RELAY=$d/relay-owned timeout -s KILL 120 \
  nsenter -t "$ns_air" -n "$bin" run --backend docker --json -- python3 egress.py "$lport" >"$d/allow.json" 2>"$d/allow.err") &
runner=$!
host_sock=
for _ in $(seq 200); do
  s=$(find "$astate/proxy" -type s 2>/dev/null | head -1)
  [ -n "$s" ] && host_sock=$(stat -c '%u %a' "$s") && break
  sleep 0.05
done
wait "$runner"
out=$(cat "$d/allow.json")
stdout=$(echo "$out" | field stdout)
line() { sed -n "s/^$1 //p" <<<"$stdout"; }
check "allowlist: the run ran (exit $(echo "$out" | field exit_code))" test "$(echo "$out" | field exit_code)" = 0 || { echo "$out" | head -c 2000; head -c 1000 "$d/allow.err"; }
check "allowlist: proxy env inside ($(line env))" test "$(line env)" = "http://127.0.0.1:3128 socks5h://127.0.0.1:1080"
check "allowlist: urllib fetches 3 MB through the HTTP port, byte for byte" test "$(line urllib-big)" = "$big_sha"
check "allowlist: urllib through the HTTP port ($(line urllib-small))" test "$(line urllib-small)" = through-the-relay
check "allowlist: a SOCKS5 client through :1080 ($(line socks))" test "$(line socks)" = through-the-relay
check "allowlist: a host outside the allowlist is refused by the proxy ($(line urllib-refused))" grep -q "HTTP Error 403" <<<"$(line urllib-refused)"
check "allowlist: a direct connect finds no route out ($(line direct))" test "$(line direct)" = ENETUNREACH
check "allowlist: a direct connect to the host's loopback listener fails ($(line loopback))" test "$(line loopback)" = ECONNREFUSED
check "allowlist: the host's loopback listener saw nothing" test ! -s "$d/listener.log"
check "allowlist: the relay binary cannot be written or changed from inside, even by its owner (write $(line relay-write), chmod $(line relay-chmod), utime $(line relay-utime), mount $(line relay-mount))" \
  test "$(line relay-chmod) $(line relay-utime) $(line relay-mount)" = "EROFS EROFS ro" -a "$(line relay-write)" != done
check "allowlist: a wait for every child returns: the relay is not the command's child ($(line wait-all))" test "$(line wait-all)" = returned
check "allowlist: 40 connections held through the relay under pids = 64, and the command still forks ($(line held))" test "$(line held)" = "40 forks 10"
check "allowlist: the relay binary on the host is unchanged" test "$(sha256sum "$d/relay-owned" | cut -d' ' -f1)" = "$relay_sha"
check "allowlist: the container's user reaches the socket through an idmapped bind ($(line socket-inside))" test "$(line socket-inside)" = "$sandbox_uid 0o600"
check "allowlist: the proxy's socket itself stays root's 0600 ($host_sock)" test "$host_sock" = "0 600"
v=$(echo "$out" | python3 -c 'import json,sys; o=json.load(sys.stdin); print("|".join(sorted(set(x["kind"] + ":" + x["detail"] for x in o["violations"]))))' 2>/dev/null)
check "allowlist: the refusal is in the outcome's violations" grep -q "network:blocked: evil.test (not in allowlist)" <<<"$v" || echo "$v"
check "allowlist: the allowed connections are logged" grep -q "network_connection:" <<<"$v" || echo "$v"
check "allowlist: the audit record holds the proxy's refusal" grep -q '"not_in_allowlist"' <<<"$(cat "$astate"/audit/*.jsonl 2>/dev/null)"
check "allowlist: the proxy context is gone after the run" test -z "$(ls "$astate/proxy" 2>/dev/null)"
check "allowlist: no container is left" test "$(containers)" = 0
check "allowlist: no stage is left" test -z "$(ls -A /run/airlock-docker 2>/dev/null)"

# What says so without running anything.
out=$(cd "$aws" && "$bin" policy explain airlock.toml --backend docker -c 'python3 egress.py' 2>&1)
check "allowlist: policy explain names the relay and the unlogged direct connections" \
  grep -q "in-sandbox relay (airlock-relay.*not logged as a violation" <<<"$(tr '\n' ' ' <<<"$out")" || echo "$out"
out=$("$bin" doctor --backend docker 2>&1)
check "allowlist: doctor --backend docker names the relay" grep -q "airlock-relay" <<<"$out" || echo "$out"

# Refused before anything starts, each with a hint.
arun() { (cd "$aws" && AIRLOCK_STATE_DIR=$astate nsenter -t "$ns_air" -n "$bin" run --backend docker "$@" </dev/null); }
out=$(AIRLOCK_RELAY=$d/nothing arun -- python3 -c pass 2>&1)
check "allowlist: a missing relay binary is refused with a hint" grep -q "relay.*Hint: build it with .scripts/build-relay" <<<"$out" || echo "$out"
cp "$AIRLOCK_RELAY" "$d/relay-0700" && chmod 0700 "$d/relay-0700"
out=$(AIRLOCK_RELAY=$d/relay-0700 arun -- python3 -c pass 2>&1)
check "allowlist: a relay the container's user cannot execute is refused with a hint" grep -q "uid $sandbox_uid; Hint: .chmod 0755" <<<"$out" || echo "$out"
mkdir -p "$d/norun" && touch "$d/norun/run"
tar -C "$d/norun" -c . | import_image airlock-norun:test
out=$(AIRLOCK_DOCKER_IMAGE=airlock-norun:test arun -- python3 -c pass 2>&1)
check "allowlist: an image whose /run is not a directory is refused with a hint" grep -q "under /run/airlock, and the image's /run .*Hint: make /run a directory" <<<"$out" || echo "$out"
check "allowlist: no container is left after the refusals" test "$(containers)" = 0
for p in "${smoke_pids[@]}"; do kill "$p" 2>/dev/null; done
smoke_pids=()

# Network open: the container shares the host's network namespace, and with
# it the host's abstract unix sockets (an X11 display, D-Bus buses, an old
# containerd-shim). The in-sandbox relay scopes them with landlock before it
# becomes the command; the container's own abstract sockets still work.
ows=$(mktemp -d)
printf '[workspace]\nroot = "."\n[network]\nmode = "open"\n[commands]\nallow = ["python3"]\n[limits]\ntimeout = "20s"\n' > "$ows/airlock.toml"
orun() { (cd "$ows" && "$bin" run --backend docker "$@" </dev/null); }
rm -f "$d/abstract.log" "$d/abstract.log.ready"
python3 scripts/lib/abstract_probe.py listen "$d/abstract.log" "airlock-docker-abstract-$$" &
abstract_server=$!
smoke_pids+=("$abstract_server")
for _ in $(seq 50); do [ -e "$d/abstract.log.ready" ] && break; sleep 0.1; done
cp scripts/lib/abstract_probe.py "$ows/"
out=$(orun -- python3 abstract_probe.py attempt "airlock-docker-abstract-$$" 2>&1)
kill "$abstract_server" 2>/dev/null; wait "$abstract_server" 2>/dev/null
check "open: the host's abstract unix socket cannot be connected to, the container's own can ($out)" test "$out" = "EPERM connected"
check "open: the host listener on the abstract name saw nothing" test ! -s "$d/abstract.log"
out=$(cd "$ows" && AIRLOCK_RELAY=$d/nothing "$bin" run --backend docker -- python3 -c pass </dev/null 2>&1)
check "open: without the relay binary the run is refused with a hint" grep -q "abstract unix sockets.*Hint: build it with .scripts/build-relay" <<<"$out" || echo "$out"
check "open: no container is left" test "$(containers)" = 0
rm -rf "$ows" "$d/abstract.log.ready"
