#!/usr/bin/env python3
"""Summarise one bench/run.sh result directory: a table per workload (median, min-max,
ratio against bare and against bwrap), the in-process timings, whether the issue's
targets are met, and a PNG chart (when matplotlib is available to /usr/bin/python3).
Writes summary.md (and chart.png) into the directory and prints the summary.

usage: summarize.py RESULT_DIR
"""
import json
import os
import statistics as st
import subprocess
import sys

ORDER = ["bare", "airlock", "airlock-server", "bwrap", "crun", "firejail", "runsc"]
# airlock's two ways to run a command: a sandbox built per run, and one taken
# from a running `airlock serve`'s warm pool (`airlock run --server`).
AIRLOCKS = (("airlock", "airlock run"), ("airlock-server", "airlock run --server"))
WORKLOADS = [
    ("startup_true", "/bin/true"),
    ("startup_pypass", "python3 -c pass"),
    ("runtime_pycpu", "CPU-bound Python (sum of 30M)"),
    ("runtime_pysys", "syscall-heavy Python (200k os.stat)"),
]


def load(out):
    data = {}
    for key, _ in WORKLOADS:
        p = os.path.join(out, key + ".json")
        if os.path.exists(p):
            with open(p) as f:
                data[key] = {r["command"]: r for r in json.load(f)["results"]}
    return data


