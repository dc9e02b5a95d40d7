#!/usr/bin/env python3
"""One AIRLOCK_PROFILE=1 trace per warm POST /v1/run of /bin/true (issue 15):
a server like warm.py's with `--pool 2`, ten runs to teach the pool its spec,
then NPROF runs, each sent once the pool is full again and quiet; prints what
the server logged for each, with the time the client saw.

NPROF=3 AIRLOCK_BIN=$PWD/target/release/airlock python3 bench/interfaces/warm_profile.py
"""

import os
import sys
import time

os.environ["AIRLOCK_PROFILE"] = "1"  # inherited by the server

from common import post, serving  # noqa: E402
from warm import BODY, wait_ready  # noqa: E402


def main() -> int:
    with serving("--pool", "2") as srv:
        conn = srv.conn()
        for _ in range(10):
            post(conn, "/v1/run", BODY)
        log = srv.dir / "serve.log"
        for i in range(int(os.environ.get("NPROF", "3"))):
            wait_ready(conn, 2)
            time.sleep(0.2)  # the refill's last steps are done
            start = log.stat().st_size
            t = time.perf_counter()
            status, _, _ = post(conn, "/v1/run", BODY)
            dt = (time.perf_counter() - t) * 1000
            time.sleep(0.1)  # the server's last lines are written
            print(f"--- run {i}: HTTP {status}, client saw {dt:.2f} ms")
            print(log.read_text()[start:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
