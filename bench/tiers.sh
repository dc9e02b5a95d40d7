#!/usr/bin/env bash
# `bench/run.sh tiers`: the cold start of every airlock backend beside the
# peers, in ONE `hyperfine -N` run per workload (`/bin/true`, `python3 -c pass`):
#   baseline  bare execution
#   peers     bubblewrap; crun on an equivalent bundle (bench/mk_oci_bundle.py);
#             runsc directly (rootless, ptrace platform), if it runs here
#   airlock   `airlock run --backend` native, oci (crun), oci (runc), gvisor,
#             docker (a dockerd started here with private roots, as
#             scripts/test.d/58-docker.sh does; scripts/lib/docker.sh), and wasm
#             (python only; CPython precompiled once before timing, that one-off
#             compile timed on its own)
# The microvm backend boots a kernel per run (5-10 s under TCG emulation), so
# it gets a hyperfine run of its own per workload with MICROVM_RUNS runs and
# no warm-up, marked as such in the table. Anything not available here is left
# out with its reason printed and written into the table. Needs root for all
# but bare, bubblewrap and native.
#
#   bench/run.sh tiers                  # RUNS=20 WARM=3 MICROVM_RUNS=2
#   bench/run.sh tiers --smoke          # 3 runs each, microvm once: proves the script works
#   bench/run.sh tiers --no-docker --no-microvm --no-gvisor --no-wasm   # leave some out
#   RUNS=10 AIRLOCK=target/debug/airlock bench/run.sh tiers
#
# Results: bench/results/tiers-<date>.md (table: median, ratio to bubblewrap and
# to bare), tiers-<date>.svg (chart, bench/tiers_report.py, no third-party
# Python), tiers-<date>.json (medians); hyperfine's own JSON in
# bench/results/tiers-<time>/. Host change, undone on exit: hugetlb mounted as
# a cgroup v1 hierarchy for the run (bench/lib.sh; crun refuses hybrid mode).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
# shellcheck source=scripts/lib/docker.sh
. scripts/lib/docker.sh
SMOKE=0; DOCKER=1; MICROVM=1; GVISOR=1; WASM=1
for a in "$@"; do
  case $a in
    --smoke) SMOKE=1 ;;
    --no-docker) DOCKER=0 ;;
    --no-microvm) MICROVM=0 ;;
    --no-gvisor) GVISOR=0 ;;
    --no-wasm) WASM=0 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "unknown argument $a (see bench/run.sh tiers --help)" >&2; exit 2 ;;
  esac
done
if [ $SMOKE = 1 ]; then RUNS=${RUNS:-3}; WARM=${WARM:-1}; MICROVM_RUNS=${MICROVM_RUNS:-1}
else RUNS=${RUNS:-20}; WARM=${WARM:-3}; MICROVM_RUNS=${MICROVM_RUNS:-2}; fi
PY=/usr/bin/python3   # the same interpreter inside every sandbox and outside
ROOT=0; [ "$(id -u)" = 0 ] && ROOT=1

SKIPPED=()   # "row<TAB>reason", printed now and written into the table
skip() { SKIPPED+=("$1"$'\t'"$2"); echo "skipped: $1: $2"; }

