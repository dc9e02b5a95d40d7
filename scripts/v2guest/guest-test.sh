#!/bin/sh
# The focused cgroup v2 checks, run inside the QEMU guest by /init (see
# scripts/test.d/48-cgroup-v2.sh): `guest-test.sh root` as root (the run's
# cgroup under /sys/fs/cgroup/airlock), `guest-test.sh user` as uid 1000 in
# rootless mode (under the delegated subtree /sys/fs/cgroup/user-1000), and
# `guest-test.sh flat` as uid 1000 started in a delegated cgroup itself (the
# set-up mistake that cgroup v2 forbids: only the refusal is checked).
# Results are "@@OK" / "@@FAIL" lines on the console; the host counts them.
mode=$1
case "$mode" in
  root) ws=/work/root-ws cgroot=/sys/fs/cgroup ;;
  user) ws=/work/user-ws cgroot=/sys/fs/cgroup/user-1000 ;;
  flat) ws=/work/user-ws cgroot=/sys/fs/cgroup/flat-1000 ;;
  *) echo "@@FAIL ? usage: guest-test.sh root|user|flat"; exit 2 ;;
esac
parent=$cgroot/airlock
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "@@OK $mode $1"; }
bad() { fail=$((fail + 1)); echo "@@FAIL $mode $1: $2"; }
dump() { printf '%s\n' "$*" | head -c 6000 | while IFS= read -r l; do echo "@@DUMP $mode $l"; done; }

# field KEY: the value of the top-level KEY in the JSON $J (strings unquoted).
field() {
  printf '%s' "$J" | tr -d '\n' |
    sed -n "s/.*\"$1\": *\"\{0,1\}\([^\",}]*\)\"\{0,1\} *[,}].*/\1/p"
}
# want CHECK ACTUAL EXPECTED: equality, with the run's JSON on failure.
want() {
  if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "got '$2', want '$3'"; dump "$J"; fi
}
# arun POLICY [FLAGS] -- ARGV: one `airlock run --json` in the workspace;
# sets J (the JSON) and RC (airlock's exit code).
arun() {
  pol=/tmp/policy-$mode-$1.toml
  shift
  J=$(cd "$ws" && airlock run --json --policy "$pol" "$@" 2>/tmp/arun-$mode.err)
  RC=$?
  [ -n "$J" ] || J="(no JSON; stderr: $(cat /tmp/arun-$mode.err))"
}
# run_dirs: the run cgroups that exist now.
run_dirs() { ls -d "$parent"/run-* 2>/dev/null; }

if [ "$mode" = flat ]; then
  # This process sits in the delegated cgroup itself, so that cgroup cannot
  # enable controllers for a child: doctor and run say so and how to fix it.
  doc=$(cd "$ws" && airlock doctor 2>&1)
  rc=$?
  if [ $rc != 0 ] && printf '%s\n' "$doc" | grep -Eq "^(FAIL|warn) +cgroup .*$cgroot holds processes.*$cgroot/session"; then
    ok "doctor: a delegated cgroup holding the caller is refused, naming a leaf to use"
  else
    bad "doctor: a delegated cgroup holding the caller is refused, naming a leaf to use" "exit $rc"
    dump "$doc"
  fi
  out=$(cd "$ws" && airlock run -- true 2>&1)
  rc=$?
  if [ $rc = 125 ] && printf '%s' "$out" | grep -q "holds processes"; then
    ok "run: refused (125), naming the cause"
  else
    bad "run: refused (125), naming the cause" "exit $rc"
    dump "$out"
  fi
  echo "@@END $mode $pass $fail"
  exit 0
fi