def round_robin_medians(table):
    """Median ms per tool from bench/interleaved.py's markdown table."""
    medians = {}
    for row in table.splitlines()[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        if len(cells) >= 2:
            try:
                medians[cells[0]] = float(cells[1])
            except ValueError:
                pass
    return medians


def ms(v):
    return v * 1000.0


def main():
    out = sys.argv[1]
    data = load(out)
    lines = []
    env = os.path.join(out, "env.txt")
    if os.path.exists(env):
        lines += ["```", open(env).read().rstrip(), "```", ""]
    for key, label in WORKLOADS:
        if key not in data:
            continue
        res = data[key]
        bare = res.get("bare", {}).get("median")
        bw = res.get("bwrap", {}).get("median")
        lines += [f"### {label} (`{key}`)", "",
                  "| tool | median ms | min - max ms | x bare | x bwrap | n |", "|---|---:|---|---:|---:|---:|"]
        for name in ORDER:
            r = res.get(name)
            if not r:
                continue
            xb = f"{r['median'] / bare:.2f}" if bare else "-"
            xw = f"{r['median'] / bw:.2f}" if bw else "-"
            lines.append(f"| {name} | {ms(r['median']):.2f} | {ms(r['min']):.2f} - {ms(r['max']):.2f} | "
                         f"{xb} | {xw} | {len(r['times'])} |")
        lines.append("")

    inproc = {}
    p = os.path.join(out, "inproc.txt")
    if os.path.exists(p):
        for line in open(p):
            parts = line.split()
            if len(parts) == 3:
                inproc.setdefault(parts[0], []).append((float(parts[1]), float(parts[2])))
        lines += ["### In-process timing (the workload times itself; no start-up; round-robin)", "",
                  "| tool | CPU loop median ms | x bare | 200k stat() median ms | x bare | n |",
                  "|---|---:|---:|---:|---:|---:|"]
        base = inproc.get("bare")
        bc = st.median(x[0] for x in base) if base else None
        bs = st.median(x[1] for x in base) if base else None
        for name in ORDER:
            rows = inproc.get(name)
            if not rows:
                continue
            c = st.median(x[0] for x in rows)
            s = st.median(x[1] for x in rows)
            lines.append(f"| {name} | {c:.1f} | {c / bc:.3f} | {s:.1f} | {s / bs:.3f} | {len(rows)} |" if bc else
                         f"| {name} | {c:.1f} | - | {s:.1f} | - | {len(rows)} |")
        lines.append("")

    rr = {}
    p = os.path.join(out, "interleaved.md")
    if os.path.exists(p):
        text = open(p).read().rstrip()
        lines += ["### /bin/true start-up, round-robin (noise shared by every tool)", ""]
        lines += text.splitlines() + [""]
        rr["true"] = round_robin_medians(text)
    for w, title in (("pypass", "python3 -c pass"), ("pycpu", "CPU-bound Python, end to end"),
                     ("pysys", "syscall-heavy Python, end to end")):
        p = os.path.join(out, f"interleaved_{w}.md")
        if os.path.exists(p):
            text = open(p).read().rstrip()
            lines += [f"### {title}, round-robin", ""] + text.splitlines() + [""]
            rr[w] = round_robin_medians(text)

    # the targets
    lines += ["### Targets (the cold-start issue, #15)", "", "| target | measured | met |", "|---|---|---|"]

    def med(key, name):
        return data.get(key, {}).get(name, {}).get("median")

    for name, cli in AIRLOCKS:
        a, b = med("startup_true", name), med("startup_true", "bwrap")
        if a and b:
            lines.append(f"| `{cli} -- /bin/true` median <= bwrap's | {ms(a):.2f} ms vs {ms(b):.2f} ms "
                         f"({a / b:.2f}x) | {'yes' if a <= b else 'NO'} |")
        a, b = rr.get("true", {}).get(name), rr.get("true", {}).get("bwrap")
        if a and b:
            lines.append(f"| `{cli} -- /bin/true` median <= bwrap's (round-robin) | {a:.2f} ms vs {b:.2f} ms "
                         f"({a / b:.2f}x) | {'yes' if a <= b else 'NO'} |")
        a, b = med("startup_pypass", name), med("startup_pypass", "bare")
        if a and b:
            lines.append(f"| `{cli} -- python3 -c pass` within 3 ms of bare | +{ms(a - b):.2f} ms "
                         f"({ms(a):.2f} vs {ms(b):.2f}) | {'yes' if a - b <= 0.003 else 'NO'} |")
    for key, label in (("runtime_pycpu", "CPU-bound"), ("runtime_pysys", "syscall-heavy")):
        a, b = med(key, "airlock"), med(key, "bare")
        if a and b:
            lines.append(f"| {label} within 5% of bare (end to end) | {100 * (a / b - 1):+.1f}% "
                         f"({ms(a):.0f} vs {ms(b):.0f} ms) | {'yes' if a <= 1.05 * b else 'NO'} |")
    for name, cli in AIRLOCKS:
        a, b = rr.get("pypass", {}).get(name), rr.get("pypass", {}).get("bare")
        if a and b:
            w = rr.get("pypass", {}).get("bwrap")
            peer = f"; bwrap +{w - b:.2f} ms" if w else ""
            lines.append(f"| `{cli} -- python3 -c pass` within 3 ms of bare (round-robin) | +{a - b:.2f} ms "
                         f"({a:.2f} vs {b:.2f}{peer}) | {'yes' if a - b <= 3 else 'NO'} |")
    for w, label in (("pycpu", "CPU-bound"), ("pysys", "syscall-heavy")):
        a, b = rr.get(w, {}).get("airlock"), rr.get(w, {}).get("bare")
        if a and b:
            lines.append(f"| {label} within 5% of bare (end to end, round-robin) | {100 * (a / b - 1):+.1f}% "
                         f"({a:.0f} vs {b:.0f} ms) | {'yes' if a <= 1.05 * b else 'NO'} |")
    if inproc.get("airlock") and inproc.get("bare"):
        for idx, label in ((0, "CPU-bound"), (1, "syscall-heavy")):
            a = st.median(x[idx] for x in inproc["airlock"])
            b = st.median(x[idx] for x in inproc["bare"])
            lines.append(f"| {label} within 5% of bare (in-process) | {100 * (a / b - 1):+.1f}% "
                         f"({a:.0f} vs {b:.0f} ms) | {'yes' if a <= 1.05 * b else 'NO'} |")
    p = os.path.join(out, "warm.txt")
    if os.path.exists(p):
        text = open(p).read()
        warm = json.loads(text[: text.rindex("}") + 1])
        w, c = warm["warm"], warm["cold"]

        def met(series: dict) -> str:
            # Under 2 ms, and every run of the series took a warm sandbox.
            return "yes" if series["median_ms"] < 2.0 and series.get("cold_runs", 1) == 0 else "NO"

        n = w.get("warm_runs", 0) + w.get("cold_runs", 0)
        lines.append(f"| `POST /v1/run` of /bin/true, warm pool: median < 2 ms | {w['median_ms']:.2f} ms "
                     f"({w.get('warm_runs', 0)}/{n} warm; pool 0: {c['median_ms']:.2f} ms, "
                     f"ratio {w['median_ms'] / c['median_ms']:.2f}) | "
                     f"{met(w)} |")
        cu = warm.get("warm_curl")
        if cu:
            lines.append(f"| the same, curl over the unix socket (curl's own timing) | {cu['median_ms']:.2f} ms "
                         f"({cu.get('warm_runs', 0)}/{cu['n']} warm) | {met(cu)} |")
    lines.append("")
    text = "\n".join(lines)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    chart(out, data)


def chart(out, data):
    """A grouped bar chart (log scale) drawn by /usr/bin/python3's matplotlib."""
    series = {key: {n: ms(r["median"]) for n, r in res.items()} for key, res in data.items()}
    code = r'''
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
series, order, labels, path = json.loads(sys.argv[1])
fig, axes = plt.subplots(1, len(series), figsize=(4.2 * len(series), 4.2))
if len(series) == 1:
    axes = [axes]
for ax, (key, label) in zip(axes, [(k, l) for k, l in labels if k in series]):
    names = [n for n in order if n in series[key]]
    vals = [series[key][n] for n in names]
    colors = ["#888888" if n == "bare" else "#d62728" if n.startswith("airlock") else "#1f77b4" for n in names]
    ax.bar(names, vals, color=colors)
    ax.set_yscale("log")
    ax.set_title(label, fontsize=9)
    ax.set_ylabel("median wall time, ms (log)")
    ax.tick_params(axis="x", rotation=45, labelsize=8)
    for i, v in enumerate(vals):
        ax.text(i, v, f"{v:.1f}" if v < 100 else f"{v:.0f}", ha="center", va="bottom", fontsize=7)
fig.suptitle("airlock and peers (hyperfine medians; lower is better)")
fig.tight_layout()
fig.savefig(path, dpi=110)
'''
    arg = json.dumps([series, ORDER, WORKLOADS, os.path.join(out, "chart.png")])
    r = subprocess.run(["/usr/bin/python3", "-c", code, arg], capture_output=True, text=True)
    if r.returncode == 0:
        print(f"chart: {os.path.join(out, 'chart.png')}")
    else:
        print("no chart (python3-matplotlib missing?): " + r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "no chart")


if __name__ == "__main__":
    main()
