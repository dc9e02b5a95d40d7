# shellcheck shell=bash
# Shared by bench/run.sh and bench/tiers.sh (`bench/run.sh tiers`). Source it.

# bubblewrap with its strongest flags equivalent to `airlock run`'s defaults.
BW="bwrap --unshare-all --unshare-user --disable-userns --die-with-parent --new-session \
 --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 \
 --symlink usr/sbin /sbin --ro-bind /etc /etc --proc /proc --dev /dev --tmpfs /tmp \
 --clearenv --setenv PATH /usr/bin:/bin --chdir /tmp --cap-drop ALL"
# gVisor's runsc as a peer: rootless, no network, the ptrace platform (the only
# one Debian's 2022 runsc has here).
GV="runsc --rootless --network=none --platform=ptrace do"

# crun 1.8 refuses "cgroups in hybrid mode" while the cgroup2 hierarchy holds a
# controller (hugetlb on this kind of host), so hugetlb is mounted as a v1
# hierarchy for the bench's run: hugetlb_v1_hold, then hugetlb_v1_release on exit.
HUGETLB_MOUNTED=0
hugetlb_v1_hold() {
  if [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
    mkdir -p /sys/fs/cgroup/hugetlb
    mount -t cgroup -o hugetlb cgroup /sys/fs/cgroup/hugetlb && HUGETLB_MOUNTED=1
  fi
  return 0
}
hugetlb_v1_release() {
  [ "$HUGETLB_MOUNTED" = 1 ] || return 0
  # Cgroups the runs left in it (runc and dockerd make their own) go first:
  # a v1 hierarchy with children at umount stays alive, hidden, and keeps
  # hugetlb away from cgroup2.
  find /sys/fs/cgroup/hugetlb -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null || true
  sleep 1; umount /sys/fs/cgroup/hugetlb 2>/dev/null || true
  # A dying child can still hold it: mount/umount again until cgroup2 has it back.
  for _ in 1 2 3 4 5; do
    grep -qw hugetlb /sys/fs/cgroup/unified/cgroup.controllers && break
    sleep 2
    mount -t cgroup -o hugetlb cgroup /sys/fs/cgroup/hugetlb 2>/dev/null && umount /sys/fs/cgroup/hugetlb
  done
  rmdir /sys/fs/cgroup/hugetlb 2>/dev/null || true
  HUGETLB_MOUNTED=0
}