# -- the workspace: small programs, and one policy per limit under test
cd "$ws" || { bad setup "no workspace $ws"; echo "@@END $mode $pass $fail"; exit 1; }
cat > hello.sh <<'EOF'
#!/bin/sh
echo "hello from $(cat /proc/self/cgroup)"
EOF
cat > hog.sh <<'EOF'
#!/bin/sh
# Anonymous memory without end: a string that doubles.
exec awk 'BEGIN { s = "0123456789abcdef"; for (;;) s = s s }'
EOF
cat > bomb.sh <<'EOF'
#!/bin/sh
# Forks until pids.max says no (each failed fork only prints an error).
i=0
while [ $i -lt 400 ]; do sleep 60 & i=$((i + 1)); done
wait
EOF
cat > spin.sh <<'EOF'
#!/bin/sh
while :; do :; done
EOF
cat > tree.sh <<'EOF'
#!/bin/sh
# A tree the timeout must take down whole: background, nested, new session.
sleep 301 &
(sleep 302 & wait) &
setsid sleep 303 &
sh -c 'sleep 304 & wait' &
echo started
wait
EOF
cat > probe.sh <<'EOF'
#!/bin/sh
# What a sandboxed process sees of cgroups and what it can do to its own.
echo "cgroup-line: $(tr '\n' ' ' < /proc/self/cgroup)"
for f in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/cgroup.controllers \
    /sys/fs/cgroup/airlock /sys/fs/cgroup/user-1000; do
  [ -e "$f" ] && echo "SEEN $f"
done
mkdir -p /tmp/cg
if mount -t cgroup2 none /tmp/cg 2>/dev/null; then
  echo "MOUNTED cgroup2"
  for f in memory.max memory.swap.max pids.max cpu.max; do
    [ -e "/tmp/cg/$f" ] && echo max > "/tmp/cg/$f" 2>/dev/null && echo "RAISED $f"
  done
  echo $$ > /tmp/cg/cgroup.procs 2>/dev/null && echo "MOVED to the namespace root"
