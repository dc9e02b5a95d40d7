#!/usr/bin/env python3
"""A burst of 200 run requests at a server with 2 run slots and a queue of 50.

Every request must either complete (with its own output, exactly once) or get
429 with Retry-After; none may be lost or duplicated; afterwards no sandbox
helper, run directory or cgroup of the server may be left. Judged by observed
state: each response, the audit log on disk, /proc and the cgroup trees.
Exits non-zero on any violation.
"""

import collections
import glob
import http.client
import json
import os
import sys
import threading
import time

from common import TOKEN, Server, post

N = int(os.environ.get("BURST", "200"))


def children(pid):
    out = []
    for task in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            out += [int(p) for p in open(task).read().split()]
        except OSError:
            pass
    return out


def main() -> int:
    # 200 connections at once from one address: above the default per-peer cap
    # (128), which would answer the rest 503 too_many_connections before the
    # queue is reached; this burst is about the queue.
    srv = Server(extra=["--concurrency", "2", "--queue", "50", "--max-connections-per-peer", "256"])
    results = {}
    barrier = threading.Barrier(N)

    def fire(i):
        conn = srv.conn()
        barrier.wait()
        t = time.perf_counter()
        try:
            status, headers, body = post(conn, "/v1/run", {"command": f"echo burst-{i}"})
            results[i] = (status, headers, json.loads(body), time.perf_counter() - t)
        except Exception as e:  # a lost request: no answer at all
            results[i] = ("lost", {}, {"error": repr(e)}, time.perf_counter() - t)

    threads = [threading.Thread(target=fire, args=(i,)) for i in range(N)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    helpers_during = children(srv.proc.pid)
    server_pid = srv.proc.pid

    problems = []
    completed = [i for i, r in results.items() if r[0] == 200]
    refused = [i for i, r in results.items() if r[0] == 429]
    other = {i: r for i, r in results.items() if r[0] not in (200, 429)}
    if len(results) != N or other:
        problems.append(f"lost or failed: {len(results)} answers, others: {list(other.items())[:3]}")
    for i in completed:
        out = results[i][2]["outcome"]
        if out is None or out["stdout"] != f"burst-{i}\n" or out["exit_code"] != 0:
            problems.append(f"request {i}: wrong outcome {results[i][2]}")
    for i in refused:
        status, headers, body, _ = results[i]
        if body.get("code") != "queue_full" or headers.get("retry-after") != "1":
            problems.append(f"request {i}: 429 without queue_full/Retry-After: {headers} {body}")

    # The audit log on disk: each completed request ran exactly once, no
    # refused request ran at all.
    runs = collections.Counter()
    for f in sorted((srv.state / "audit").glob("*.jsonl")):
        for line in f.read_text().splitlines():
            r = json.loads(line)
            if r["kind"] == "execution":
                runs[r["request"]["command"]["command"]] += 1
    for i in completed:
        if runs[f"echo burst-{i}"] != 1:
            problems.append(f"request {i} ran {runs[f'echo burst-{i}']} times")
    for i in refused:
        if runs[f"echo burst-{i}"]:
            problems.append(f"refused request {i} ran anyway")

    rc = srv.stop()
    if rc != 0:
        problems.append(f"server exit status {rc}")
    # Nothing left behind.
    # Per-run directories (the backend's dot-named shared layout may stay).
    leftover_runs = list((srv.state / "runs").glob("[!.]*")) if (srv.state / "runs").exists() else []
    if str(srv.state) in open("/proc/self/mountinfo").read():
        problems.append("a mount under the state dir was left")
    if leftover_runs:
        problems.append(f"run directories left: {leftover_runs[:3]}")
    alive = [p for p in helpers_during if os.path.exists(f"/proc/{p}")]
    if alive or os.path.exists(f"/proc/{server_pid}"):
        problems.append(f"processes left: {alive}")
    ids = {results[i][2]["request_id"] for i in completed}
    cg = [d for d in glob.glob("/sys/fs/cgroup/*/airlock/*") + glob.glob("/sys/fs/cgroup/unified/airlock/*")
          if any(rid in d for rid in ids)]
    if cg:
        problems.append(f"cgroups left: {cg[:3]}")

    lat = sorted(r[3] for i, r in results.items() if r[0] == 200)
    report = {
        "requests": N, "completed": len(completed), "refused_429": len(refused), "lost": N - len(completed) - len(refused),
        "wall_s": round(wall, 2), "completed_median_ms": round(lat[len(lat) // 2] * 1000, 1) if lat else None,
        "helpers_seen_after_burst": len(helpers_during), "problems": problems,
    }
    print(json.dumps(report, indent=2))
    import shutil
    shutil.rmtree(srv.dir, ignore_errors=True)
    print(f"burst: {len(completed)} completed, {len(refused)} got 429, {report['lost']} lost, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
