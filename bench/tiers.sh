#!/usr/bin/env bash
# Cold start of each built backend, beside each other and bare python3 in ONE
# hyperfine run: `python3 -c pass` and `python3 -c 'print(6*7)'` through
# `airlock run --backend native` and `--backend wasm` (the .cwasm precompiled
# once before timing; its one-off compile is timed separately).
#
#   bench/tiers.sh                # 20 runs each
#   RUNS=5 bench/tiers.sh         # quicker
#   AIRLOCK=target/debug/airlock bench/tiers.sh
#
# Results: bench/results/tiers-<time>/ (hyperfine JSON and summary.md).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-20}; WARM=${WARM:-3}
command -v hyperfine >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine >/dev/null; }
scripts/setup-wasm-python >/dev/null
if [ -z "${AIRLOCK:-}" ]; then
  cargo build --release --locked -q -p airlock
  AIRLOCK=target/release/airlock
fi
AIRLOCK=$(readlink -f "$AIRLOCK")
OUT=$PWD/bench/results/tiers-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$OUT"
WORK=$(mktemp -d /var/tmp/airlock-bench-tiers.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/ws"
export AIRLOCK_STATE_DIR=$WORK/state AIRLOCK_WASM_CACHE=$WORK/cache
cd "$WORK/ws"
# The one-off precompile of CPython (per wasmtime version), then the timed runs.
start=$(date +%s%N)
"$AIRLOCK" run --backend wasm -- python3 -c pass
echo "first wasm run (precompiles CPython into the cache): $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee "$OUT/precompile.txt"
for w in pass 'print(6*7)'; do
  name=$([ "$w" = pass ] && echo pypass || echo pyprint)
  hyperfine -N --style basic --warmup "$WARM" -r "$RUNS" --export-json "$OUT/$name.json" \
    -n bare "/usr/bin/python3 -c $w" \
    -n native "$AIRLOCK run --backend native -- python3 -c $w" \
    -n wasm "$AIRLOCK run --backend wasm -- python3 -c $w"
done
python3 - "$OUT" <<'PY'
import json, pathlib, sys, os
out = pathlib.Path(sys.argv[1])
lines = ["| workload | bare | native | wasm | wasm / native |", "| --- | --- | --- | --- | --- |"]
for f in sorted(out.glob("py*.json")):
    r = {x["command"]: x for x in json.loads(f.read_text())["results"]}
    med = {k: v["median"] * 1000 for k, v in r.items()}
    lines.append(f"| {f.stem} | {med['bare']:.1f} ms | {med['native']:.1f} ms | {med['wasm']:.1f} ms | {med['wasm']/med['native']:.2f} |")
load = os.getloadavg()[0]
lines.append("")
lines.append(f"medians of one hyperfine run each; load average {load:.1f} on {os.cpu_count()} CPUs while measuring")
(out / "summary.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
PY
echo "results in $OUT"
