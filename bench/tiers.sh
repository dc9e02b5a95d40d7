#!/usr/bin/env bash
# Cold start of every built backend beside bare and bubblewrap, in ONE hyperfine
# run: `/bin/true` and `python3 -c pass` through `airlock run --backend native`,
# `oci` (crun and runc, picked with AIRLOCK_OCI_RUNTIME), `gvisor` (runsc,
# ptrace platform here) and, for python only, `wasm` (the .cwasm precompiled
# once before timing; its one-off compile is timed separately). Needs root (the
# oci and gvisor backends do).
#
#   bench/tiers.sh                # 20 runs each
#   RUNS=5 bench/tiers.sh         # quicker
#   AIRLOCK=target/release/airlock bench/tiers.sh
#
# Results: bench/results/tiers-<time>/ (hyperfine JSON, summary.md with the
# ratios to native, chart.png when matplotlib is there).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-20}; WARM=${WARM:-3}
need=()
for pair in hyperfine:hyperfine bwrap:bubblewrap crun:crun runc:runc runsc:runsc; do
  command -v "${pair%%:*}" >/dev/null || need+=("${pair#*:}")
done
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || need+=(python3-matplotlib)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
scripts/setup-wasm-python >/dev/null
if [ -z "${AIRLOCK:-}" ]; then
  cargo build --release --locked -q -p airlock
  AIRLOCK=target/release/airlock
fi
AIRLOCK=$(readlink -f "$AIRLOCK")
OUT=$PWD/bench/results/tiers-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$OUT"
WORK=$(mktemp -d /var/tmp/airlock-bench-tiers.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/ws"
export AIRLOCK_STATE_DIR=$WORK/state AIRLOCK_WASM_CACHE=$WORK/cache
cd "$WORK/ws"
PY=/usr/bin/python3
BW="bwrap --unshare-all --unshare-user --disable-userns --die-with-parent --new-session \
 --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 \
 --symlink usr/sbin /sbin --ro-bind /etc /etc --proc /proc --dev /dev --tmpfs /tmp \
 --clearenv --setenv PATH /usr/bin:/bin --chdir /tmp --cap-drop ALL"
AL="$AIRLOCK run --backend"
# The one-off precompile of CPython (per wasmtime version), then the timed runs.
start=$(date +%s%N)
"$AIRLOCK" run --backend wasm -- python3 -c pass
echo "first wasm run (precompiles CPython into the cache): $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee "$OUT/precompile.txt"
# Every command must run at all, or its figure means nothing.
args=()
for w in true pypass; do
  if [ $w = true ]; then C=/bin/true; else C="$PY -c pass"; fi
  args+=(-n "$w bare" "$C" -n "$w bwrap" "$BW $C" -n "$w native" "$AL native -- $C"
    -n "$w oci-crun" "env AIRLOCK_OCI_RUNTIME=crun $AL oci -- $C"
    -n "$w oci-runc" "env AIRLOCK_OCI_RUNTIME=runc $AL oci -- $C"
    -n "$w gvisor" "$AL gvisor -- $C")
  [ $w = pypass ] && args+=(-n "$w wasm" "$AL wasm -- python3 -c pass")
done
for ((i = 2; i < ${#args[@]}; i += 3)); do
  ${args[i]} >/dev/null 2>&1 || { echo "cannot run: ${args[i]}" >&2; exit 1; }
done
# A pause before each run (not timed): back to back, crun 1.8 sometimes meets
# the hybrid-cgroup layout before the kernel has handed hugetlb back to v1
# after the previous run ("cgroups in hybrid mode not supported").
hyperfine -N --style basic --prepare "sleep 0.5" --warmup "$WARM" -r "$RUNS" \
  --export-json "$OUT/startup.json" "${args[@]}"
/usr/bin/python3 - "$OUT" <<'PY'
import json, os, pathlib, sys
out = pathlib.Path(sys.argv[1])
ORDER = ["bare", "bwrap", "native", "oci-crun", "oci-runc", "gvisor", "wasm"]
WORKLOADS = [("true", "/bin/true"), ("pypass", "python3 -c pass")]
med = {}
for r in json.loads((out / "startup.json").read_text())["results"]:
    w, b = r["command"].split(" ", 1)
    med.setdefault(w, {})[b] = r["median"] * 1000
lines = ["| workload | " + " | ".join(ORDER) + " |", "| --- |" + " --- |" * len(ORDER)]
for w, label in WORKLOADS:
    cells = [f"{med[w][b]:.1f} ms" if b in med[w] else "—" for b in ORDER]
    lines.append(f"| `{label}` | " + " | ".join(cells) + " |")
for w, label in WORKLOADS:
    cells = [f"{med[w][b] / med[w]['native']:.2f}x" if b in med[w] else "—" for b in ORDER]
    lines.append(f"| `{label}`, / native | " + " | ".join(cells) + " |")
load = os.getloadavg()[0]
lines += ["", f"medians of one hyperfine run (all commands together); load average {load:.1f} "
          f"on {os.cpu_count()} CPUs after measuring; oci rows go through `env AIRLOCK_OCI_RUNTIME=...`"]
(out / "summary.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("no chart: python3-matplotlib is missing")
    sys.exit(0)
fig, axes = plt.subplots(1, len(WORKLOADS), figsize=(10, 4.2))
for ax, (w, label) in zip(axes, WORKLOADS):
    names = [b for b in ORDER if b in med[w]]
    vals = [med[w][b] for b in names]
    colors = ["#888888" if b in ("bare", "bwrap") else "#d62728" for b in names]
    ax.bar(names, vals, color=colors)
    ax.set_yscale("log")
    ax.set_title(f"airlock run -- {label}", fontsize=9)
    ax.set_ylabel("median wall time, ms (log)")
    ax.tick_params(axis="x", rotation=45, labelsize=8)
    for i, v in enumerate(vals):
        ax.text(i, v, f"{v:.0f}", ha="center", va="bottom", fontsize=7)
fig.suptitle("cold start by backend (hyperfine medians; lower is better)")
fig.tight_layout()
fig.savefig(out / "chart.png", dpi=110)
print(f"chart: {out / 'chart.png'}")
PY
echo "results in $OUT"
