#!/usr/bin/env python3
"""The warm path of `airlock serve` (issue 15): POST /v1/run of /bin/true,
median from request to response over a keep-alive loopback connection, one
request at a time.

Three series from one server binary:

* warm: `--pool 2`, each request sent once the pool is full again, both
  sandboxes built (`airlock_pool_ready`: what a caller whose requests are
  not back to back sees); target median < 2 ms;
* back to back: `--pool 2`, the next request as soon as the last answered
  (the refill races the caller; some runs take a sandbox still being built);
* cold: `--pool 0`, every sandbox built on demand (the comparison);
* check: POST /v1/check of the same command on the same kind of server: the
  HTTP exchange, the gate and one durable audit record, with no sandbox. A run
  cannot answer faster than this plus its program: it is the floor under the
  warm series on this machine;
* warm, curl: the warm series' server and protocol, each request sent by curl
  over the unix socket, timed by curl itself (`time_total`: connect, request,
  response). The Python client's own share (building the request, parsing
  the response, a keep-alive TCP connection) is in the other series and not
  in this one; curl's start (about 3 ms) passes between the pool being full
  and the request.

The pool's own counters (/metrics) are printed with each series: a warm series
whose runs were not all warm is reported as such.
"""

import json
import os
import shutil
import subprocess
import sys
import time

from common import TOKEN, percentiles, post, serving

N = int(os.environ.get("N_RUN", "200"))
BODY = {"argv": ["/bin/true"]}


def metrics(conn) -> dict:
    conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    text = conn.getresponse().read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("airlock_pool_"):
            name, value = line.split()
            out[name.removeprefix("airlock_pool_")] = int(float(value))
    return out


def wait_ready(conn, n: int) -> None:
    deadline = time.time() + 20
    while metrics(conn).get("ready", 0) < n:
        if time.time() > deadline:
            raise SystemExit("the pool did not refill within 20 s")
        time.sleep(0.002)


def by_python(srv, conn) -> float:
    """One POST on the keep-alive connection; seconds, timed here."""
    t = time.perf_counter()
    status, _, body = post(conn, "/v1/run", BODY)
    elapsed = time.perf_counter() - t
    assert status == 200 and json.loads(body)["outcome"]["exit_code"] == 0, body
    return elapsed


def by_curl(srv, conn) -> float:
    """One POST by curl over the unix socket; seconds, as curl timed it."""
    out = subprocess.run(
        ["curl", "-sS", "-w", "\n%{http_code} %{time_total}", "--unix-socket", srv.socket,
         "-H", f"Authorization: Bearer {TOKEN}", "-H", "Content-Type: application/json",
         "-d", json.dumps(BODY), "http://airlock/v1/run"],
        capture_output=True, text=True, check=True).stdout
    body, _, tail = out.rpartition("\n")
    status, seconds = tail.split()
    assert status == "200" and json.loads(body)["outcome"]["exit_code"] == 0, out
    return float(seconds)


def series(pool: int, wait: bool, send=by_python) -> dict:
    with serving("--pool", str(pool)) as srv:
        conn = srv.conn()
        for _ in range(10):  # teaches the pool the spec; warms caches
            post(conn, "/v1/run", BODY)
        before = metrics(conn)
        samples = []
        for _ in range(N):
            if wait and pool:
                wait_ready(conn, pool)
            samples.append(send(srv, conn))
        after = metrics(conn)
    counts = {k: after.get(k, 0) - before.get(k, 0) for k in ("warm_runs", "cold_runs")}
    return {"pool": pool, "wait_for_refill": wait, **percentiles(samples), **counts}


def check_series() -> dict:
    with serving() as srv:
        conn = srv.conn()
        for _ in range(10):
            post(conn, "/v1/check", BODY)
        samples = []
        for _ in range(N):
            t = time.perf_counter()
            status, _, body = post(conn, "/v1/check", BODY)
            samples.append(time.perf_counter() - t)
            assert status == 200 and json.loads(body)["decision"] == "allow", body
    return percentiles(samples)


def main() -> int:
    warm = series(2, True)
    back_to_back = series(2, False)
    cold = series(0, False)
    check = check_series()
    curl = series(2, True, by_curl) if shutil.which("curl") else None
    print(json.dumps({"warm": warm, "back_to_back": back_to_back, "cold": cold, "check": check,
                      "warm_curl": curl}, indent=2))
    ok = warm["median_ms"] < 2.0 and warm["warm_runs"] == N
    print(f"POST /v1/run /bin/true: warm median {warm['median_ms']:.2f} ms "
          f"({warm['warm_runs']}/{N} warm; target < 2 ms: {'MET' if ok else 'MISSED'}), "
          f"back to back {back_to_back['median_ms']:.2f} ms "
          f"({back_to_back['warm_runs']}/{N} warm), cold {cold['median_ms']:.2f} ms; "
          f"warm/cold median ratio {warm['median_ms'] / cold['median_ms']:.2f}; "
          f"POST /v1/check (HTTP, gate, one durable record, no sandbox) {check['median_ms']:.2f} ms"
          + (f"; warm through curl over the unix socket {curl['median_ms']:.2f} ms "
             f"({curl['warm_runs']}/{N} warm)" if curl else "; no curl here"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
