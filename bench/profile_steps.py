#!/usr/bin/env python3
"""Medians of `AIRLOCK_PROFILE=1 airlock run` steps over many runs, one column
per binary, the binaries run in turn (A B A B ...): one run's profile moves by
0.1-1 ms from run to run on this host, so a change is judged on medians.

    python3 bench/profile_steps.py 60 OLD_BINARY NEW_BINARY [-- COMMAND...]

Each step's time is where that binary's profile puts it (the helper's and
init's steps count from the caller's spawn request, the engine's from the
start of `Engine::run`); a step a binary does not print shows `-`. Values
printed inside a step's text (the gate's wait, the teardown's wait) get rows
of their own. The last column is the second binary's median minus the
first's. Runs use a fresh workspace and state directory, removed at the end.
"""

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

LINE = re.compile(r"airlock profile:\s+(?:([\d.]+) ms\s+)?(.*)")
VALUE = re.compile(r"([\d.]+) ms")


def steps(stderr: str) -> dict[str, float]:
    """Step label -> ms, from one run's profile lines."""
    out: dict[str, float] = {}
    for line in stderr.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        at, text = m.groups()
        label = VALUE.sub("X ms", text)
        if at is not None:
            out[label] = float(at)
        inner = VALUE.search(text)
        if inner:
            out[f"({label}: X)"] = float(inner.group(1))
    return out


def main() -> int:
    args = sys.argv[1:]
    command = ["/bin/true"]
    if "--" in args:
        i = args.index("--")
        args, command = args[:i], args[i + 1 :]
    if len(args) < 2 or not args[0].isdigit():
        raise SystemExit(__doc__)
    rounds, binaries = int(args[0]), [os.path.abspath(b) for b in args[1:]]
    for b in binaries:
        if not os.access(b, os.X_OK):
            raise SystemExit(f"not an executable: {b}")
    work = tempfile.mkdtemp(prefix="airlock-profile-steps.", dir="/var/tmp")
    try:
        ws = os.path.join(work, "ws")
        os.mkdir(ws)
        with open(os.path.join(ws, "README"), "w") as f:
            f.write("workspace file\n")
        env = dict(os.environ, AIRLOCK_PROFILE="1", AIRLOCK_STATE_DIR=os.path.join(work, "state"))
        samples: dict[str, dict[str, list[float]]] = {b: {} for b in binaries}
        order: dict[str, int] = {}
        for _ in range(rounds):
            for b in binaries:
                p = subprocess.run(
                    [b, "run", "--cwd", ws, "--", *command],
                    env=env, cwd=ws, capture_output=True, text=True,
                )
                if p.returncode != 0:
                    raise SystemExit(f"{b} run failed ({p.returncode}):\n{p.stderr}")
                for label, ms in steps(p.stderr).items():
                    samples[b].setdefault(label, []).append(ms)
                    order.setdefault(label, len(order))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def med(b: str, label: str) -> float | None:
        v = samples[b].get(label)
        return statistics.median(v) if v else None

    names = [f"{i + 1}: {os.path.basename(b)}" for i, b in enumerate(binaries)]
    diff = len(binaries) == 2
    print(f"Medians of {rounds} runs each, in turn, of `run -- {' '.join(command)}` (ms)\n")
    for i, b in enumerate(binaries):
        print(f"{i + 1}: {b}")
    print()
    head = ["step", *names] + (["2 - 1"] if diff else [])
    print("| " + " | ".join(head) + " |")
    print("|---" + "|---:" * (len(head) - 1) + "|")
    for label in sorted(order, key=order.get):
        vals = [med(b, label) for b in binaries]
        cells = ["-" if v is None else f"{v:.2f}" for v in vals]
        if diff:
            a, c = vals
            cells.append("-" if a is None or c is None else f"{c - a:+.2f}")
        print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
