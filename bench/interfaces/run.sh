#!/usr/bin/env bash
# Interface benchmarks (issue 5): latency of /v1/check and /v1/run against the
# CLI, and the 200-request burst. Uses target/release/airlock (built here).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked -q -p airlock
export AIRLOCK_BIN="$PWD/target/release/airlock"
command -v hyperfine >/dev/null || { apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null; }
mkdir -p bench/results
python3 bench/interfaces/latency.py | tee bench/results/interfaces-latency.txt
python3 bench/interfaces/burst.py | tee bench/results/interfaces-burst.txt
