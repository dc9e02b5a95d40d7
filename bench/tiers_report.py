#!/usr/bin/env python3
"""The table and chart of one `bench/run.sh tiers` run (standard library only).

usage: tiers_report.py RAW_DIR OUT_PREFIX

RAW_DIR holds what bench/tiers.sh left: hyperfine's JSON per workload
(true.json, pypass.json, and true-microvm.json / pypass-microvm.json when the
microvm backend ran in its own hyperfine run), rows.tsv (row, kind, in table
order), skipped.tsv (row, reason), env.txt (key=value). Writes OUT_PREFIX.md
(the table: median, ratio to bubblewrap and to bare, per workload),
OUT_PREFIX.svg (bars on a log scale) and OUT_PREFIX.json (the medians).
"""
import json
import math
import pathlib
import sys
from xml.sax.saxutils import escape

WORKLOADS = [("true", "/bin/true"), ("pypass", "python3 -c pass")]
KIND_LABEL = {
    "baseline": "baseline",
    "peer": "peer",
    "airlock": "airlock",
    "airlock-separate": "airlock, own run",
}
COLOR = {
    "baseline": "#8c8c8c",
    "peer": "#4c78a8",
    "airlock": "#e45756",
    "airlock-separate": "#f2a541",
}
DISPLAY = {
    "bare": "bare (no sandbox)",
    "bubblewrap": "bubblewrap",
    "crun": "crun, direct",
    "runsc": "runsc, direct",
}


def fmt_ms(ms):
    if ms is None:
        return "—"
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    if ms >= 100:
        return f"{ms:.0f} ms"
    return f"{ms:.1f} ms"


def fmt_ratio(r):
    if r is None:
        return "—"
    if r >= 100:
        return f"{r:.0f}x"
    if r >= 10:
        return f"{r:.1f}x"
    return f"{r:.2f}x"


def load(raw):
    env = {}
    for line in (raw / "env.txt").read_text().splitlines():
        k, _, v = line.partition("=")
        env[k] = v
    rows = [tuple(l.split("\t")[:2]) for l in (raw / "rows.tsv").read_text().splitlines() if l]
    skipped = [tuple(l.split("\t", 1)) for l in (raw / "skipped.tsv").read_text().splitlines() if "\t" in l]
    med, runs = {}, {}
    for w, _ in WORKLOADS:
        for name in (f"{w}.json", f"{w}-microvm.json"):
            f = raw / name
            if not f.exists():
                continue
            for r in json.loads(f.read_text())["results"]:
                med.setdefault(w, {})[r["command"]] = r["median"] * 1000
                runs.setdefault(w, {})[r["command"]] = len(r["times"])
    accel = raw / "microvm-accel.txt"
    env["microvm_accel"] = accel.read_text().strip() if accel.exists() else ""
    return env, rows, skipped, med, runs


def ratios(med, w, row):
    m = med.get(w, {}).get(row)
    if m is None:
        return None, None, None
    bw = med[w].get("bubblewrap")
    bare = med[w].get("bare")
    return m, (m / bw if bw else None), (m / bare if bare else None)


def markdown(env, rows, skipped, med, runs, date):
    build = env.get("build", "unknown")
    lines = [
        f"# Cold start by isolation tier, {date}",
        "",
        "`bench/run.sh tiers`: every row below in ONE `hyperfine -N` run per workload "
        f"({env['runs']} runs each after {env['warmup']} warm-up run(s)), medians; the ratios "
        "divide by the bubblewrap and the bare median of the same workload. hyperfine runs "
        "each command's runs back to back, so load from other work on the host (load average "
        f"{env.get('load', '?')} at the end, {env.get('cpus', '?')} CPUs) lands on some rows "
        "more than others.",
        "",
    ]
    if build != "release":
        lines += [
            f"**These figures are from airlock's {build} build, not a release build**: "
            "airlock's own share of each row is slower than a release build's.",
            "",
        ]
    head = "| | kind |"
    sep = "| --- | --- |"
    for _, label in WORKLOADS:
        head += f" `{label}` | / bubblewrap | / bare |"
        sep += " ---: | ---: | ---: |"
    lines += [head, sep]
    for row, kind in rows:
        mark = " ¹" if kind == "airlock-separate" else ""
        cells = f"| {DISPLAY.get(row, row)}{mark} | {KIND_LABEL.get(kind, kind)} |"
        for w, _ in WORKLOADS:
            m, rb, rbare = ratios(med, w, row)
            cells += f" {fmt_ms(m)} | {fmt_ratio(rb)} | {fmt_ratio(rbare)} |"
        lines.append(cells)
    lines.append("")
    if any(k == "airlock-separate" for _, k in rows):
        n = {runs.get(w, {}).get("airlock microvm") for w, _ in WORKLOADS} - {None}
        accel = env.get("microvm_accel") or "unknown"
        lines += [
            f"¹ microvm: a hyperfine run of its own per workload, {'/'.join(map(str, sorted(n)))} "
            f"run(s), no warm-up (accelerator: {accel}; every run boots a guest kernel, "
            "5-10 s under TCG emulation); its ratios divide by the medians of the main run.",
            "",
        ]
    lines += [
        "Rows: *bare* runs the command directly; *bubblewrap* with its strongest flags "
        "equivalent to airlock's defaults; *crun, direct* on an equivalent OCI bundle "
        "(bench/mk_oci_bundle.py: user namespace, cgroup limits, read-only binds); *runsc, "
        "direct* is `runsc --rootless --network=none --platform=ptrace do`; *airlock X* is "
        "`airlock run --backend X --` with the default policy (overlay workspace, cgroup "
        "limits, every layer on). wasm runs python only (CPython's WASI build, precompiled "
        "once before timing); docker runs the image's own python3 (Debian bookworm), the "
        "others the host's.",
        "",
    ]
    if skipped:
        lines += ["Not measured here:", ""]
        lines += [f"- {row}: {why}" for row, why in skipped]
        lines.append("")
    lines += ["Environment:", ""]
    lines.append(f"- airlock: {env.get('airlock', '?')}")
    if env.get("precompile_ms"):
        lines.append(f"- wasm: the first run (precompiles CPython into the cache) took {env['precompile_ms']} ms")
    lines.append(f"- {env.get('versions', '')}")
    lines.append(
        f"- kernel {env.get('kernel', '?')}, {env.get('cpus', '?')} CPUs shared with other "
        f"builds; load average {env.get('load', '?')} at the end"
    )
    return "\n".join(lines) + "\n"


