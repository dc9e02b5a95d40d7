#!/usr/bin/env python3
"""Latency of the HTTP API over loopback, keep-alive connection, one request at
a time (client overhead included, so the figures are upper bounds):

* POST /v1/check (`ls -la`), target median < 1 ms;
* POST /v1/run of /bin/true against `airlock run -- /bin/true` on the command
  line (hyperfine), target: HTTP median at most 2 ms above the CLI median.
"""

import json
import os
import subprocess
import sys
import time

from common import Server, airlock_bin, percentiles, post

N_CHECK = int(os.environ.get("N_CHECK", "2000"))
N_RUN = int(os.environ.get("N_RUN", "200"))


def main() -> int:
    srv = Server()
    try:
        conn = srv.conn()
        for _ in range(50):  # warm up
            post(conn, "/v1/check", {"command": "ls -la"})
        samples = []
        for _ in range(N_CHECK):
            t = time.perf_counter()
            status, _, _ = post(conn, "/v1/check", {"command": "ls -la"})
            samples.append(time.perf_counter() - t)
            assert status == 200
        check = percentiles(samples)

        for _ in range(10):
            post(conn, "/v1/run", {"argv": ["/bin/true"]})
        samples = []
        for _ in range(N_RUN):
            t = time.perf_counter()
            status, _, body = post(conn, "/v1/run", {"argv": ["/bin/true"]})
            samples.append(time.perf_counter() - t)
            out = json.loads(body)
            assert status == 200 and out["outcome"]["exit_code"] == 0, body
        run_http = percentiles(samples)
    finally:
        assert srv.stop() == 0

    # The CLI, same binary, same kind of state dir and policy, via hyperfine.
    env = dict(os.environ, AIRLOCK_STATE_DIR=str(srv.dir / "cli-state"))
    export = srv.dir / "hyperfine.json"
    subprocess.run(
        ["hyperfine", "-N", "--warmup", "10", "--runs", str(N_RUN), "--export-json", str(export),
         f"{airlock_bin()} run --policy {srv.dir / 'policy.toml'} -- /bin/true"],
        env=env, cwd=srv.dir / "ws", check=True, stdout=subprocess.DEVNULL)
    cli = json.loads(export.read_text())["results"][0]
    cli_median_ms = cli["median"] * 1000

    report = {
        "binary": airlock_bin(),
        "state_dir_on": os.environ.get("BENCH_DIR") or "default temp dir (disk)",
        "check_loopback": check,
        "run_true_http": run_http,
        "run_true_cli_median_ms": cli_median_ms,
        "run_http_minus_cli_ms": run_http["median_ms"] - cli_median_ms,
    }
    print(json.dumps(report, indent=2))
    import shutil
    shutil.rmtree(srv.dir, ignore_errors=True)
    ok = check["median_ms"] < 1.0 and report["run_http_minus_cli_ms"] <= 2.0
    print(f"check median {check['median_ms']:.3f} ms (target < 1 ms); "
          f"run /bin/true: HTTP {run_http['median_ms']:.2f} ms vs CLI {cli_median_ms:.2f} ms "
          f"(+{report['run_http_minus_cli_ms']:.2f} ms, target <= 2 ms): {'MET' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
