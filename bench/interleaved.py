#!/usr/bin/env python3
"""Start-up times measured round-robin (A B C A B C ...), so that a busy machine's
noise falls on every tool alike; hyperfine runs each command's runs back to back.
Prints median, 25th percentile and minimum per command, and ratios of medians.

usage: interleaved.py [--vs NAME]... ROUNDS NAME=COMMAND [NAME=COMMAND ...]
   e.g. interleaved.py --vs bwrap 40 bare=/bin/true "airlock=target/release/airlock run -- /bin/true" "bwrap=..."
Ratios are to the first command's median, and with --vs NAME to NAME's too.
Every command's stdin is /dev/null (airlock run would stream anything else).
"""
import shlex
import statistics as st
import subprocess
import sys
import time


def main() -> None:
    args = sys.argv[1:]
    also = []
    while len(args) >= 2 and args[0] == "--vs":
        also.append(args[1])
        args = args[2:]
    if len(args) < 2:
        raise SystemExit(__doc__)
    rounds = int(args[0])
    cmds = []
    for arg in args[1:]:
        name, _, cmd = arg.partition("=")
        cmds.append((name, shlex.split(cmd)))
    times = {name: [] for name, _ in cmds}
    unknown = [n for n in also if n not in times]
    if unknown:
        raise SystemExit(f"--vs {unknown[0]}: no command is named so (names: {', '.join(times)})")
    for name, argv in cmds:  # warm-up
        subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    for _ in range(rounds):
        for name, argv in cmds:
            t = time.perf_counter()
            subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append((time.perf_counter() - t) * 1e3)
    refs = [cmds[0][0]] + [n for n in also if n != cmds[0][0]]
    medians = {name: st.median(xs) for name, xs in times.items()}
    print(f"| tool ({rounds} interleaved rounds) | median ms | p25 ms | min ms | " + " | ".join(f"x {r}" for r in refs) + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(refs))
    for name, _ in cmds:
        xs = sorted(times[name])
        ratios = " | ".join(f"{medians[name] / medians[r]:.2f}" for r in refs)
        print(f"| {name} | {medians[name]:.2f} | {xs[len(xs) // 4]:.2f} | {xs[0]:.2f} | {ratios} |")


if __name__ == "__main__":
    main()
