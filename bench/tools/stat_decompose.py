#!/usr/bin/env python3
"""Where the stat-heavy loop's cost under airlock comes from (issue 15): the
benchmark's loop over os.stat('/') bare, under a user namespace that maps
nothing (host root's files then read as 65534, as in airlock's), under an
allow-everything seccomp filter, under both, and under `airlock run`.
Rounds alternate the five; each prints the best of 5 in-process passes.

usage: AIRLOCK=target/release/airlock python3 bench/tools/stat_decompose.py [ROUNDS]
Runs in a scratch directory (the workspace of the airlock runs).
"""

import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

LOOP = """import os,time
p=time.perf_counter;s=os.stat;best=[]
for k in range(5):
    t=p(); x=[s('/') for _ in range(200000)]; best.append(p()-t); del x
print('%.1f'%(min(best)*1e3))
"""


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    airlock = os.path.abspath(os.environ.get("AIRLOCK", "target/release/airlock"))
    here = pathlib.Path(__file__).resolve().parent
    with tempfile.TemporaryDirectory(prefix="stat-decompose-") as d:
        secexec = os.path.join(d, "secexec")
        subprocess.run(["gcc", "-O2", str(here / "seccomp_allow_exec.c"), "-o", secexec], check=True)
        pathlib.Path(d, "st.py").write_text(LOOP)
        cmds = {
            "bare": ["python3", "st.py"],
            "unshare -U": ["unshare", "-U", "python3", "st.py"],
            "seccomp (allow all)": [secexec, "python3", "st.py"],
            "unshare -U + seccomp": ["unshare", "-U", secexec, "python3", "st.py"],
            "airlock": [airlock, "run", "--", "python3", "st.py"],
        }
        res = {k: [] for k in cmds}
        for _ in range(rounds):
            for k, c in cmds.items():
                out = subprocess.run(c, cwd=d, capture_output=True, text=True, check=True).stdout
                res[k].append(float(out.split()[-1]))
    base = statistics.median(res["bare"])
    for k, v in res.items():
        m = statistics.median(v)
        print(f"{k:22s} {m:7.1f} ms  x{m / base:.3f}")


if __name__ == "__main__":
    main()
