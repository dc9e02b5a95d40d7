#!/usr/bin/env python3
"""Two airlock builds' AIRLOCK_PROFILE timelines side by side: medians of the
steps both print, over ROUNDS cold runs of /bin/true taken alternately.

usage: profile_ab.py ROUNDS BASE_BINARY NEW_BINARY [STEP ...]
  e.g. profile_ab.py 50 /tmp/ab/base/airlock target/release/airlock
Times are ms since the caller sent its request (helper and init steps) or
since the engine started (engine steps); "teardown" is how long the caller
waited for the helper's teardown after the answer.
"""
import os
import re
import statistics as st
import subprocess
import sys

STEPS = ["has the request", "init cloned and in its cgroup", "command exec'd",
         "caller total", "engine: run returns"]


def main() -> None:
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    rounds, binaries = int(sys.argv[1]), {"base": sys.argv[2], "new": sys.argv[3]}
    steps = sys.argv[4:] or STEPS
    keys = ["teardown"] + steps
    seen = {b: {k: [] for k in keys} for b in binaries}
    env = dict(os.environ, AIRLOCK_PROFILE="1")
    for _ in range(rounds):
        for name, binary in binaries.items():
            err = subprocess.run([binary, "run", "--", "/bin/true"], capture_output=True,
                                 text=True, env=env, stdin=subprocess.DEVNULL).stderr
            for line in err.splitlines():
                m = re.match(r"airlock profile: caller waited ([\d.]+) ms for the helper's teardown", line)
                if m:
                    seen[name]["teardown"].append(float(m.group(1)))
                    continue
                m = re.match(r"airlock profile:\s+([\d.]+) ms\s+(.*)", line)
                if not m or m.group(2).startswith("init:"):
                    continue
                for k in steps:
                    if m.group(2).endswith(k):
                        seen[name][k].append(float(m.group(1)))
    for k in keys:
        b, n = seen["base"][k], seen["new"][k]
        if b and n:
            print(f"{k:32s} base {st.median(b):6.2f} ms  new {st.median(n):6.2f} ms  (n={len(n)})")


if __name__ == "__main__":
    main()
