"""MCP write_file and read_file on a FIFO (which a `rw` run can plant): the
call must be refused at once, not block the server forever, and the audit log
must hold an outcome for every file_write it started."""
import glob
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcp_driver as d  # noqa: E402


def setup(ws):
    os.mkfifo(os.path.join(ws, "pipe"))
    os.mkfifo(os.path.join(ws, "notes.md"))


def audit_records():
    out = []
    for f in sorted(glob.glob(os.path.join(d.T.get("STATE_DIR", "/nonexistent"), "audit", "audit-*.jsonl"))):
        with open(f) as fh:
            for line in fh:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def main(ws):
    pol = d.policy(ws)
    before = len(audit_records())
    tools = d.tools(pol)
    try:
        for tool, path in [("write_file", "pipe"), ("write_file", "notes.md"), ("read_file", "pipe")]:
            args = {"path": path, "content": "x\n"} if tool == "write_file" else {"path": path}
            t0 = time.monotonic()
            r = tools.call(tool, args, timeout=5.0)
            took = time.monotonic() - t0
            if d.refused(f"{tool} {path} (a FIFO)", r, {"not_a_file"}) and took > 2.0:
                d.escaped(f"{tool} {path}", f"refused, but only after {took:.1f}s")
    finally:
        if isinstance(tools, d.Mcp):
            # a blocked server does not end on EOF: stop our own child
            tools.proc.stdin.close()
            try:
                tools.proc.wait(timeout=3)
            except Exception:
                tools.proc.kill()
                tools.proc.wait()
        else:
            tools.close()
    if d.HOST_MODE:
        return
    recs = audit_records()[before:]
    writes = {}
    for r in recs:
        if r.get("kind") == "file_write":
            writes.setdefault(r["request_id"], []).append(r.get("stage"))
    reads = [r for r in recs if r.get("kind") == "file_read"]
    open_ended = [rid for rid, stages in writes.items() if "finished" not in stages]
    if open_ended or len(writes) < 2:
        d.escaped("audit", f"file_write records without an outcome: {open_ended} (of {len(writes)})")
    else:
        d.blocked("audit", f"{len(writes)} file_write requests, each with a finished record")
    if not reads:
        d.escaped("audit", "the read_file attempt left no file_read record")


if __name__ == "__main__":
    d.run(sys.modules[__name__])
