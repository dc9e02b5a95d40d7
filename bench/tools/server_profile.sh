#!/usr/bin/env bash
# Medians of AIRLOCK_PROFILE's steps for `airlock run --server -- /bin/true`
# through `airlock serve --pool 2` (issue 15): the warm run's steps (engine,
# serve) and the pool's builds (helper, init). 40 runs 100 ms apart; the
# first 10 teach the pool its spec and are left out.
#   bench/tools/server_profile.sh [AIRLOCK_BINARY]   (default target/release/airlock)
set -euo pipefail
airlock=$(realpath "${1:-target/release/airlock}")
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"' EXIT
mkdir "$work/ws"
cd "$work/ws"
AIRLOCK_PROFILE=1 AIRLOCK_STATE_DIR="$work/state" "$airlock" serve --socket "$work/s.sock" --pool 2 \
  >"$work/serve.log" 2>&1 </dev/null &
pid=$!
for _ in $(seq 200); do [ -S "$work/s.sock" ] && break; sleep 0.05; done
for _ in $(seq 40); do "$airlock" run --server="$work/s.sock" -- /bin/true; sleep 0.1; done
kill "$pid"; wait "$pid" 2>/dev/null || true
python3 - "$work/serve.log" <<'PY'
import collections, re, statistics, sys
steps = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"airlock profile:\s+([\d.]+) ms\s+(.*)", line)
    if m:
        name = re.sub(r"warm-\S+", "W", re.sub(r"[\d.]+ ms", "X", m.group(2)))
        steps[name].append(float(m.group(1)))
for name in ["helper started", "request read, run dir locked", "filesystem view planned",
             "cgroup created", "init cloned and in its cgroup", "init: view built",
             "engine: gate: decision record durable", "engine: backend returned the outcome",
             "serve: result ready", "pool: warm run total"]:
    times = steps.get(name, [])[10:]
    if times:
        print(f"{name:<45} {statistics.median(times):7.2f} ms (n={len(times)})")
PY
