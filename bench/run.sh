#!/usr/bin/env bash
# Benchmarks airlock beside its peers, side by side in ONE hyperfine run per workload:
# bare execution, `airlock run` (default policy: every layer on, cgroup and overlay
# workspace included), bubblewrap with its strongest equivalent flags, crun with an
# equivalent OCI bundle (bench/mk_oci_bundle.py), gVisor's runsc (rootless, no network,
# ptrace platform: the only one Debian's 2022 runsc has here) and firejail (as root).
#
#   bench/run.sh                 # full run (a few minutes; runsc's syscall-heavy case is ~10 s a run)
#   bench/run.sh --smoke         # a few runs of each, to prove the script works (what the tests run)
#   bench/run.sh --no-runsc      # leave gVisor out
#   RUNS=50 WARM=5 RUNS_LONG=10 AIRLOCK=target/release/airlock bench/run.sh
#   bench/run.sh tiers [--smoke]  # every airlock backend's cold start beside the peers (bench/tiers.sh)
#
# Results: bench/results/<time>/ (hyperfine JSON per workload, inproc.txt, interleaved*.md (the
# round-robin runs: /bin/true, python start-up, both workloads end to end), summary.md,
# chart.png) and bench/results/latest -> it. The summary gives medians, ratios against
# bare and against bwrap, and whether the issue's targets are met.
#
# Host changes, undone on exit: crun 1.8 refuses "cgroups in hybrid mode" while the
# cgroup2 hierarchy holds hugetlb, so hugetlb is mounted as a v1 hierarchy for the run
# and unmounted after (retrying until cgroup2 gets it back).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = tiers ] && { shift; exec bench/tiers.sh "$@"; }
# shellcheck source=bench/lib.sh
. bench/lib.sh
SMOKE=0; RUNSC=1
for a in "$@"; do
  case $a in
    --smoke) SMOKE=1 ;;
    --no-runsc) RUNSC=0 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown argument $a" >&2; exit 2 ;;
  esac
done
# The smoke run proves that every stage still runs (the test command runs it):
# one run of each long workload, no warm-up for them, no settling.
if [ $SMOKE = 1 ]; then RUNS=${RUNS:-5}; WARM=${WARM:-1}; RUNS_LONG=${RUNS_LONG:-1}; WARM_LONG=0; INPROC_N=${INPROC_N:-1}
else RUNS=${RUNS:-30}; WARM=${WARM:-3}; RUNS_LONG=${RUNS_LONG:-5}; WARM_LONG=1; INPROC_N=${INPROC_N:-7}; fi
PY=/usr/bin/python3   # the same interpreter inside every sandbox and outside

