#!/usr/bin/env bash
# A short fuzz pass over policy loading and shell analysis (about a minute in
# all). cargo-fuzz needs nightly features; RUSTC_BOOTSTRAP=1 enables them on the
# stable toolchain. Run longer with, e.g.:
#   RUSTC_BOOTSTRAP=1 cargo fuzz run --sanitizer none --fuzz-dir fuzz shell_decide -- -max_total_time=3600
set -euo pipefail
cd "$(dirname "$0")/../.."
# A pinned cargo-fuzz, so that every CI run builds the targets the same way; one
# retry, as the registry is the only thing here that can fail for want of luck.
fuzz_version=0.13.2
if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $fuzz_version" ]; then
  echo "installing cargo-fuzz $fuzz_version"
  cargo install cargo-fuzz --version "$fuzz_version" --locked --quiet \
    || cargo install cargo-fuzz --version "$fuzz_version" --locked --quiet \
    || { echo "FAIL fuzz: cargo-fuzz $fuzz_version did not install"; exit 1; }
fi
export RUSTC_BOOTSTRAP=1
# The fuzz build (every dependency of airlock-policy, instrumented: 2-4 minutes of
# CPU) goes to a target dir kept per machine, outside any checkout, like 45-readme's:
# a fresh clone's files are newer than any artifact, so the workspace's crates are
# compiled again from them and only registry crates are reused.
# shellcheck source=scripts/lib/test-cache.sh
. scripts/lib/test-cache.sh
fuzz_target_dir=$TEST_CACHE/fuzz-target
# The pass in the test command is deterministic (a fixed seed and a fixed number of
# runs per target, about a minute each here), so a CI result never depends on luck; new
# inputs are hunted by the longer, time-bounded runs of the README, or here with
# AIRLOCK_FUZZ_SECONDS=N (random seed, N seconds per target).
for target in policy_load shell_decide knowledge; do
  mkdir -p "fuzz/corpus/$target"
  case $target in policy_load) runs=200000 ;; shell_decide) runs=20000 ;; knowledge) runs=100000 ;; esac
  if [ -n "${AIRLOCK_FUZZ_SECONDS:-}" ]; then
    budget=(-max_total_time="$AIRLOCK_FUZZ_SECONDS"); echo "fuzzing $target for ${AIRLOCK_FUZZ_SECONDS}s"
  else
    budget=(-seed=1 -runs="$runs"); echo "fuzzing $target: $runs runs, seed 1"
  fi
  # -rss_limit_mb bounds memory; a crash leaves its input in fuzz/artifacts/.
  # No sanitizer: airlock-policy has no unsafe code, and what is hunted here is
  # panics, integer overflows (debug assertions are on), stack exhaustion and
  # hangs, which need none; AddressSanitizer would only add build and run time.
  log=$(mktemp)
  if cargo fuzz run --sanitizer none --fuzz-dir fuzz --target-dir "$fuzz_target_dir" "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
    "${budget[@]}" -max_len=4096 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
    tail -n 6 "$log"
  else
    # Everything a reader of the CI log needs: the fuzzer's own account of the
    # failure (its build error, panic message or crash summary) and the input.
    echo "FAIL fuzz $target: cargo fuzz exited $?"
    grep -v '^"' "$log" | tail -n 60 | sed 's/^/  | /'
    for a in "fuzz/artifacts/$target"/*; do
      [ -f "$a" ] && { echo "  input $a (base64):"; base64 -w 100 "$a" | head -n 40 | sed 's/^/  | /'; }
    done
    failed=1
  fi
  rm -f "$log"
done
exit "${failed:-0}"
