#!/usr/bin/env bash
# Agent interfaces (issue 5): the Python client, its LangChain/LangGraph
# integration and the official MCP client against a real `airlock serve` /
# `airlock mcp` (pytest), then schemathesis against the live server with
# openapi.json. Its pinned Python packages live in a venv kept per machine,
# outside any checkout (installing them takes about a minute), named after the
# requirements file and the interpreter, so that a change of either makes a new
# one. The client under test is never installed there: a wheel is built from
# this checkout (its packaging), and the tests import it from src/.
set -euo pipefail
cd "$(dirname "$0")/../.."

# shellcheck source=scripts/lib/test-cache.sh
. scripts/lib/test-cache.sh
req=clients/python/requirements-test.txt
key=$( { cat "$req"; readlink -f "$(command -v python3)"; python3 -VV; } | sha256sum | cut -c1-16)
venv=$TEST_CACHE/py-venv-interfaces-$key
make_venv() {
  rm -rf "$venv"
  python3 -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check -r "$req" \
    && touch "$venv/.complete"
}
cache_make "$venv/.complete" make_venv || { echo "FAIL: the test venv could not be made"; exit 1; }
# The wheel is built from a copy: setuptools writes build/ and egg-info into the tree it builds.
wheels=$(mktemp -d)
cp -r clients/python "$wheels/src"
"$venv/bin/pip" wheel -q --disable-pip-version-check --no-deps --no-build-isolation -w "$wheels" "$wheels/src" \
  || { echo "FAIL: clients/python does not build as a wheel"; exit 1; }
ls "$wheels"/airlock_client-*.whl >/dev/null || { echo "FAIL: no airlock_client wheel was built"; exit 1; }
rm -rf "$wheels"

cargo build --locked -q -p airlock
export AIRLOCK_BIN="$PWD/target/debug/airlock"

echo "--- pytest clients/python"
rc=0
(cd clients/python && PYTHONPATH=$PWD/src "$venv/bin/python" -m pytest -q -p no:cacheprovider tests) || rc=$?
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here"
  exit 1
fi
[ "$rc" -eq 0 ] || exit "$rc"

echo "--- schemathesis against a live airlock serve"
work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -TERM "$server_pid"; wait "$server_pid" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/ws"
printf 'name,qty\napple,3\n' > "$work/ws/data.csv"
printf '[workspace]\nroot = "ws"\n[commands]\nallow = ["ls", "cat", "echo", "true", "python3", "head"]\n' > "$work/policy.toml"
token="schemathesis-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '[[token]]\nname = "schemathesis"\ntoken = "%s"\npolicy = "policy.toml"\nrole = "approver"\ntenants = ["*"]\n' "$token" > "$work/tokens.toml"
chmod 600 "$work/tokens.toml"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
AIRLOCK_STATE_DIR="$work/state" "$AIRLOCK_BIN" serve --tokens "$work/tokens.toml" \
  --listen "127.0.0.1:$port" --socket "$work/state/airlock.sock" > "$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 200); do [ -S "$work/state/airlock.sock" ] && break; sleep 0.05; done
# The coverage phase is left out: schemathesis 4.32.5 on Python 3.11 sometimes
# dies inside hypothesis ("AST constructor recursion depth mismatch") there,
# which is a tool error, not a server finding.
"$venv/bin/schemathesis" run openapi.json --url "http://127.0.0.1:$port" \
  -H "Authorization: Bearer $token" --checks all --phases examples,fuzzing,stateful \
  --max-examples 40 --workers 2 --seed 1 --no-color
kill -TERM "$server_pid"
wait "$server_pid"
server_pid=
echo "airlock serve exited cleanly after SIGTERM"

echo "--- burst: 200 runs at concurrency 2, queue 50 (none lost, none duplicated, nothing left)"
python3 bench/interfaces/burst.py
