#!/usr/bin/env bash
# The WebAssembly backend as a user meets it: the CPython WASI runtime installed
# from its package (hash-pinned), `airlock run --backend wasm` for code and for a
# script in the workspace, its limits, overlay changes and apply, the refusals
# (a weaker tier than the policy's, a host program), then the escape corpus on
# the wasm tier (each case contained, or not applicable with its reason).
#   WASM_ESCAPE=0   skip the corpus
set -uo pipefail
cd "$(dirname "$0")/../.."
scripts/setup-wasm-python || exit 1
cargo build -q -p airlock --locked || exit 1
bin=$PWD/target/debug/airlock
state=$(mktemp -d)
ws=$(mktemp -d)
trap 'rm -rf "$state" "$ws"' EXIT
export AIRLOCK_STATE_DIR=$state
export AIRLOCK_WASM_CACHE=${AIRLOCK_WASM_CACHE:-$PWD/target/wasm-cache}
pass=0 fail=0
check() { # name, then a command that must succeed
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "ok   $name"; else fail=$((fail + 1)); echo "FAIL $name"; fi
}
run() { (cd "$ws" && "$bin" run --backend wasm "$@"); }
field() { python3 -c "import json,sys; print(json.load(sys.stdin).get('$1'))"; }

check "doctor --backend wasm: available and enforcing" "$bin" doctor --backend wasm
out=$(run -- python3 -c 'print(6*7)')
check "python3 -c runs on wasm" test "$out" = 42
printf 'import sys\nprint("script", sys.platform, sys.argv[1])\n' > "$ws/hello.py"
out=$(run -- python3 hello.py arg1)
check "a script in the workspace runs (sys.platform wasi)" test "$out" = "script wasi arg1"
# wasm takes a command's stdin whole: airlock reads its own first (it used to drop it).
out=$(printf 'north\nsouth\n' | run -- python3 -c 'import sys; print(sys.stdin.read().upper(), end="")')
check "piped stdin reaches the command" test "$out" = "$(printf 'NORTH\nSOUTH')"
out=$(run --json -- python3 -c 'open("new.txt","w").write("x"); import os; os.remove("hello.py")')
check "changes are reported (added and deleted)" test "$(echo "$out" | python3 -c 'import json,sys; print(sorted(c["kind"] for c in json.load(sys.stdin)["changes"]))')" = "['added', 'deleted']"
check "overlay: the host workspace is unchanged" test -f "$ws/hello.py" -a ! -e "$ws/new.txt"
run --apply -- python3 -c 'open("kept.txt","w").write("y")' >/dev/null 2>&1
check "--apply copies the change back" test "$(cat "$ws/kept.txt" 2>/dev/null)" = y
cat > "$ws/airlock.toml" <<'TOML'
[workspace]
root = "."
[commands]
allow = ["python3"]
[limits]
timeout = "2s"
memory = "64MiB"
output = "4KiB"
[sandbox]
backend = "wasm"
TOML
out=$(cd "$ws" && "$bin" run --json -- python3 -c 'while True: pass')
check "a spin is killed at the CPU or wall limit" python3 -c "import json,sys; assert json.loads(sys.argv[1])['killed_by'] in ('timeout','cpu_time')" "$out"
out=$(cd "$ws" && "$bin" run --json -- python3 -c 'import time; time.sleep(30)')
check "a guest sleeping in a host call is killed at the timeout" test "$(echo "$out" | field killed_by)" = timeout
out=$(cd "$ws" && "$bin" run --json -- python3 -c 'x = bytearray(200 << 20)')
check "memory beyond limits.memory ends the run as memory" test "$(echo "$out" | field killed_by)" = memory
out=$(cd "$ws" && "$bin" run --json -- python3 -c 'print("y" * 100000)')
check "output beyond limits.output is cut and killed" test "$(echo "$out" | field killed_by)" = output
(cd "$ws" && "$bin" run --backend native -- python3 -c 'print(1)' >/dev/null 2>"$state/err"); rc=$?
check "--backend native under a wasm policy is refused (weaker tier)" grep -q "weaker tier" "$state/err"
(cd "$ws" && "$bin" run -c 'python3 -c "print(1)"' >/dev/null 2>"$state/err"); rc=$?
check "a shell line on wasm is refused, naming the boundary" grep -q "cannot enforce.*programs" "$state/err"
rm -f "$ws/airlock.toml"
echo "$pass passed, $fail failed"
status=0
[ "$fail" = 0 ] || status=1
if [ "${WASM_ESCAPE:-1}" = 1 ]; then
  mkdir -p target/escape
  python3 tests/escape/run.py --airlock "$bin" --backend-tier wasm \
    --report target/escape/report-wasm.json ${ESCAPE_ARGS:-} || status=1
fi
exit $status