# ------------------------------------------------------------------ tools
apt_get() { # packages: installed when missing, as root (idempotent)
  local need=() p
  for p in "$@"; do command -v "${p%%:*}" >/dev/null 2>&1 || need+=("${p#*:}"); done
  [ ${#need[@]} -eq 0 ] && return 0
  [ $ROOT = 1 ] || return 1
  echo "installing: ${need[*]}"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"; } >/dev/null
}
apt_get hyperfine:hyperfine bwrap:bubblewrap \
  || { echo "hyperfine and bubblewrap are needed (apt-get install hyperfine bubblewrap, as root)" >&2; exit 1; }
if [ $ROOT = 1 ]; then
  apt_get crun:crun runc:runc runsc:runsc || echo "could not install every OCI runtime; rows that need one are skipped"
fi
if [ -z "${AIRLOCK:-}" ]; then
  nice cargo build --release --locked -q -p airlock
  AIRLOCK=target/release/airlock
fi
AIRLOCK=$(readlink -f "$AIRLOCK")
case $AIRLOCK in */release/*) BUILD=release ;; */debug/*) BUILD=debug ;; *) BUILD=unknown ;; esac

DATE=$(date -u +%Y-%m-%d)
RAW=$PWD/bench/results/tiers-$(date -u +%Y%m%dT%H%M%SZ)$([ $SMOKE = 1 ] && echo -smoke || true)
REPORT=bench/results/tiers-$DATE$([ $SMOKE = 1 ] && echo -smoke || true)
mkdir -p "$RAW"
WORK=$(mktemp -d /var/tmp/airlock-bench-tiers.XXXXXX)
WS=$WORK/ws B=$WORK/oci DD=$WORK/dockerd
mkdir -p "$WS" "$B" "$DD"
export AIRLOCK_STATE_DIR=$WORK/state AIRLOCK_WASM_CACHE=$WORK/wasm-cache
cleanup() {
  set +e
  crun delete -f "c-true-$$" >/dev/null 2>&1 || true
  crun delete -f "c-pypass-$$" >/dev/null 2>&1 || true
  [ $DOCKER = 1 ] && docker_stop "$DD"
  hugetlb_v1_release
  rm -rf "$WORK"
}
trap cleanup EXIT
[ $ROOT = 1 ] && hugetlb_v1_hold

# ------------------------------------------------------------------ rows
# One row: name, kind (baseline, peer, airlock, airlock-separate), the
# `/bin/true` command, the `python3 -c pass` command ("" where it does not apply).
ROWS=(); KINDS=(); TRUE_CMDS=(); PY_CMDS=()
try() { # name, command: runs it once; on failure skips the row with stderr's last line
  local out rc=0
  out=$(cd "$WS" && timeout 180 $2 2>&1 >/dev/null) || rc=$?
  [ $rc = 0 ] && return 0
  out=$(echo "$out" | grep -v '^\s*$' | tail -1 | cut -c1-200)
  skip "$1" "cannot run \`${2//$AIRLOCK/airlock}\` (exit status $rc): ${out:-no output}"
  return 1
}
row() { # name, kind, true command, python command
  [ -n "$3" ] && { try "$1" "$3" || return 0; }
  [ -n "$4" ] && { try "$1" "$4" || return 0; }
  ROWS+=("$1"); KINDS+=("$2"); TRUE_CMDS+=("$3"); PY_CMDS+=("$4")
}
AL="$AIRLOCK run --backend"

row bare baseline /bin/true "$PY -c pass"
row bubblewrap peer "$BW /bin/true" "$BW $PY -c pass"
if [ $ROOT = 0 ]; then skip "crun" "the peer runs as root here (uid $(id -u))"
elif ! command -v crun >/dev/null; then skip "crun" "crun is not installed"
else
  python3 bench/mk_oci_bundle.py "$B/true" -- /bin/true
  python3 bench/mk_oci_bundle.py "$B/pypass" -- $PY -c pass
  row crun peer "crun run --bundle $B/true c-true-$$" "crun run --bundle $B/pypass c-pypass-$$"
fi
if [ $GVISOR = 0 ]; then skip "runsc" "--no-gvisor"
elif ! command -v runsc >/dev/null; then skip "runsc" "runsc is not installed"
else row runsc peer "$GV /bin/true" "$GV $PY -c pass"; fi

row "airlock native" airlock "$AL native -- /bin/true" "$AL native -- $PY -c pass"
if [ $ROOT = 0 ]; then
  skip "airlock oci, gvisor, docker, microvm" "these backends run as root (uid $(id -u))"
else
  for rt in crun runc; do
    if command -v $rt >/dev/null; then
      row "airlock oci ($rt)" airlock "env AIRLOCK_OCI_RUNTIME=$rt $AL oci -- /bin/true" \
        "env AIRLOCK_OCI_RUNTIME=$rt $AL oci -- $PY -c pass"
    else skip "airlock oci ($rt)" "$rt is not installed"; fi
  done
  if [ $GVISOR = 0 ]; then skip "airlock gvisor" "--no-gvisor"
  elif command -v runsc >/dev/null; then
    row "airlock gvisor" airlock "$AL gvisor -- /bin/true" "$AL gvisor -- $PY -c pass"
  else skip "airlock gvisor" "runsc is not installed"; fi
  if [ $DOCKER = 0 ]; then skip "airlock docker" "--no-docker"
  else
    if ! docker_install; then skip "airlock docker" "could not install docker.io and debootstrap"
    elif ! docker_start "$DD"; then skip "airlock docker" "dockerd did not start (its log's tail is above)"
    elif ! docker_image "$DD/sock" airlock-sandbox:test; then
      skip "airlock docker" "the image could not be built (debootstrap of Debian's packages)"
    else
      DENV="env AIRLOCK_DOCKER_SOCKET=$DD/sock AIRLOCK_DOCKER_IMAGE=airlock-sandbox:test"
      row "airlock docker" airlock "$DENV $AL docker -- /bin/true" "$DENV $AL docker -- /usr/bin/python3 -c pass"
    fi
  fi
fi
PRECOMPILE_MS=
if [ $WASM = 0 ]; then skip "airlock wasm" "--no-wasm"
elif scripts/setup-wasm-python >/dev/null 2>"$WORK/wasm.err"; then
  # The one-off precompile of CPython (per wasmtime version), outside the timing.
  start=$(date +%s%N)
  if (cd "$WS" && $AL wasm -- python3 -c pass >/dev/null 2>"$WORK/wasm.err"); then
    PRECOMPILE_MS=$(( ($(date +%s%N) - start) / 1000000 ))
    echo "first wasm run (precompiles CPython into the cache): $PRECOMPILE_MS ms"
    row "airlock wasm" airlock "" "$AL wasm -- python3 -c pass"
  else skip "airlock wasm" "the first run failed: $(tail -1 "$WORK/wasm.err" | cut -c1-200)"; fi
else skip "airlock wasm" "scripts/setup-wasm-python failed: $(tail -1 "$WORK/wasm.err" | cut -c1-200)"; fi
MICROVM_TRUE="" MICROVM_PY=""
if [ $MICROVM = 0 ]; then skip "airlock microvm" "--no-microvm"
elif [ $ROOT = 0 ]; then :
elif ! scripts/setup-microvm >"$WORK/microvm.log" 2>&1; then
  skip "airlock microvm" "scripts/setup-microvm failed: $(tail -1 "$WORK/microvm.log")"
elif try "airlock microvm" "$AL microvm -- /bin/true"; then
  MICROVM_TRUE="$AL microvm -- /bin/true"
  try "airlock microvm (python3)" "$AL microvm -- $PY -c pass" && MICROVM_PY="$AL microvm -- $PY -c pass"
fi

# ------------------------------------------------------------------ timing
: > "$RAW/rows.tsv"
for i in "${!ROWS[@]}"; do printf '%s\t%s\n' "${ROWS[i]}" "${KINDS[i]}" >> "$RAW/rows.tsv"; done
[ -n "$MICROVM_TRUE" ] && printf '%s\t%s\n' "airlock microvm" airlock-separate >> "$RAW/rows.tsv"
printf '%s\n' "${SKIPPED[@]}" > "$RAW/skipped.tsv"
for w in true pypass; do
  args=()
  for i in "${!ROWS[@]}"; do
    if [ $w = true ]; then c=${TRUE_CMDS[i]}; else c=${PY_CMDS[i]}; fi
    [ -n "$c" ] && args+=(-n "${ROWS[i]}" "$c")
  done
  echo "### $w: $(( ${#args[@]} / 3 )) commands, $RUNS runs each (warm-up $WARM)"
  (cd "$WS" && hyperfine -N --style basic --warmup "$WARM" -r "$RUNS" \
    --export-json "$RAW/$w.json" "${args[@]}")
done
if [ -n "$MICROVM_TRUE" ]; then
  for w in true pypass; do
    if [ $w = true ]; then c=$MICROVM_TRUE; else c=$MICROVM_PY; fi
    [ -n "$c" ] || continue
    echo "### $w on microvm: a hyperfine run of its own, $MICROVM_RUNS run(s), no warm-up (a boot is 5-10 s under TCG)"
    (cd "$WS" && hyperfine -N --style basic -r "$MICROVM_RUNS" \
      --export-json "$RAW/$w-microvm.json" -n "airlock microvm" "$c")
  done
  accel=$("$AIRLOCK" doctor --backend microvm 2>&1 | grep -o 'accelerator [a-z]*' | head -1 | cut -d' ' -f2)
  echo "${accel:-unknown}" > "$RAW/microvm-accel.txt"
fi

{
  echo "airlock=$AIRLOCK ($BUILD build, $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
  echo "build=$BUILD"
  echo "runs=$RUNS"; echo "warmup=$WARM"; echo "microvm_runs=$MICROVM_RUNS"
  echo "precompile_ms=$PRECOMPILE_MS"
  echo "kernel=$(uname -r)"; echo "cpus=$(nproc)"
  echo "load=$(cut -d' ' -f1 /proc/loadavg)"
  echo "versions=bwrap $(bwrap --version | awk '{print $2}')$(command -v crun >/dev/null && echo ", crun $(crun --version | head -1 | awk '{print $3}')")$(command -v runc >/dev/null && echo ", runc $(runc --version | head -1 | awk '{print $3}')")$(command -v runsc >/dev/null && echo ", runsc $(runsc --version 2>&1 | head -1 | awk '{print $3}') (ptrace platform)")$([ -x /usr/bin/dockerd ] && echo ", dockerd $(/usr/bin/dockerd --version | awk '{print $3}' | tr -d ,)")"
} > "$RAW/env.txt"
python3 bench/tiers_report.py "$RAW" "$REPORT"
echo "results: $REPORT.md, $REPORT.svg, $REPORT.json (hyperfine's JSON in $RAW)"
