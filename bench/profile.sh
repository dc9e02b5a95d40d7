#!/usr/bin/env bash
# Where does the time of `airlock run -- /bin/true` go? Writes a report to
# bench/results/<time>-profile/profile.md (and prints it):
#   1. hyperfine variants that take one cost away at a time: the gate alone
#      (`airlock check`), the state directory (audit log fsync) on tmpfs, the
#      workspace read-only instead of overlay;
#   2. a low-overhead syscall timeline (strace --seccomp-bpf, only process, sync and
#      mount-namespace calls traced) split into phases;
#   3. strace -c -f counts of every syscall of one run.
#
#   bench/profile.sh [AIRLOCK=path] [RUNS=40]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-40}
if [ -z "${AIRLOCK:-}" ]; then cargo build --release --locked -q -p airlock; AIRLOCK=target/release/airlock; fi
AIRLOCK=$(readlink -f "$AIRLOCK")
OUT=$PWD/bench/results/$(date -u +%Y%m%dT%H%M%SZ)-profile
mkdir -p "$OUT"
WORK=$(mktemp -d /var/tmp/airlock-profile.XXXXXX)
trap 'rm -rf "$WORK" /dev/shm/airlock-profile-state.$$' EXIT
WS=$WORK/ws; mkdir -p "$WS"; echo x > "$WS/README"
cat > "$WORK/ro.toml" <<TOML
[workspace]
root = "$WS"
mode = "ro"
[commands]
allow = ["true"]
TOML
cat > "$WORK/overlay.toml" <<TOML
[workspace]
root = "$WS"
mode = "overlay"
[commands]
allow = ["true"]
TOML
export AIRLOCK_STATE_DIR=$WORK/state
SHM=/dev/shm/airlock-profile-state.$$
cd "$WS"
hyperfine -N --style basic --warmup 5 -r "$RUNS" --export-json "$OUT/variants.json" \
  -n "bare /bin/true" "/bin/true" \
  -n "airlock check (gate only)" "$AIRLOCK check -- /bin/true" \
  -n "airlock run (default policy)" "$AIRLOCK run -- /bin/true" \
  -n "airlock run, policy file, overlay" "$AIRLOCK run --policy $WORK/overlay.toml -- /bin/true" \
  -n "airlock run, policy file, ro workspace" "$AIRLOCK run --policy $WORK/ro.toml -- /bin/true" \
  -n "airlock run, state dir on tmpfs" "env AIRLOCK_STATE_DIR=$SHM $AIRLOCK run -- /bin/true" \
  > "$OUT/variants.txt" 2>&1 || { cat "$OUT/variants.txt"; exit 1; }

# timeline: only these calls are stopped at (seccomp-bpf), so the overhead is small
for i in 1 2 3 4 5; do
  strace -f --seccomp-bpf -ttt -o "$OUT/timeline.$i.txt" \
    -e trace=execve,clone,clone3,vfork,exit_group,fdatasync,fsync,unshare,pivot_root,wait4,fsopen,open_tree,umount2 \
    "$AIRLOCK" run -- /bin/true
done
strace -f -c -o "$OUT/strace-c.txt" "$AIRLOCK" run -- /bin/true

python3 - "$OUT" <<'PY'
import json, os, re, statistics as st, sys
out = sys.argv[1]
lines = ["# Profile of `airlock run -- /bin/true`", ""]
v = json.load(open(os.path.join(out, "variants.json")))["results"]
lines += ["## Variants (hyperfine, one cost removed at a time)", "", "| variant | median ms | min ms |", "|---|---:|---:|"]
for r in v:
    lines.append(f"| {r['command']} | {r['median']*1e3:.2f} | {r['min']*1e3:.2f} |")
lines.append("")

def phases(path):
    ev = []
    for line in open(path):
        m = re.match(r"(\d+)\s+(\d+\.\d+) (.*)", line)
        if m:
            ev.append((int(m.group(1)), float(m.group(2)), m.group(3)))
    t0 = ev[0][1]
    def first(pat, after=0.0):
        for pid, t, s in ev:
            if t >= after and re.search(pat, s):
                return t
        return None
    marks = {}
    marks["airlock starts"] = t0
    marks["first audit fdatasync starts"] = first(r"^fdatasync|^fsync")
    marks["helper re-exec (execve __sandbox-helper)"] = first(r'execve\(".*", \[".*", "__sandbox-helper"')
    marks["sandbox init forked (clone with CLONE_NEWNS)"] = first(r"clone\(.*CLONE_NEWNS")
    marks["first mount call"] = first(r"^(fsopen|open_tree)")
    marks["command exec (execve /bin/true)"] = first(r'execve\("/(usr/)?bin/true"')
    t_cmd = marks["command exec (execve /bin/true)"] or t0
    marks["command exits"] = first(r"^exit_group", after=t_cmd)
    marks["last audit fdatasync starts"] = max((t for _, t, s in ev if re.match(r"fdatasync|fsync", s)), default=None)
    marks["airlock exits"] = ev[-1][1]
    return {k: (None if t is None else (t - t0) * 1e3) for k, t in marks.items()}, sum(1 for _, _, s in ev if re.match(r"(fdatasync|fsync)\(", s))
runs = [phases(os.path.join(out, f"timeline.{i}.txt")) for i in range(1, 6)]
lines += ["## Timeline (ms since airlock's execve; median of 5 traced runs; tracing adds a little)", "",
          "| event | ms |", "|---|---:|"]
for k in runs[0][0]:
    vals = [r[0][k] for r in runs if r[0][k] is not None]
    lines.append(f"| {k} | {st.median(vals):.2f} |" if vals else f"| {k} | - |")
lines.append(f"\nfsync/fdatasync calls per run: {runs[0][1]}\n")
lines += ["## Syscall counts of one run (strace -f -c; times are inflated by strace)", "", "```"]
lines += open(os.path.join(out, "strace-c.txt")).read().splitlines()[:40]
lines += ["```", ""]
text = "\n".join(lines)
open(os.path.join(out, "profile.md"), "w").write(text + "\n")
print(text)
PY
echo "results in $OUT"