fi
echo probed
exec ./hog.sh
EOF
chmod +x ./*.sh
policy() { # NAME LIMIT-LINES...: /tmp/policy-<mode>-NAME.toml
  name=$1
  shift
  {
    cat <<'EOF'
[workspace]
root = "WSROOT"
mode = "overlay"
[network]
mode = "none"
[commands]
allow = ["./hello.sh", "./hog.sh", "./bomb.sh", "./spin.sh", "./tree.sh", "./probe.sh"]
on_unknown = "deny"
[env]
set = { PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", HOME = "/tmp" }
[sandbox]
backend = "native"
[limits]
timeout = "60s"
output = "1MiB"
tmp = "16MiB"
EOF
    for l in "$@"; do echo "$l"; done
  } | sed "s|WSROOT|$ws|" > "/tmp/policy-$mode-$name.toml"
}
policy base 'memory = "256MiB"' 'pids = 64' 'cpus = 1.0' 'cpu_time = "60s"'
policy pids 'memory = "256MiB"' 'pids = 16' 'cpus = 1.0' 'cpu_time = "60s"'
policy cpu 'memory = "256MiB"' 'pids = 64' 'cpus = 0.25' 'cpu_time = "1s"'
policy cpufull 'memory = "256MiB"' 'pids = 64' 'cpus = 1.0' 'cpu_time = "1s"'

# -- cgroup v2 only, and airlock sees it so
if grep -q ' - cgroup ' /proc/self/mountinfo; then
  bad "only cgroup2 is mounted" "a cgroup v1 hierarchy is mounted"
else
  ok "only cgroup2 is mounted"
fi
doc=$(cd "$ws" && airlock doctor 2>&1)
rc=$?
if [ $rc = 0 ] && printf '%s\n' "$doc" | grep -Eq "cgroup .*V2, writable: unified=$cgroot( |\$)"; then
  ok "doctor: exit 0, cgroup line says V2 at $cgroot"
else
  bad "doctor: exit 0, cgroup line says V2 at $cgroot" "exit $rc"
  dump "$doc"
fi

# -- a plain run: in its own cgroup namespace, limits held by cgroup v2
arun base -- ./hello.sh
want "hello: exit 0" "$(field exit_code)" 0
want "hello: its cgroup namespace root is its own cgroup (0::/)" \
  "$(printf '%s' "$J" | grep -o 'hello from 0::/\\n' | head -1)" 'hello from 0::/\n'
if [ "$mode" = root ]; then
  want "hello: --json says root mode, limits by cgroup" \
    "$(field mode) / $(field limits)" "root / cgroup"
else
  want "hello: --json says rootless, limits by the delegated subtree" \
    "$(field mode) / $(field limits)" "rootless / delegated cgroup v2 $cgroot"
fi
want "hello: no run cgroup left behind" "$(run_dirs)" ""

# -- memory: memory.max, the OOM kill read from memory.events
arun base --memory 48MiB -- ./hog.sh
want "memory: killed_by memory" "$(field killed_by)" memory
want "memory: exit code 123" "$RC" 123
peak=$(field peak_memory_bytes)
if [ "${peak:-0}" -gt $((32 * 1048576)) ] 2>/dev/null && [ "$peak" -le $((48 * 1048576)) ]; then
  ok "memory: peak $peak bytes, within (32MiB, 48MiB]"
else
  bad "memory: peak within (32MiB, 48MiB]" "peak_memory_bytes=$peak"
  dump "$J"
fi

# -- pids: pids.max, the limit hit read from pids.events
arun pids -- ./bomb.sh
want "pids: killed_by pids" "$(field killed_by)" pids
want "pids: exit code 122" "$RC" 122
want "pids: no run cgroup left behind" "$(run_dirs)" ""

# -- cpu: cpu.max throttles a spinner to a quarter of a CPU; cpu_time (1 s,
# read from cpu.stat) then kills it after about 4 s of wall time. While it runs,
# the run's cgroup is watched from outside: cpu.max and nr_throttled.
# bg_run POLICY ARGV...: airlock run --json in the background; while it runs,
# records the run cgroup's cpu.max (MAX), its peak nr_throttled (THR), every
# member pid seen (PIDS), and its usage_usec at the first and the last look
# with the time of each (U0 T0, U1 T1; times in centiseconds of uptime); then
# sets J and RC.
bg_run() {
  pol=/tmp/policy-$mode-$1.toml
  shift
  (cd "$ws" && exec airlock run --json --policy "$pol" "$@" > /tmp/bg-$mode.json 2>/tmp/bg-$mode.err) &
  bg=$!
  MAX="" THR=0 PIDS="" U0="" T0="" U1="" T1=""
  while kill -0 $bg 2>/dev/null; do
    for c in $(run_dirs); do
      m=$(cat "$c/cpu.max" 2>/dev/null) && [ -n "$m" ] && MAX=$m
      t=$(sed -n 's/^nr_throttled //p' "$c/cpu.stat" 2>/dev/null)
      [ -n "$t" ] && [ "$t" -gt "$THR" ] && THR=$t
      u=$(sed -n 's/^usage_usec //p' "$c/cpu.stat" 2>/dev/null)
      now=$(sed 's/^\([0-9]*\)\.\([0-9]*\) .*/\1\2/' /proc/uptime)
      if [ -n "$u" ]; then
        [ -n "$U0" ] || { U0=$u T0=$now; }
        U1=$u T1=$now
      fi
      for p in $(cat "$c/cgroup.procs" 2>/dev/null); do
        case " $PIDS " in *" $p "*) ;; *) PIDS="$PIDS $p" ;; esac
      done
    done
    sleep 0.2
  done
  wait $bg
  RC=$?
  J=$(cat /tmp/bg-$mode.json)
  [ -n "$J" ] || J="(no JSON; stderr: $(cat /tmp/bg-$mode.err))"
}
bg_run cpu -- ./spin.sh
want "cpu: killed_by cpu_time" "$(field killed_by)" cpu_time
want "cpu: the run's cgroup had cpu.max = 25000 100000" "$MAX" "25000 100000"
if [ "$THR" -gt 0 ]; then ok "cpu: cpu.stat counted throttled periods ($THR)"; else bad "cpu: cpu.stat counted throttled periods" "nr_throttled stayed 0"; fi
# The share of one CPU the run's cgroup got between the first and the last
# look from outside (cpu.stat's usage_usec over uptime), in percent.
share() { [ -n "$T1" ] && [ "$T1" -gt "$T0" ] && echo $(((U1 - U0) / (T1 - T0) / 100)); }
pct=$(share)
echo "@@INFO $mode cpu: 0.25 CPU: cgroup share ${pct:-?}% over $(((${T1:-0} - ${T0:-0}) * 10)) ms; cpu_ms=$(field cpu_ms) duration_ms=$(field duration_ms) (cpu_ms includes the sandbox's setup)"
if [ -n "$pct" ] && [ $((T1 - T0)) -ge 150 ] && [ "$pct" -ge 5 ] && [ "$pct" -le 30 ]; then
  ok "cpu: the cgroup got $pct% of a CPU over $(((T1 - T0) * 10)) ms (limit 25%)"
