#!/usr/bin/env bash
# Network allowlist mode (issue 6): the egress proxy against curl, Python urllib and
# pip on loopback, the in-sandbox relay, and netwatch (seccomp user notification)
# refusing and logging direct connects / UDP DNS / raw sockets in a fresh netns.
# Everything stays on 127.0.0.0/8 or inside network namespaces made here.
set -euo pipefail
need=()
for pair in curl:curl unshare:util-linux ip:iproute2 sha256sum:coreutils nginx:nginx-light; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
python3 -m pip --version >/dev/null 2>&1 || python3 -m ensurepip --upgrade >/dev/null
# The Rust tests of this mode (airlock-netproxy's unit, proxy and sandbox_e2e tests,
# native::netwatch and relay) run in 20-rust with the rest of the workspace;
# run them alone with `cargo test -p airlock-netproxy` and
# `cargo test -p airlock-sandbox --lib -- native::netwatch relay::`.
# Through the CLI, the engine and the audit log (allowlist policy, refusals only: no lookups leave the machine).
cargo build --locked -p airlock
python3 crates/airlock-netproxy/tests/cli_allowlist.py target/debug/airlock
# The escape corpus's network category again, with the egress proxy in front (network.mode = "allowlist").
python3 tests/escape/run.py --airlock target/debug/airlock --category network --network allowlist
# The whole-path download benchmark, one round in the test profile: it proves the
# benchmark runs (curl in a real sandbox through the proxy, nginx on loopback,
# every byte and every log entry accounted for). Its figures are not judged here;
# run `cargo bench -p airlock-netproxy --bench sandbox_download` for those.
ROUNDS=1 cargo test --locked -q --workspace --bench sandbox_download
