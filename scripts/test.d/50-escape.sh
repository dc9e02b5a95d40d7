#!/usr/bin/env bash
# The escape corpus (tests/escape): ~95 attack and control programs run through
# `airlock run`, judged by observed host state; prints `N passed, N failed` last.
# Then the same corpus through `airlock run --server` (a fresh `airlock serve
# --pool 1` per case: every command in a sandbox built ahead of demand, and the
# runner checks that it was). Then a smoke run of the benchmarks (bench/run.sh --smoke --no-runsc: a few runs of
# each tool, to prove the bench still works; its figures are not judged here), and
# of `bench/run.sh tiers --smoke` on the quick backends (native, oci).
# Needs root (cgroups, host listeners) and gcc (C attacks are compiled here).
#   ESCAPE_ARGS="--only net_ -v"   extra runner flags
#   BENCH_SMOKE=0                  skip the bench smoke run
set -uo pipefail
cd "$(dirname "$0")/../.."
command -v gcc >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc >/dev/null; }
# The debug binary: 20-rust has already built it, and a second (release) build of
# the whole tree would cost CI minutes; the corpus judges containment, not speed.
cargo build --locked -p airlock || exit 1
mkdir -p target/escape
status=0
# shellcheck disable=SC2086
python3 tests/escape/run.py --airlock target/debug/airlock --report target/escape/report.json ${ESCAPE_ARGS:-} || status=1
echo "--- the corpus again, through airlock run --server (warm pooled sandboxes)"
# shellcheck disable=SC2086
python3 tests/escape/run.py --airlock target/debug/airlock --via-server \
  --report target/escape/report-via-server.json ${ESCAPE_ARGS:-} || status=1
if [ "${BENCH_SMOKE:-1}" = 1 ]; then
  AIRLOCK=target/debug/airlock bench/run.sh --smoke --no-runsc > target/escape/bench-smoke.txt 2>&1 \
    && echo "bench smoke: ok (target/escape/bench-smoke.txt)" \
    || { echo "bench smoke: FAILED"; tail -20 target/escape/bench-smoke.txt; status=1; }
  # The tiers mode's table and chart, on the quick backends only.
  AIRLOCK=target/debug/airlock bench/run.sh tiers --smoke --no-gvisor --no-docker --no-microvm --no-wasm \
    > target/escape/bench-tiers-smoke.txt 2>&1 \
    && grep -q '^| airlock native | airlock |' target/escape/bench-tiers-smoke.txt \
    && echo "bench tiers smoke: ok (target/escape/bench-tiers-smoke.txt)" \
    || { echo "bench tiers smoke: FAILED"; tail -20 target/escape/bench-tiers-smoke.txt; status=1; }
fi
exit $status
