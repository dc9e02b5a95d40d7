#!/usr/bin/env python3
"""The warm path of two airlock builds, interleaved: POST /v1/run of /bin/true
sent to server A and B in turn (A B, then B A, ...: whichever goes second in a
round measured slower here), each request once that server's pool is full
again (as warm.py's warm series), so that a noisy moment falls on both.

usage: N_RUN=100 python3 bench/interfaces/warm_ab.py A_BINARY B_BINARY
"""

import contextlib
import os
import statistics as st
import sys
import time

from common import post, serving
from warm import BODY, metrics, wait_ready

N = int(os.environ.get("N_RUN", "100"))


def main() -> int:
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    samples = {name: [] for name in "AB"}
    with contextlib.ExitStack() as stack:
        servers = {name: stack.enter_context(serving("--pool", "2", binary=os.path.abspath(b)))
                   for name, b in zip("AB", sys.argv[1:])}
        conns = {name: srv.conn() for name, srv in servers.items()}
        for name, conn in conns.items():
            for _ in range(10):  # teaches the pool the spec; warms caches
                post(conn, "/v1/run", BODY)
        for i in range(N):
            for name in ("AB" if i % 2 == 0 else "BA"):
                conn = conns[name]
                wait_ready(conn, 2)
                t = time.perf_counter()
                status, _, _ = post(conn, "/v1/run", BODY)
                samples[name].append((time.perf_counter() - t) * 1e3)
                assert status == 200
        warm = {name: metrics(conn).get("warm_runs", 0) for name, conn in conns.items()}
    for name, b in zip("AB", sys.argv[1:]):
        xs = sorted(samples[name])
        print(f"{name} {b}: median {st.median(xs):.2f} ms, p25 {xs[len(xs) // 4]:.2f}, "
              f"min {xs[0]:.2f} ({warm[name]} warm runs of {N + 10})")
    print(f"B/A median ratio {st.median(samples['B']) / st.median(samples['A']):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
