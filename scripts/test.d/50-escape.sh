#!/usr/bin/env bash
# The escape corpus (tests/escape): ~85 attack and control programs run through
# `airlock run`, judged by observed host state. Prints `N passed, N failed` last.
# Needs root (cgroups, host listeners) and gcc (C attacks are compiled here).
# ESCAPE_ARGS passes extra runner flags, e.g. ESCAPE_ARGS="--only net_ -v".
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v gcc >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc >/dev/null; }
cargo build --release --locked -p airlock
mkdir -p target/escape
# shellcheck disable=SC2086
python3 tests/escape/run.py --airlock target/release/airlock --report target/escape/report.json ${ESCAPE_ARGS:-}
