"""Shared by the interface benchmarks: start a real `airlock serve` in a temp
dir and talk to it over keep-alive HTTP (loopback TCP) or its unix socket."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
TOKEN = "bench-token-0123456789abcdef"
POLICY = """
[workspace]
root = "ws"
[commands]
allow = ["ls", "echo", "true", "cat"]
"""


def airlock_bin() -> str:
    for cand in (os.environ.get("AIRLOCK_BIN"), REPO / "target/release/airlock", REPO / "target/debug/airlock"):
        if cand and os.access(str(cand), os.X_OK):
            # Absolute: the server under test starts in a directory of its own.
            return os.path.abspath(str(cand))
    raise SystemExit("no airlock binary: cargo build --release -p airlock")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, extra=(), policy=POLICY, binary=None):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="airlock-bench-", dir=os.environ.get("BENCH_DIR")))
        (self.dir / "ws").mkdir()
        (self.dir / "policy.toml").write_text(policy)
        tokens = self.dir / "tokens.toml"
        tokens.write_text(f'[[token]]\nname = "bench"\ntoken = "{TOKEN}"\npolicy = "policy.toml"\n')
        tokens.chmod(0o600)
        self.state = self.dir / "state"
        self.port = free_port()
        self.socket = str(self.state / "airlock.sock")
        env = dict(os.environ, AIRLOCK_STATE_DIR=str(self.state))
        env.pop("AIRLOCK_POLICY", None)
        self.log = open(self.dir / "serve.log", "w")
        self.proc = subprocess.Popen(
            [binary or airlock_bin(), "serve", "--tokens", str(tokens), "--listen", f"127.0.0.1:{self.port}", *extra],
            cwd=self.dir, env=env, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.time() + 20
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None or time.time() > deadline:
                raise SystemExit("server did not start: " + (self.dir / "serve.log").read_text())
            time.sleep(0.02)

    def conn(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=60)
        self.log.close()
        return rc


@contextlib.contextmanager
def serving(*extra: str, binary=None):
    """A fresh `airlock serve`, stopped (it must exit 0) and its directory
    removed afterwards."""
    srv = Server(extra=extra, binary=binary)
    try:
        yield srv
    finally:
        code = srv.stop()
        shutil.rmtree(srv.dir, ignore_errors=True)
        assert code == 0, f"airlock serve exited {code}"


def post(conn: http.client.HTTPConnection, path: str, body: dict):
    conn.request("POST", path, body=json.dumps(body),
                 headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def percentiles(samples_s):
    xs = sorted(samples_s)
    pick = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))] * 1000
    return {"n": len(xs), "median_ms": pick(0.5), "p90_ms": pick(0.9), "p99_ms": pick(0.99), "min_ms": xs[0] * 1000}
