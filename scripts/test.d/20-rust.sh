#!/usr/bin/env bash
# Unit and integration tests of every crate.
set -euo pipefail
# The in-sandbox relay (a static build of its own, seconds): the gVisor and
# Docker-API tests that run where their runtime is installed bind it in.
AIRLOCK_RELAY=$(scripts/build-relay)
export AIRLOCK_RELAY
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast
else
  cargo test --workspace --locked --no-fail-fast
fi