else
  bad "cpu: the cgroup got 5-30% of a CPU over at least 1.5 s (limit 25%)" "share ${pct:-?}% over $(((${T1:-0} - ${T0:-0}) * 10)) ms (usage_usec $U0 -> $U1)"
  dump "$J"
fi
# The same spinner with a whole CPU: the contrast (figures only: a busy host
# slows the guest's vCPU, so this ratio is not asserted).
bg_run cpufull -- ./spin.sh
want "cpu: 1 CPU: killed_by cpu_time" "$(field killed_by)" cpu_time
pct=$(share)
echo "@@INFO $mode cpu: 1.0 CPU: cgroup share ${pct:-?}% over $(((${T1:-0} - ${T0:-0}) * 10)) ms; cpu_ms=$(field cpu_ms) duration_ms=$(field duration_ms)"

# -- timeout: the whole tree goes (cgroup.kill), the cgroup is removed
bg_run base --timeout 3s -- ./tree.sh
want "timeout: killed_by timeout" "$(field killed_by)" timeout
want "timeout: exit code 124" "$RC" 124
n=$(echo $PIDS | wc -w)
if [ "$n" -ge 6 ]; then ok "timeout: the run cgroup held the tree ($n pids seen)"; else bad "timeout: the run cgroup held the tree" "only $n pids seen: $PIDS"; dump "$J"; fi
alive=""
for p in $PIDS; do [ -d "/proc/$p" ] && alive="$alive $p:$(cat /proc/$p/comm 2>/dev/null)"; done
want "timeout: every process of the tree is gone" "$alive" ""
want "timeout: no sleep of the tree is left" "$(ps -o args | grep -c '^sleep 30[1-4]')" 0
want "timeout: no run cgroup left behind" "$(run_dirs)" ""

# -- escapes: the sandbox sees no cgroupfs, cannot mount one, cannot raise its
# own limits; the memory limit still holds after it tried
arun base --memory 48MiB -- ./probe.sh
out=$(printf '%s' "$J" | tr -d '\n' | sed -n 's/.*"stdout": *"\([^"]*\)".*/\1/p')
echo "@@INFO $mode escape probe stdout: $out"
case "$out" in *probed*) ok "escape: the probe ran" ;; *) bad "escape: the probe ran" "no 'probed' in stdout"; dump "$J" ;; esac
case "$out" in *"cgroup-line: 0::/ "*) ok "escape: /proc/self/cgroup shows only 0::/" ;; *) bad "escape: /proc/self/cgroup shows only 0::/" "$out" ;; esac
case "$out" in *SEEN*) bad "escape: no host cgroupfs visible" "$out" ;; *) ok "escape: no host cgroupfs visible" ;; esac
case "$out" in *MOUNTED*) bad "escape: cgroup2 cannot be mounted inside" "$out" ;; *) ok "escape: cgroup2 cannot be mounted inside" ;; esac
case "$out" in *RAISED* | *MOVED*) bad "escape: no limit raised, no cgroup move" "$out" ;; *) ok "escape: no limit raised, no cgroup move" ;; esac
want "escape: the memory limit still killed the hog" "$(field killed_by)" memory

# -- nothing left behind
want "no run cgroup left behind after all runs" "$(run_dirs)" ""
want "the airlock parent cgroup holds no process" "$(cat "$parent/cgroup.procs" 2>/dev/null)" ""
want "no airlock process left" "$(ps -o pid,args | grep -c '[a]irlock ')" 0

echo "@@END $mode $pass $fail"
[ "$fail" = 0 ]
