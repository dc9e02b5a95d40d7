# shellcheck shell=bash
# A private dockerd and the local test image, shared by scripts/test.d/58-docker.sh
# (the docker backend's CI part) and `bench/run.sh tiers` (its cold start).
# Source it; needs root. Nothing here touches the host's networking or pulls
# from any image registry.

# The Debian client, not whatever else is first on PATH.
DOCKER_CLI=/usr/bin/docker

# docker_install: dockerd and debootstrap from Debian's packages when missing
# (idempotent). Returns non-zero when they cannot be installed.
docker_install() {
  local need=()
  command -v dockerd >/dev/null || need+=(docker.io)  # Debian installs it in /usr/sbin
  command -v debootstrap >/dev/null || need+=(debootstrap)
  [ ${#need[@]} -eq 0 ] && return 0
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
}

# docker_start DIR: starts dockerd with its data and exec roots, pid file and
# socket (DIR/sock) under DIR, without a bridge or iptables rules; sets
# DOCKERD_PID. Returns non-zero, the log's tail on stderr, when it does not answer
# within 20 s.
docker_start() {
  local d=$1
  dockerd --data-root "$d/data" --exec-root "$d/exec" --pidfile "$d/dockerd.pid" \
    -H "unix://$d/sock" --iptables=false --ip6tables=false --bridge=none \
    >"$d/dockerd.log" 2>&1 &
  DOCKERD_PID=$!
  for _ in $(seq 100); do
    "$DOCKER_CLI" -H "unix://$d/sock" version >/dev/null 2>&1 && return 0
    kill -0 "$DOCKERD_PID" 2>/dev/null || break
    sleep 0.2
  done
  tail -5 "$d/dockerd.log" >&2
  return 1
}

# docker_stop DIR: stops the dockerd docker_start started there (by its PID) and
# removes DIR.
docker_stop() {
  local d=$1
  if [ -n "${DOCKERD_PID:-}" ] && kill -0 "$DOCKERD_PID" 2>/dev/null; then
    kill "$DOCKERD_PID"
    for _ in $(seq 50); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.2; done
  fi
  # Whatever the daemon left mounted under its roots, deepest first: its
  # data root's overlays, and exec/netns/default, its bind of the host's
  # network namespace for a container in NetworkMode host.
  awk -v d="$d/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r | xargs -r -n1 umount -l
  rm -rf "$d"
}

# shellcheck source=scripts/lib/test-cache.sh
. "$(dirname "${BASH_SOURCE[0]}")/test-cache.sh"

# DOCKER_ROOTFS: a minimal Debian root with python3 (pip and git for the escape
# corpus's control and git cases) as a tarball, built from Debian's packages with
# debootstrap (a minute or more) once per machine, in the test cache. Its name
# holds what it is built from: a change of suite, variant or packages builds a
# new one.
DOCKER_ROOTFS=$TEST_CACHE/docker-image/bookworm-minbase-python3-pip-git.tar

# docker_rootfs: builds $DOCKER_ROOTFS when missing. Shared with 58b-podman.sh,
# which imports it into podman. Returns non-zero, the reason on stderr, on failure.
docker_rootfs() {
  cache_make "$DOCKER_ROOTFS" docker_rootfs_build
}

docker_rootfs_build() {
  local dir=${DOCKER_ROOTFS%/*} rc=0
  mkdir -p "$dir" || return 1
  rm -rf "$dir/rootfs.tmp"
  if debootstrap --variant=minbase --include=python3,python3-pip,git bookworm "$dir/rootfs.tmp" \
    >"$dir/debootstrap.log" 2>&1; then
    rm -rf "$dir/rootfs.tmp/var/cache/apt/archives/"*.deb "$dir/rootfs.tmp/var/lib/apt/lists/"*
    tar -C "$dir/rootfs.tmp" -cf "$DOCKER_ROOTFS.tmp" . && mv "$DOCKER_ROOTFS.tmp" "$DOCKER_ROOTFS" || rc=1
  else
    tail -5 "$dir/debootstrap.log" >&2; echo "debootstrap failed" >&2; rc=1
  fi
  rm -rf "$dir/rootfs.tmp" "$DOCKER_ROOTFS.tmp"
  return $rc
}

# docker_image SOCK IMAGE: imports IMAGE into the daemon at SOCK from
# $DOCKER_ROOTFS. Returns non-zero, the reason on stderr, on failure.
docker_image() {
  local sock=$1 image=$2
  docker_rootfs || return 1
  "$DOCKER_CLI" -H "unix://$sock" import "$DOCKER_ROOTFS" "$image" >/dev/null
}
