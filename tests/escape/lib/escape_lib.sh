# Shared helpers for the sh attack programs of the escape corpus (POSIX sh).
# Source with `. ./escape_lib.sh` from the workspace (the runner's cwd).
# Output protocol: see escape_lib.py.
if [ -f ./targets.env ]; then
  # shellcheck disable=SC1091
  . ./targets.env
fi

start() { echo "ATTACK-START ${1:-$0}"; }
blocked() { echo "BLOCKED $1: $2"; }
escaped() { echo "ESCAPED $1: $2"; }
control_ok() { echo "CONTROL-OK $1"; }

# try_read WHAT PATH: content printed on success, so a canary leak reaches the output.
try_read() {
  if out=$(cat "$2" 2>&1); then
    escaped "$1" "$out"
  else
    blocked "$1" "$out"
  fi
}

# try_cmd WHAT CMD...: success of CMD means the attempt got through.
try_cmd() {
  what=$1; shift
  if out=$("$@" 2>&1); then
    escaped "$what" "$(echo "$out" | head -c 300)"
  else
    blocked "$what" "$(echo "$out" | head -c 300)"
  fi
}
