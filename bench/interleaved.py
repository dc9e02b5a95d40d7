#!/usr/bin/env python3
"""Start-up times measured round-robin (A B C A B C ...), so that a busy machine's
noise falls on every tool alike; hyperfine runs each command's runs back to back.
Prints median, 25th percentile and minimum per command, and ratios of medians.

usage: interleaved.py ROUNDS NAME=COMMAND [NAME=COMMAND ...]
   e.g. interleaved.py 40 bare=/bin/true "airlock=target/release/airlock run -- /bin/true"
"""
import shlex
import statistics as st
import subprocess
import sys
import time


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    rounds = int(sys.argv[1])
    cmds = []
    for arg in sys.argv[2:]:
        name, _, cmd = arg.partition("=")
        cmds.append((name, shlex.split(cmd)))
    times = {name: [] for name, _ in cmds}
    for name, argv in cmds:  # warm-up
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    for _ in range(rounds):
        for name, argv in cmds:
            t = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append((time.perf_counter() - t) * 1e3)
    base = st.median(times[cmds[0][0]])
    print(f"| tool ({rounds} interleaved rounds) | median ms | p25 ms | min ms | x {cmds[0][0]} |")
    print("|---|---:|---:|---:|---:|")
    for name, _ in cmds:
        xs = sorted(times[name])
        print(f"| {name} | {st.median(xs):.2f} | {xs[len(xs) // 4]:.2f} | {xs[0]:.2f} | {st.median(xs) / base:.2f} |")


if __name__ == "__main__":
    main()
