#!/usr/bin/env bash
# The Docker-API backend against podman's service instead of dockerd: podman
# from Debian's packages (installed idempotently), `podman system service`
# started here with private storage and a private socket, the same locally
# built image as 58-docker.sh (debootstrap, cached per machine by scripts/lib/docker.sh,
# then `podman import`), the same smoke checks (scripts/lib/docker-smoke.sh),
# then the escape corpus on the docker tier through podman's socket (and its
# network category with `--network allowlist`).
# podman's own quirks the backend handles (see src/docker/config.rs): it reads
# `seccomp=` as a file path, ignores HostConfig.MaskedPaths/ReadonlyPaths (the
# backend masks with `mask=`), gives containers an RLIMIT_NPROC its runtime
# cannot set without CAP_SYS_RESOURCE, keeps cgroups under libpod_parent, and
# does not report OOM kills with runc on cgroup v1 (the backend reads the
# cgroup's counter).
#   PODMAN_ESCAPE=0    skip the corpus
#   PODMAN_RUNTIME=X   the service's OCI runtime (default: runc on a host that
#                      mixes cgroup v1 and v2, whose layout Debian's crun 1.8
#                      refuses; else podman's default, crun)
# Skips (does not fail) when podman cannot run here, saying why.
set -uo pipefail
cd "$(dirname "$0")/../.."
skip() { echo "SKIPPED: the docker backend on podman: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "it stages workspaces as root; running as uid $(id -u)"
hybrid=0
[ -f /sys/fs/cgroup/unified/cgroup.controllers ] && hybrid=1
runtime=${PODMAN_RUNTIME:-}
[ -z "$runtime" ] && [ "$hybrid" = 1 ] && runtime=runc
need=()
command -v podman >/dev/null || need+=(podman)
[ -n "$runtime" ] && ! command -v "$runtime" >/dev/null && need+=("$runtime")
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null \
    || skip "could not install ${need[*]} from Debian's packages"
fi
CARGO_INCREMENTAL=0 cargo build -q -p airlock --locked || exit 1
bin=$PWD/target/debug/airlock
# Network allowlist mode's in-sandbox relay, linked statically.
relay=$(scripts/build-relay) || exit 1
image=airlock-sandbox:test

d=$(mktemp -d /tmp/airlock-test-podman.XXXXXX)
state=$(mktemp -d)
ws=$(mktemp -d)
# Private storage, run and temporary roots: nothing of the host's podman is
# used or changed. cgroupfs: no systemd is needed to place containers.
P=(podman --root "$d/root" --runroot "$d/run" --tmpdir "$d/tmp" --cgroup-manager cgroupfs
   --events-backend file ${runtime:+--runtime "$runtime"})
ppid=
cleanup() {
  # What the smoke checks started, by PID (when they ended early).
  for p in ${smoke_pids[@]+"${smoke_pids[@]}"}; do kill "$p" 2>/dev/null; done
  if [ -n "$ppid" ] && kill -0 "$ppid" 2>/dev/null; then
    kill "$ppid"
    for _ in $(seq 50); do kill -0 "$ppid" 2>/dev/null || break; sleep 0.2; done
  fi
  # The storage's overlay and shm mounts, deepest first.
  awk -v d="$d/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r | xargs -r -n1 umount -l
  rm -rf "$d" "$state" "$ws"
}
trap cleanup EXIT

shown=$runtime
[ -z "$shown" ] && shown="crun, the default"
[ "$hybrid" = 1 ] && shown="$shown (hybrid cgroup host)"
echo "podman $(podman --version | awk '{print $3}'), runtime $shown"
# From its private directory: conmon writes a file named `oom` into the
# service's working directory at every OOM kill (the memory checks make one),
# which would otherwise land in the checkout.
(cd "$d" && exec "${P[@]}" system service --time=0 "unix://$d/sock" >"$d/service.log" 2>&1) &
ppid=$!
up() { [ "$(curl -s --max-time 2 --unix-socket "$d/sock" http://d/_ping)" = OK ]; }
for _ in $(seq 100); do
  up && break
  kill -0 "$ppid" 2>/dev/null || break
  sleep 0.2
done
if ! up; then
  tail -5 "$d/service.log"
  skip "podman's service did not start here (its log's tail is above)"
fi

# shellcheck source=scripts/lib/docker.sh
. scripts/lib/docker.sh
docker_rootfs || skip "debootstrap failed"
"${P[@]}" import "$DOCKER_ROOTFS" "$image" >/dev/null || exit 1

export AIRLOCK_STATE_DIR=$state AIRLOCK_DOCKER_SOCKET=unix://$d/sock AIRLOCK_DOCKER_IMAGE=$image AIRLOCK_RELAY=$relay
containers() { "${P[@]}" ps -aq --filter label=airlock.run | wc -l; }
import_image() { "${P[@]}" import -q - "$1" >/dev/null; }
tag=podman
# shellcheck source=scripts/lib/docker-smoke.sh
. scripts/lib/docker-smoke.sh

# What podman's service would have ignored: a path the policy hides is
# masked (its `mask=`), not shown.
cp "$ws/airlock.toml" "$ws/airlock.toml.bak"
printf '[filesystem]\nhide = ["%s/secret.txt"]\n' "$ws" >> "$ws/airlock.toml"
echo s3cr3t > "$ws/secret.txt"
out=$(run -- cat secret.txt 2>&1)
check "a hidden workspace path is masked ($out)" test -z "$out"
mv "$ws/airlock.toml.bak" "$ws/airlock.toml"
rm -f "$ws/secret.txt"

echo "$pass passed, $fail failed"
status=0
[ "$fail" = 0 ] || status=1
if [ "${PODMAN_ESCAPE:-1}" = 1 ]; then
  mkdir -p target/escape
  python3 tests/escape/run.py --airlock "$bin" --backend-tier podman \
    --report target/escape/report-podman.json ${ESCAPE_ARGS:-} || status=1
  python3 tests/escape/run.py --airlock "$bin" --backend-tier podman --category network --network allowlist \
    --report target/escape/report-podman-allowlist.json ${ESCAPE_ARGS:-} || status=1
else
  echo "NOT RUN: the escape corpus on podman (PODMAN_ESCAPE=0)"
fi
exit $status
