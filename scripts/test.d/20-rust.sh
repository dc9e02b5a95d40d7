#!/usr/bin/env bash
# clippy over every target, then the unit and integration tests of every crate.
set -euo pipefail
# One compile for both. `cargo clippy` is `cargo check` with clippy-driver as the
# workspace's compiler wrapper; a check build compiles every dependency once more
# (metadata only, 4-5 minutes of both CPUs here, wasmtime's stack most of it),
# and the tests need them built in full anyway. So the test build itself runs
# clippy-driver over the workspace's crates: it lints each target, then compiles
# it, and the dependencies are built once, by rustc. CLIPPY_ARGS is how
# cargo-clippy hands its lint flags to the driver. The test run below is given
# the same two variables: without them cargo compiles the test targets again.
clippy_driver=$(rustc --print sysroot)/bin/clippy-driver
if [ ! -x "$clippy_driver" ]; then
  echo "FAIL lint: no clippy-driver at $clippy_driver; install it with: rustup component add clippy"
  exit 1
fi
linted=(env RUSTC_WORKSPACE_WRAPPER="$clippy_driver" CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__)
"${linted[@]}" cargo build --workspace --all-targets --locked \
  || { echo "FAIL lint: clippy or the build of the tests failed (the errors are above)"; exit 1; }
# The in-sandbox relay (a static build of its own, seconds): the gVisor and
# Docker-API tests that run where their runtime is installed bind it in.
AIRLOCK_RELAY=$(scripts/build-relay)
export AIRLOCK_RELAY
if cargo nextest --version >/dev/null 2>&1; then
  "${linted[@]}" cargo nextest run --workspace --locked --no-fail-fast
else
  "${linted[@]}" cargo test --workspace --locked --no-fail-fast
fi
