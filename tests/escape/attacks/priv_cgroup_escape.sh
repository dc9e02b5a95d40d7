# Tries: leave the sandbox's cgroup (and its limits) by writing our PID into a
# parent cgroup, create sibling cgroups, and mount cgroup v1 to set a
# release_agent (CVE-2022-0492). Stops it: cgroupfs is not mounted writable
# inside (or not at all), no mount, no capabilities.
. ./escape_lib.sh
start priv_cgroup_escape
cat /proc/self/cgroup
for c in /sys/fs/cgroup/pids /sys/fs/cgroup/memory /sys/fs/cgroup/unified /sys/fs/cgroup; do
  if [ -e "$c/cgroup.procs" ] && (echo $$ > "$c/cgroup.procs") 2>/dev/null; then
    escaped "move into $c" "left the sandbox's cgroup"
  else
    blocked "move into $c" "refused"
  fi
  if mkdir "$c/$PWNED" 2>/dev/null; then escaped "mkdir in $c" "created"; rmdir "$c/$PWNED"; else blocked "mkdir in $c" "refused"; fi
done
mkdir -p cg
if mount -t cgroup -o memory cgroup cg 2>/dev/null; then
  escaped "mount cgroup v1" "mounted"
  [ -w cg/release_agent ] && escaped "release_agent writable" "$(cat cg/release_agent)"
  umount cg
else
  blocked "mount cgroup v1" "refused"
fi
for f in /sys/fs/cgroup/*/release_agent; do
  if [ -e "$f" ] && (: >> "$f") 2>/dev/null; then escaped "open $f for writing" "opened"; else blocked "open $f for writing" "refused"; fi
done
