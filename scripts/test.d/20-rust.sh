#!/usr/bin/env bash
# Unit and integration tests of every crate.
set -euo pipefail
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast
else
  cargo test --workspace --locked --no-fail-fast
fi
