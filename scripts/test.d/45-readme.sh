#!/usr/bin/env bash
# The README's set-up as a new user meets it: a fresh `git clone` of this
# repository, the README's first command run exactly as README.md writes it (the
# line is read out of README.md, not copied here) with its output checked, then the
# README's install command and `airlock --version` from PATH, and a sandbox run by
# the installed binary (whose helper is itself, re-executed from the install dir).
#
# Cost: the clone builds in release. CARGO_TARGET_DIR is kept per machine, outside
# any checkout (like cargo's registry cache), and shared by the first command and
# the install step, so that a CI run reuses the dependencies an earlier one
# compiled. That stays honest: a fresh clone's files are all newer than any
# artifact, so cargo compiles every workspace crate again from the clone's own
# files; only registry crates, whose sources cargo checks by version and
# checksum, are reused (scripts/lib/test-cache.sh).
# The install goes to a temporary CARGO_INSTALL_ROOT, not the machine's ~/.cargo/bin.
# The release profile is built without optimisation here (CARGO_PROFILE_RELEASE_*
# below): what this part proves (cargo finds the airlock binary, the binary builds
# and runs a sandbox, its helper re-executes from the install dir) does not depend
# on the optimiser, and an optimised build of every dependency costs CI minutes.
# README_OPTIMISED=1 builds exactly as a user's machine does.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=scripts/lib/test-cache.sh
. scripts/lib/test-cache.sh
export CARGO_TARGET_DIR=$TEST_CACHE/readme-target
if [ "${README_OPTIMISED:-0}" != 1 ]; then
  export CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_DEBUG=0
fi
pass=0 fail=0
check() { # name, then a command that must succeed
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "ok   $name"; else fail=$((fail + 1)); echo "FAIL $name"; fi
}

# The first line of the first ```sh block after the first line matching $1.
readme_line() {
  awk -v want="$1" '
    !found && $0 ~ want { found = 1; next }
    found && /^```sh$/ { inblock = 1; next }
    inblock { print; exit }
  ' README.md
}

# 1. A fresh clone of what is committed, as a user gets it.
git clone -q --no-hardlinks "$repo" "$work/airlock"
cd "$work/airlock"
first=$(readme_line '^## Set up in two commands')
second=$(awk -v want='^## Set up in two commands' '
    !found && $0 ~ want { found = 1; next }
    found && /^```sh$/ { inblock = 1; next }
    inblock && n++ == 1 { print; exit }' README.md)
install=$(readme_line '^Install `airlock` on your `PATH`')
echo "README's first command: $first"
echo "README's install command: $install"
check "the first command is the cargo run of the main job" test "${first%% *}" = cargo
check "the second command is scripts/test, executable" test -x "${second%% *}"
check "the install command is a cargo install" test "${install%% --*}" = "cargo install"

# 2. The first command, literally (bash reads the line, trailing comment and all).
# It runs as a user would: the default policy, the default state directory.
out=$(bash -c "$first" 2>"$work/first.err") || { echo "exit $?"; tail -20 "$work/first.err"; }
check "the first command prints from the sandbox" test "$out" = "hello from the sandbox"

# 3. The install step, literally, into a private root; then airlock from PATH.
export CARGO_INSTALL_ROOT=$work/prefix
bash -c "$install" >"$work/install.log" 2>&1 || tail -20 "$work/install.log"
export PATH="$CARGO_INSTALL_ROOT/bin:$PATH"
check "airlock is on PATH from the install root" test "$(command -v airlock)" = "$CARGO_INSTALL_ROOT/bin/airlock"
check "the wasm helper airlock-wasm is installed beside it" test -x "$CARGO_INSTALL_ROOT/bin/airlock-wasm"
check "the server airlock-serve is installed beside it" test -x "$CARGO_INSTALL_ROOT/bin/airlock-serve"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
check "airlock --version from PATH says $version" test "$(cd / && airlock --version)" = "airlock $version"
ws=$(mktemp -d -p "$work")
out=$(cd "$ws" && AIRLOCK_STATE_DIR="$work/state" airlock run -- python3 -c 'print("installed")') || true
check "the installed binary runs a sandbox (its helper re-executed from PATH)" test "$out" = installed
# `airlock mcp` from PATH becomes the installed airlock-serve: one MCP
# initialize request over stdio gets its answer.
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"readme","version":"0"}}}'
out=$(cd "$ws" && printf '%s\n' "$init" | AIRLOCK_STATE_DIR="$work/state" timeout 20 airlock mcp 2>"$work/mcp.err" | head -1) || true
check "airlock mcp from PATH answers as the installed airlock-serve" grep -q '"serverInfo"' <<<"$out" || tail -5 "$work/mcp.err"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
