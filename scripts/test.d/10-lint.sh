#!/usr/bin/env bash
# Formatting. clippy runs in 20-rust, as the compiler of the test build, so
# that the dependencies are compiled once (see there).
set -euo pipefail
cargo fmt --all -- --check
