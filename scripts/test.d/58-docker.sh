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
need=()
[ -x /usr/bin/dockerd ] || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null \
    || skip "could not install ${need[*]} from Debian's packages"
fi
CARGO_INCREMENTAL=0 cargo build -q -p airlock --locked || exit 1
bin=$PWD/target/debug/airlock
# The Debian client, not whatever else is first on PATH.
docker=/usr/bin/docker
image=airlock-sandbox:test
cache=$PWD/target/docker-image

d=$(mktemp -d /tmp/airlock-dockerd.XXXXXX)
state=$(mktemp -d)
ws=$(mktemp -d)
dpid=
cleanup() {
  if [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null; then
    kill "$dpid"
    for _ in $(seq 50); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.2; done
  fi
  umount -R "$d/data" 2>/dev/null
  rm -rf "$d" "$state" "$ws"
}
trap cleanup EXIT

# The daemon: private data and exec roots, a private socket, no host
# networking changes (no bridge, no iptables).
dockerd --data-root "$d/data" --exec-root "$d/exec" --pidfile "$d/dockerd.pid" \
  -H "unix://$d/sock" --iptables=false --ip6tables=false --bridge=none \
  >"$d/dockerd.log" 2>&1 &
dpid=$!
for _ in $(seq 100); do
  "$docker" -H "unix://$d/sock" version >/dev/null 2>&1 && break
  kill -0 "$dpid" 2>/dev/null || break
  sleep 0.2
done
if ! "$docker" -H "unix://$d/sock" version >/dev/null 2>&1; then
  tail -5 "$d/dockerd.log"
  skip "dockerd did not start here (its log's tail is above)"
fi

# The image: a minimal Debian root with python3 (pip and git for the corpus's
# control and git cases), built once from Debian's packages.
# shellcheck source=scripts/lib/docker-rootfs.sh
. scripts/lib/docker-rootfs.sh
"$docker" -H "unix://$d/sock" import "$cache/rootfs-py-git.tar" "$image" >/dev/null || exit 1

export AIRLOCK_STATE_DIR=$state AIRLOCK_DOCKER_SOCKET=$d/sock AIRLOCK_DOCKER_IMAGE=$image
containers() { "$docker" -H "unix://$d/sock" ps -aq --filter label=airlock.run | wc -l; }
# shellcheck source=scripts/lib/docker-smoke.sh
. scripts/lib/docker-smoke.sh

echo "$pass passed, $fail failed"
status=0
[ "$fail" = 0 ] || status=1
if [ "${DOCKER_ESCAPE:-1}" = 1 ]; then
  mkdir -p target/escape
  python3 tests/escape/run.py --airlock "$bin" --backend-tier docker \
    --report target/escape/report-docker.json ${ESCAPE_ARGS:-} || status=1
fi
exit $status