# ------------------------------------------------------------------ peers and airlock
need=()
for pair in bwrap:bubblewrap firejail:firejail runsc:runsc crun:crun hyperfine:hyperfine; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
done
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || need+=(python3-matplotlib)  # for chart.png
if [ ${#need[@]} -gt 0 ]; then
  echo "installing peers: ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ -z "${AIRLOCK:-}" ]; then
  cargo build --release --locked -q -p airlock
  AIRLOCK=target/release/airlock
fi
AIRLOCK=$(readlink -f "$AIRLOCK")

STAMP=$(date -u +%Y%m%dT%H%M%SZ)$([ $SMOKE = 1 ] && echo -smoke || true)
OUT=$PWD/bench/results/$STAMP
mkdir -p "$OUT"
ln -sfn "$STAMP" bench/results/latest
WORK=$(mktemp -d /var/tmp/airlock-bench.XXXXXX)
B=$WORK/oci; WS=$WORK/workspace; mkdir -p "$B" "$WS"
echo "workspace file" > "$WS/README"
export AIRLOCK_STATE_DIR=$WORK/state   # keep the bench's audit log out of the real one

IDS=(true pypass pycpu pysys inproc)
SERVE_PID=
cleanup() {
  if [ -n "$SERVE_PID" ]; then kill -TERM "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null || true; fi
  for id in "${IDS[@]}"; do crun delete -f "c-$id-$$" >/dev/null 2>&1 || true; done
  rmdir /sys/fs/cgroup/*/airlock-bench/* /sys/fs/cgroup/*/airlock-bench 2>/dev/null || true
  hugetlb_v1_release
  rm -rf "$WORK"
}
trap cleanup EXIT
hugetlb_v1_hold

CPU_CODE='sum(range(30_000_000))'
SYS_CODE="import os;s=os.stat;[s('/') for _ in range(200000)]"
INPROC="import os,time;p=time.perf_counter;t=p();sum(range(30_000_000));a=p()-t;s=os.stat;t=p();[s('/') for _ in range(200000)];b=p()-t;print('%.1f %.1f'%(a*1e3,b*1e3))"
python3 bench/mk_oci_bundle.py "$B/true" -- /bin/true
python3 bench/mk_oci_bundle.py "$B/pypass" -- $PY -c pass
python3 bench/mk_oci_bundle.py "$B/pycpu" -- $PY -c "$CPU_CODE"
python3 bench/mk_oci_bundle.py "$B/pysys" -- $PY -c "$SYS_CODE"
python3 bench/mk_oci_bundle.py "$B/inproc" -- $PY -c "$INPROC"

# ------------------------------------------------------------------ invocations
AL="$AIRLOCK run --cwd $WS --"
# airlock run --server: the same command handed to a running `airlock serve`
# (the built-in default policy, workspace $WS, pool 2), which takes a sandbox
# built ahead of demand. Back to back (hyperfine), each run also waits for the
# pool's refill of the run before; round-robin, the refill overlaps the others.
(cd "$WS" && AIRLOCK_STATE_DIR=$WORK/serve-state exec "$AIRLOCK" serve --socket "$WORK/serve.sock" --pool 2 \
  >"$OUT/serve.log" 2>&1) &
SERVE_PID=$!
for _ in $(seq 200); do [ -S "$WORK/serve.sock" ] && break; sleep 0.05; done
ALS="$AIRLOCK run --server=$WORK/serve.sock --cwd $WS --"
FJ="firejail --noprofile --quiet --deterministic-exit-code --net=none --ipc-namespace --private \
 --private-tmp --private-dev --caps.drop=all --seccomp --nonewprivs --nogroups \
 --read-only=/usr --read-only=/etc --rlimit-nproc=256 --rlimit-as=536870912"
CR() { echo "crun run --bundle $B/$1 c-$1-$$"; }

# every tool must run the workload at all, or its figure means nothing
for t in "$AL /bin/true" "$ALS /bin/true" "$BW /bin/true" "$FJ /bin/true" "$(CR true)"; do
  $t </dev/null >/dev/null 2>&1 || { echo "cannot run: $t" >&2; exit 1; }
done
if [ $RUNSC = 1 ] && ! timeout 60 $GV /bin/true >/dev/null 2>&1; then
  echo "runsc does not run here; leaving it out"; RUNSC=0
fi

hf() { local name=$1; shift
  echo "### $name"
  hyperfine -N --style basic --export-json "$OUT/$name.json" "$@" 2>&1 | grep -vE '^\s*$' | sed 's/^/  /'
}

for w in true pypass; do
  if [ $w = true ]; then C="/bin/true"; else C="$PY -c pass"; fi
  args=(-n bare "$C" -n airlock "$AL $C" -n airlock-server "$ALS $C" -n bwrap "$BW $C" -n crun "$(CR $w)" -n firejail "$FJ $C")
  [ $RUNSC = 1 ] && args+=(-n runsc "$GV $C")
  hf "startup_$w" --warmup "$WARM" -r "$RUNS" "${args[@]}"
done
for w in pycpu pysys; do
  if [ $w = pycpu ]; then CODE="$CPU_CODE"; else CODE="$SYS_CODE"; fi
  C="$PY -c \"$CODE\""
  args=(-n bare "$C" -n airlock "$AL $C" -n bwrap "$BW $C" -n crun "$(CR $w)" -n firejail "$FJ $C")
  # runsc's ptrace platform needs ~10 s for the syscall loop: full runs only
  [ $RUNSC = 1 ] && { [ $SMOKE = 0 ] || [ $w = pycpu ]; } && args+=(-n runsc "$GV $C")
  hf "runtime_$w" --warmup "$WARM_LONG" -r "$RUNS_LONG" "${args[@]}"
done

# The same start-up comparison round-robin (fair to every tool on a busy machine).
python3 bench/interleaved.py --vs bwrap "$([ $SMOKE = 1 ] && echo 5 || echo 40)" bare=/bin/true "airlock=$AL /bin/true" \
  "airlock-server=$ALS /bin/true" "bwrap=$BW /bin/true" "crun=$(CR true)" "firejail=$FJ /bin/true" > "$OUT/interleaved.md"
# Python start-up and the two workloads end to end, round-robin against bare and
# bwrap: back to back (hyperfine), each run also pays for the kernel's deferred
# cleanup of the one before it (network namespaces, cgroups), and five runs of a
# 300 ms workload on a shared 2-core machine swing by 30 %.
for w in pypass pycpu pysys; do
  case $w in pypass) C="$PY -c pass" ;; pycpu) C="$PY -c \"$CPU_CODE\"" ;; pysys) C="$PY -c \"$SYS_CODE\"" ;; esac
  n=$([ $SMOKE = 1 ] && echo 1 || { [ $w = pypass ] && echo 40 || echo 10; })
  server=(); [ $w = pypass ] && server=("airlock-server=$ALS $C")
  python3 bench/interleaved.py --vs bwrap "$n" "bare=$C" "airlock=$AL $C" "${server[@]}" "bwrap=$BW $C" > "$OUT/interleaved_$w.md"
