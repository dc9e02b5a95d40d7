"""Host-side drivers of the escape corpus (cases with `driver = true`).

These cases attack the way results come BACK to the host: the MCP file tools
and approvals. A driver runs on the host, not in a sandbox: it starts
`airlock mcp` (newline-delimited JSON-RPC over stdio, as the MCP stdio
transport defines it) or the airlock CLI, makes its attempts, and reports each
with the usual BLOCKED / ESCAPED lines. The runner then judges host state as
for every case (canaries, secrets in output, planted files, protected paths).

With `--backend none` (HOST_MODE=1) the file tools are replaced by the naive
implementation they must not be (join the path to the root, open it), so that
the checks are shown to fail with the protection off.

A driver module defines `setup(ws)` (run by the runner before the host state is
recorded: `python3 driver.py --setup`) and `main(ws)`; both get the workspace.
"""

import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time

from escape_lib import HOST_MODE, T, blocked, escaped, say, start  # noqa: F401

WS = os.path.dirname(os.path.abspath(sys.argv[0]))
AIRLOCK = T.get("AIRLOCK_BIN", "")
PWNED = T.get("PWNED", "airlock-escape-pwned")
CANARY = os.path.join("/tmp", PWNED + "-hook")


def policy_text(ws, mode="rw", workspace="", extra="", allow='"sh", "python3", "ls", "cat"'):
    return (
        f'[workspace]\nroot = "{ws}"\nmode = "{mode}"\n{workspace}\n[network]\nmode = "none"\n\n'
        f'[commands]\nallow = [{allow}]\non_unknown = "deny"\n\n' + extra
        # As an ordinary user without a cgroup, the default limits are refused
        # unless the policy accepts best effort (the runner's own policies do the
        # same in rootless mode); these drivers attack the return path, not limits.
        + ('\n[limits]\nenforcement = "best_effort"\n' if os.geteuid() != 0 else "")
    )


def policy(ws, mode="rw", workspace="", extra="", name="policy-driver.toml", **kw):
    """Write a policy for the workspace outside it; returns its path."""
    where = os.path.join(os.path.dirname(ws), "driver-policies")
    os.makedirs(where, exist_ok=True)
    path = os.path.join(where, os.path.basename(ws) + "-" + name)
    with open(path, "w") as f:
        f.write(policy_text(ws, mode, workspace, extra, **kw))
    return path


class Mcp:
    """`airlock mcp` over stdio."""

    def __init__(self, policy_path=None, cwd=None):
        argv = [AIRLOCK, "mcp"] + (["--policy", policy_path] if policy_path else [])
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            argv, cwd=cwd or WS, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err
        )
        self.buf = b""
        self.next_id = 1
        init = self.request(
            "initialize",
            {"protocolVersion": "2025-03-26", "capabilities": {},
             "clientInfo": {"name": "airlock-escape-driver", "version": "0"}},
            timeout=30,
        )
        if init is None or "result" not in init:
            self.err.seek(0)
            raise SystemExit(f"airlock mcp did not initialize: {init!r} {self.err.read()[-400:]!r}")
        self.notify("notifications/initialized", {})

    def notify(self, method, params):
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _send(self, msg):
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method, params, timeout=10.0):
        rid = self.next_id
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if msg.get("id") == rid:
                    return msg
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([fd], [], [], left)
            if r:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return None
                self.buf += chunk

    def call(self, name, args, timeout=10.0):
        """(is_error, structured body, text), or None if no answer came in time."""
        msg = self.request("tools/call", {"name": name, "arguments": args}, timeout)
        if msg is None:
            return None
        if "error" in msg:
            return (True, {"error": msg["error"]}, json.dumps(msg["error"]))
        res = msg["result"]
        text = "".join(c.get("text", "") for c in res.get("content", []))
        return (bool(res.get("isError")), res.get("structuredContent") or {}, text)

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Naive:
    """The file tools with the protection off: the path joined to the root and
    opened, as a careless implementation would. Only for HOST_MODE."""

    def __init__(self, ws):
        self.ws = ws

    def call(self, name, args, timeout=10.0):
        out = {}

        def work():
            p = os.path.join(self.ws, args.get("path", "."))
            # Safety net: even with the protection off, never touch a real host
            # path; only the workspace and the runner's own canaries.
            real = os.path.realpath(p)
            fenced = [os.path.realpath(x) for x in (self.ws, T.get("TMP_CANARY_DIR"), T.get("FAKE_HOME")) if x]
            if not any(real == f or real.startswith(f + "/") for f in fenced):
                out["r"] = (True, {"error": {"code": "naive_fence", "message": real}}, "naive fence")
                return
            try:
                if name == "read_file":
                    with open(p) as f:
                        out["r"] = (False, {"content": f.read()}, "")
                elif name == "write_file":
                    with open(p, "w") as f:
                        f.write(args["content"])
                    out["r"] = (False, {"bytes_written": len(args["content"])}, "")
                else:
                    entries = []
                    for d, dirs, files in os.walk(p):
                        for n in dirs + files:
                            entries.append({"path": os.path.relpath(os.path.join(d, n), p)})
                    out["r"] = (False, {"entries": entries}, "")
            except OSError as e:
                out["r"] = (True, {"error": {"code": "io", "message": str(e)}}, str(e))

        t = threading.Thread(target=work, daemon=True)
        t.start()
        t.join(timeout)
        return out.get("r")

    def close(self):
        pass


def tools(policy_path=None, cwd=None):
    return Naive(WS) if HOST_MODE else Mcp(policy_path, cwd)


def refused(what, r, codes=None):
    """Report one attempt: BLOCKED if the tool refused it (with one of `codes`
    when given), ESCAPED otherwise. Returns True when refused."""
    if r is None:
        escaped(what, "no answer within the time limit (the call blocked)")
        return False
    is_error, body, text = r
    code = (body.get("error") or {}).get("code") if isinstance(body, dict) else None
    if is_error and (codes is None or code in codes):
        blocked(what, f"{code}")
        return True
    if is_error:
        escaped(what, f"refused, but with {code!r} instead of {codes}: {text[:160]!r}")
        return False
    # what the model would have been shown (the runner looks for secrets in it)
    escaped(what, "the tool did it: " + (text or json.dumps(body))[:300])
    return False


def airlock(*args, cwd):
    """The airlock CLI with --json: (exit code, the answer; its raw tail if not JSON)."""
    r = subprocess.run([AIRLOCK] + list(args), cwd=cwd, capture_output=True, timeout=120)
    try:
        return r.returncode, json.loads(r.stdout or b"{}")
    except ValueError:
        return r.returncode, {"raw": r.stdout[-300:].decode("utf-8", "replace"),
                              "stderr": r.stderr[-300:].decode("utf-8", "replace")}


def git(ws, *args):
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=T.get("FAKE_HOME", "/nonexistent"),
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    return subprocess.run(["git", "-C", ws] + list(args), env=env, capture_output=True, timeout=30)


def git_repo(ws):
    """A real repository with one commit, for host-side `git status`/`git commit`."""
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "init", "--no-verify")


def hook_ran():
    """Whether a payload planted by an attempt ran on the host (its canary)."""
    return os.path.exists(CANARY)


def payload_sh():
    return f"#!/bin/sh\ntouch {CANARY}\n"


def run(module):
    if len(sys.argv) > 1 and sys.argv[1] == "--setup":
        module.setup(WS)
        return
    start()
    module.main(WS)
    if hook_ran():
        escaped("host payload", f"{CANARY} exists: a hook or config planted in the workspace ran on the host")
        try:
            os.unlink(CANARY)
        except OSError:
            pass
