#!/usr/bin/env bash
# The documentation's command examples (README.md, docs/sandbox.md, policy.md,
# interfaces.md, audit.md), run as written by tests/docs/examples.py; each is
# run or skipped with its reason. Prints `N passed, N failed, N skipped`.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build -q -p airlock --locked
python3 tests/docs/examples.py target/debug/airlock