done

# The workload timing itself, without start-up: CPU loop and 200k stat() calls,
# round-robin over the tools (one run of each per round) so that load is shared.
{
  for i in $(seq "$INPROC_N"); do
    echo "bare $($PY -c "$INPROC" 2>/dev/null | tail -1)"
    echo "airlock $($AL $PY -c "$INPROC" 2>/dev/null | tail -1)"
    echo "bwrap $($BW $PY -c "$INPROC" 2>/dev/null | tail -1)"
    echo "crun $(crun run --bundle "$B/inproc" "c-inproc-$$" 2>/dev/null | tail -1)"
    echo "firejail $($FJ $PY -c "$INPROC" 2>/dev/null | tail -1)"
  done
} > "$OUT/inproc.txt"

# The warm path: POST /v1/run of /bin/true through `airlock serve --pool 2`,
# request to response (bench/interfaces/warm.py; its last line is the verdict).
# It follows hundreds of cold runs of every tool, whose deferred kernel work
# (network namespaces, cgroups, firejail's mounts) runs for seconds after
# them; no peer runs in this stage, so it starts on a settled machine: at
# most 15 s until one second passes with both CPUs over 95 % idle.
[ $SMOKE = 1 ] || python3 - <<'SETTLE'
import time
def busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4] + v[7]
    return sum(v) - idle, sum(v)
deadline = time.monotonic() + 15
while time.monotonic() < deadline:
    b0, t0 = busy(); time.sleep(1); b1, t1 = busy()
    if (b1 - b0) <= 0.05 * max(t1 - t0, 1):
        break
SETTLE
N_RUN=$([ $SMOKE = 1 ] && echo 20 || echo 200) AIRLOCK_BIN="$AIRLOCK" \
  python3 bench/interfaces/warm.py > "$OUT/warm.txt"

{
  echo "airlock: $AIRLOCK ($(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
  echo "bwrap $(bwrap --version | awk '{print $2}'), crun $(crun --version | head -1 | awk '{print $3}'),"\
       "firejail $(firejail --version | head -1 | awk '{print $3}'), runsc $(runsc --version 2>&1 | head -1 | awk '{print $3}')"\
       "(ptrace platform$([ $RUNSC = 1 ] || echo ', not run'))"
  echo "kernel $(uname -r), $(nproc) CPUs; runs: startup $RUNS (warmup $WARM), runtime $RUNS_LONG, in-process $INPROC_N"
} > "$OUT/env.txt"
python3 bench/summarize.py "$OUT"
echo "results in $OUT"
