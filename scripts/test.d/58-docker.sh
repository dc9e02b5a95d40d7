#!/usr/bin/env bash
# The Docker-API backend as a user meets it: dockerd from Debian's packages
# (installed idempotently), started here with private roots and a private
# socket, an image built without any registry (debootstrap from Debian's
# packages, cached per machine (scripts/lib/docker.sh), then `docker import`),
# `airlock run --backend docker` smoke checks (output, exit codes, changes and
# --apply, network none, network allowlist through the in-sandbox relay
# (scripts/build-relay), limits, refusals, containers and stages removed, a
# killed caller), then the escape corpus on the docker backend
# (tests/escape/tiers/docker.toml lists the cases that do not apply), and its
# network category again with `--network allowlist`.
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
# Network allowlist mode's in-sandbox relay, linked statically.
relay=$(scripts/build-relay) || exit 1
docker=$DOCKER_CLI
image=airlock-sandbox:test

d=$(mktemp -d /tmp/airlock-test-dockerd.XXXXXX)
state=$(mktemp -d)
ws=$(mktemp -d)
cleanup() {
  # What the smoke checks started, by PID (when they ended early).
  for p in ${smoke_pids[@]+"${smoke_pids[@]}"}; do kill "$p" 2>/dev/null; done
  docker_stop "$d"
  rm -rf "$state" "$ws"
}
trap cleanup EXIT

# The daemon: private data and exec roots, a private socket, no host
# networking changes (no bridge, no iptables).
docker_start "$d" 2>&1 || skip "dockerd did not start here (its log's tail is above)"

# The image: a minimal Debian root with python3, built once from Debian's packages.
if ! docker_image "$d/sock" "$image"; then
  [ -f "$DOCKER_ROOTFS" ] && exit 1
  skip "debootstrap failed"
fi

export AIRLOCK_STATE_DIR=$state AIRLOCK_DOCKER_SOCKET=$d/sock AIRLOCK_DOCKER_IMAGE=$image AIRLOCK_RELAY=$relay
containers() { "$docker" -H "unix://$d/sock" ps -aq --filter label=airlock.run | wc -l; }
import_image() { "$docker" -H "unix://$d/sock" import - "$1" >/dev/null; }
# shellcheck source=scripts/lib/docker-smoke.sh
. scripts/lib/docker-smoke.sh

echo "$pass passed, $fail failed"
status=0
[ "$fail" = 0 ] || status=1
if [ "${DOCKER_ESCAPE:-1}" = 1 ]; then
  mkdir -p target/escape
  python3 tests/escape/run.py --airlock "$bin" --backend-tier docker \
    --report target/escape/report-docker.json ${ESCAPE_ARGS:-} || status=1
  # The network cases again in allowlist mode: the relay in front, the
  # proxy's socket bound in, the socket families of the native allowlist.
  python3 tests/escape/run.py --airlock "$bin" --backend-tier docker --category network --network allowlist \
    --report target/escape/report-docker-allowlist.json ${ESCAPE_ARGS:-} || status=1
fi
exit $status
