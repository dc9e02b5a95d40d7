#!/usr/bin/env bash
# Interface benchmarks (issue 5): latency of /v1/check and /v1/run against the
# CLI, and the 200-request burst; the warm pool's /v1/run (issue 15, warm.py). Uses target/release/airlock (built here).
#
# Every decision is an fsynced audit record before the answer leaves, so the
# latency run is done twice: state dir on disk (what a deployment pays), and on
# tmpfs (/dev/shm, where fsync is nearly free: the HTTP + gate + sandbox path alone).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked -q -p airlock
export AIRLOCK_BIN="$PWD/target/release/airlock"
command -v hyperfine >/dev/null || { apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null; }
mkdir -p bench/results
{
  echo "== state dir on disk"
  python3 bench/interfaces/latency.py
  echo "== state dir on tmpfs"
  BENCH_DIR=/dev/shm python3 bench/interfaces/latency.py
  echo "== burst"
  python3 bench/interfaces/burst.py
} 2>&1 | tee bench/results/interfaces.txt
# The warm path (issue 15): state dir on disk, as deployed.
python3 bench/interfaces/warm.py 2>&1 | tee bench/results/warm-pool.txt
