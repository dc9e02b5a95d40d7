#!/usr/bin/env bash
# System packages the tests need, installed once (idempotent).
set -euo pipefail
need=()
# direnv: tests/escape's ret_envrc_named runs a command as a direnv shell would.
for pair in gcc:gcc bwrap:bubblewrap hyperfine:hyperfine ip:iproute2 python3:python3 curl:curl direnv:direnv; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