def svg(env, rows, med, date):
    """Horizontal bars, one panel per workload, on a shared log scale."""
    vals = [v for w in med.values() for v in w.values() if v > 0]
    # Room below the fastest row, so that its bar never has zero length.
    lo = 10 ** math.floor(math.log10(min(vals)) - 0.3)
    hi = 10 ** math.ceil(math.log10(max(vals)))
    label_w, plot_w, right = 170, 560, 70
    width = label_w + plot_w + right
    bar_h, gap = 16, 6
    x = lambda v: label_w + plot_w * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
    out = []
    y = 0

    def text(tx, ty, s, anchor="start", size=11, weight="normal", color="#222"):
        out.append(
            f'<text x="{tx:.1f}" y="{ty:.1f}" font-size="{size}" text-anchor="{anchor}" '
            f'font-weight="{weight}" fill="{color}">{escape(s)}</text>'
        )

    y += 22
    text(width / 2, y, f"Cold start by isolation tier ({date})", "middle", 14, "bold")
    y += 16
    build = env.get("build", "unknown")
    text(
        width / 2, y,
        f"hyperfine -N medians, {build} build, {env.get('runs')} runs each; log scale, lower is better",
        "middle", 10, color="#555",
    )
    y += 18
    lx = label_w
    for kind in ("baseline", "peer", "airlock", "airlock-separate"):
        if kind == "airlock-separate" and not any(k == kind for _, k in rows):
            continue
        out.append(f'<rect x="{lx}" y="{y - 9}" width="10" height="10" fill="{COLOR[kind]}"/>')
        label = "airlock microvm (own hyperfine run)" if kind == "airlock-separate" else KIND_LABEL[kind]
        text(lx + 14, y, label, size=10)
        lx += 24 + 6.2 * len(label)
    y += 10
    for w, wlabel in WORKLOADS:
        present = [(r, k) for r, k in rows if r in med.get(w, {})]
        if not present:
            continue
        y += 22
        text(label_w, y, wlabel, size=12, weight="bold")
        y += 8
        top = y
        grid_at = len(out)
        for r, k in present:
            v = med[w][r]
            text(label_w - 8, y + bar_h - 4, DISPLAY.get(r, r), "end")
            out.append(
                f'<rect x="{label_w}" y="{y}" width="{max(x(v) - label_w, 1):.1f}" '
                f'height="{bar_h}" fill="{COLOR.get(k, "#444")}"/>'
            )
            text(x(v) + 4, y + bar_h - 4, fmt_ms(v), size=10)
            y += bar_h + gap
        bottom = y
        grid = []
        d = lo
        while d <= hi * 1.0001:
            gx = x(d)
            grid.append(
                f'<line x1="{gx:.1f}" y1="{top - 2}" x2="{gx:.1f}" y2="{bottom}" '
                'stroke="#ccc" stroke-width="0.6"/>'
            )
            text(gx, bottom + 12, fmt_ms(d).replace(".0 ", " ").replace(".00 ", " "), "middle", 9, color="#555")
            d *= 10
        out[grid_at:grid_at] = grid  # behind the bars
        y = bottom + 14
    y += 12
    body = "\n".join(out)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" '
        f'viewBox="0 0 {width} {y}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">\n'
        f'<rect width="{width}" height="{y}" fill="white"/>\n{body}\n</svg>\n'
    )


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    raw, prefix = pathlib.Path(sys.argv[1]), sys.argv[2]
    env, rows, skipped, med, runs = load(raw)
    date = pathlib.Path(prefix).name.removeprefix("tiers-")
    md = markdown(env, rows, skipped, med, runs, date)
    pathlib.Path(prefix + ".md").write_text(md)
    pathlib.Path(prefix + ".svg").write_text(svg(env, rows, med, date))
    summary = {
        "env": env,
        "rows": [
            {
                "row": r,
                "kind": k,
                **{
                    w: dict(zip(("median_ms", "vs_bubblewrap", "vs_bare"), ratios(med, w, r)))
                    | {"runs": runs.get(w, {}).get(r)}
                    for w, _ in WORKLOADS
                },
            }
            for r, k in rows
        ],
        "skipped": [{"row": r, "reason": why} for r, why in skipped],
    }
    pathlib.Path(prefix + ".json").write_text(json.dumps(summary, indent=1) + "\n")
    print(md)


if __name__ == "__main__":
    main()
