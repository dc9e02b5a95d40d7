#!/usr/bin/env bash
# Toolchains that just work: each sample project of tests/toolchains is copied
# into a fresh workspace, `airlock policy init` writes the default policy there
# plus the `[toolchains] use` line it detects, and the project's own tests run
# inside airlock with the language's usual commands. Then the README's
# `./fix-things.sh`: denied with the exact line to add, allowed once it is added.
# Installs what it needs once (Debian's golang-go, nodejs, npm; pytest from PyPI
# into each sample's venv).
set -uo pipefail
cd "$(dirname "$0")/../.."
need=()
for pair in go:golang-go node:nodejs npm:npm; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null || exit 1
fi
cargo build -q -p airlock --locked || exit 1
bin=$PWD/target/debug/airlock
samples=$PWD/tests/toolchains
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export AIRLOCK_STATE_DIR=$work/state
unset AIRLOCK_POLICY
pass=0 fail=0
check() { # name, then a command that must succeed
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "ok   $name"; else fail=$((fail + 1)); echo "FAIL $name"; fi
}
# Runs airlock in the workspace $ws; output in $work/out, exit status returned.
al() { (cd "$ws" && "$bin" "$@") >"$work/out" 2>&1; }
shows() { grep -qF -- "$1" "$work/out" || { echo "--- expected '$1' in:"; tail -20 "$work/out"; return 1; }; }

fresh() { # copy sample $1 into a new workspace, run policy init there
  ws=$work/$1
  cp -r "$samples/$1" "$ws"
  al policy init
}

# python: a venv made from the host's python3, pytest from PyPI.
fresh python
check "python: policy init detects the python toolchain" grep -qx 'use = \["python"\]' "$ws/airlock.toml"
(cd "$ws" && python3 -m venv .venv && .venv/bin/pip install -q --disable-pip-version-check 'pytest==8.3.4') \
  >"$work/venv.log" 2>&1 || { echo "venv setup failed:"; tail "$work/venv.log"; }
al run -- .venv/bin/python -m pytest -q -p no:cacheprovider
check "python: .venv/bin/python -m pytest passes inside" shows "2 passed"
al run -c '. .venv/bin/activate && pytest -q -p no:cacheprovider'
check "python: . .venv/bin/activate && pytest passes inside" shows "2 passed"
al run -- .venv/bin/pytest -q -p no:cacheprovider
check "python: .venv/bin/pytest passes inside" shows "2 passed"

# rust: cargo from rustup's homes, read-only; target/ in the (overlay) workspace.
fresh rust
check "rust: policy init detects the rust toolchain" grep -qx 'use = \["rust"\]' "$ws/airlock.toml"
al run -- cargo test -q
check "rust: cargo test passes inside" shows "test result: ok. 1 passed"

# node: npm test with node's own runner.
fresh node
check "node: policy init detects the node toolchain" grep -qx 'use = \["node"\]' "$ws/airlock.toml"
al run -- npm test
check "node: npm test passes inside" shows "# pass 1"

# go: go test with the run's own build cache.
fresh go
check "go: policy init detects the go toolchain" grep -qx 'use = \["go"\]' "$ws/airlock.toml"
al run -- go test ./...
check "go: go test ./... passes inside" shows "ok  	sample"

# In allowlist mode each preset adds the registries its tools are set up to use,
# asked of the tools themselves (pip, npm, go env, cargo's index cache).
printf '[network]\nmode = "allowlist"\nallow = ["files.example.com"]\n[toolchains]\nuse = ["python", "node", "rust", "go"]\n' > "$work/allowlist.toml"
al policy check "$work/allowlist.toml"
for t in python node rust go; do
  check "allowlist: the $t preset adds its registry hosts" \
    awk -v t="toolchain $t:" '$0 == t { on = 1; next } /^toolchain / { on = 0 } on && $1 == "hosts" && $2 != "nothing" { ok = 1 } END { exit !ok }' "$work/out"
done

# A program in the workspace: denied with the exact line to add; then allowed.
al run --apply -- ./fix-things.sh; rc=$?
check "fix-things.sh: denied (77) by default" test "$rc" = 77
check "fix-things.sh: the denial names the line to add" shows 'add "./fix-things.sh" to [commands] allow'
sed -i 's|^allow = \[$|allow = [ "./fix-things.sh",|' "$ws/airlock.toml"
al run --apply -- ./fix-things.sh
check "fix-things.sh: runs once allowed, and --apply keeps its change" test "$(cat "$ws/FIXED.txt" 2>/dev/null)" = fixed

# Without the preset line, the same commands fail with a reason, not silently.
ws=$work/bare && mkdir -p "$ws" && cp -r "$samples/rust/." "$ws"
al run -- cargo test -q; rc=$?
check "rust without the preset: cargo is not found inside (exit 127)" test "$rc" = 127
check "rust without the preset: the hint names the preset line" shows '[toolchains] use = ["rust"]'
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
