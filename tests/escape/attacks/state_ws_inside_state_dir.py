"""A workspace INSIDE airlock's state directory (finding 1 of the audit
review): an operator who runs `cd $AIRLOCK_STATE_DIR/audit && airlock run ...`,
or an agent session opened there. The state dir is hidden from a run only when
it lies inside the workspace; the other way round the run would see the live
audit log and approvals, and an `rw` run's changes would rewrite them (records
cut, the chain rebuilt, an approval forged) with `audit verify` still ok.

The driver makes a state dir of its own beside the workspace, puts a record in
its log, then tries to read and rewrite the log from runs whose workspace is
`<state>/audit`, `<state>` itself, `<state>/audit` through a symlink, and a run
whose filesystem.write names `<state>/approvals`; and starts `airlock mcp` on a
policy rooted in `<state>/audit`. Each must be refused before anything runs
(the log is byte-for-byte unchanged and nothing of it is in the output)."""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcp_driver as d  # noqa: E402

MARK = d.T.get("MARKER", "x")
SEED = f"seed-record-{MARK}"
# Reads the log, then appends a forged line to it and blanks the anchor.
ATTACK = ('for f in audit-*.jsonl ../audit/audit-*.jsonl; do [ -f "$f" ] && cat "$f"; done; '
          'for d in . audit approvals ../audit ../approvals; do '
          '[ -d "$d" ] && echo "{\\"forged\\":1}" >> "$d/audit-000001.jsonl" && echo > "$d/head.json"; done; '
          'echo > forged-approval.json; true')


def setup(ws):
    pass


def digest(state):
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(state)):
        dirs.sort()
        for name in sorted(files):
            p = os.path.join(root, name)
            h.update(p.encode() + b"\0")
            if name.startswith("audit-") or name == "head.json" or root.endswith("approvals"):
                with open(p, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


def policy(base, root, name, **kw):
    """A policy file outside the state dir (d.policy writes beside the root)."""
    path = os.path.join(base, name)
    with open(path, "w") as f:
        f.write(d.policy_text(root, **kw))
    return path


def attempt(what, base, state, env, root, cwd, extra=""):
    before = digest(state)
    pol = policy(base, root, "policy-" + hashlib.sha256(what.encode()).hexdigest()[:8] + ".toml", mode="rw", extra=extra,
                 allow='"sh", "cat", "echo", "true"')
    if d.HOST_MODE:
        r = subprocess.run(["sh", "-c", ATTACK], cwd=cwd, capture_output=True, timeout=60)
    else:
        r = subprocess.run([d.AIRLOCK, "run", "--policy", pol, "--cwd", cwd, "--json", "--", "sh", "-c", ATTACK],
                           cwd=cwd, env=env, capture_output=True, timeout=120)
    out = (r.stdout + r.stderr).decode("utf-8", "replace")
    if digest(state) != before:
        d.escaped(what, "the state dir's log, anchor or approvals changed")
    elif SEED in out:
        d.escaped(what, "the run read the audit log: " + out[:200])
    elif r.returncode == 0:
        d.escaped(what, "the run was not refused: " + out[:200])
    elif "state directory" not in out or "AIRLOCK_STATE_DIR" not in out:
        d.escaped(what, "refused, but not naming the state directory: " + out[:300])
    else:
        d.blocked(what, f"refused (exit {r.returncode})")


def main(ws):
    base = tempfile.mkdtemp(prefix="state-", dir=os.path.dirname(ws))
    try:
        state = os.path.join(base, "state")
        env = dict(os.environ, AIRLOCK_STATE_DIR=state)
        if d.HOST_MODE:
            for sub in ("audit", "approvals"):
                os.makedirs(os.path.join(state, sub))
            with open(os.path.join(state, "audit/audit-000001.jsonl"), "w") as f:
                f.write('{"stand-in": "%s"}\n' % SEED)
        else:
            pol = policy(base, ws, "policy-seed.toml", mode="overlay", allow='"echo"')
            r = subprocess.run([d.AIRLOCK, "run", "--policy", pol, "--cwd", ws, "--json", "--", "echo", SEED],
                               cwd=ws, env=env, capture_output=True, timeout=120)
            if r.returncode != 0:
                raise SystemExit(f"the seed run failed: {r.stderr[-300:]!r}")
            os.makedirs(os.path.join(state, "approvals"), exist_ok=True)
        audit = os.path.join(state, "audit")
        attempt("workspace = <state>/audit (rw: read the log, append a forged record)", base, state, env, audit, audit)
        attempt("workspace = <state> itself", base, state, env, state, state)
        link = os.path.join(base, "link")
        os.symlink(state, link)
        attempt("workspace = <state>/audit through a symlink", base, state, env, os.path.join(link, "audit"),
                os.path.join(link, "audit"))
        attempt("filesystem.write = <state>/approvals", base, state, env, ws, ws,
                extra=f'[filesystem]\nwrite = ["{os.path.join(state, "approvals")}"]\n')
        # airlock mcp on a policy rooted in the audit directory: refused at startup.
        if d.HOST_MODE:
            d.escaped("airlock mcp rooted in <state>/audit", "no airlock: nothing refuses")
        else:
            pol = policy(base, audit, "policy-mcp.toml", mode="rw")
            r = subprocess.run([d.AIRLOCK, "mcp", "--policy", pol], cwd=audit, env=env, input=b"",
                               capture_output=True, timeout=60)
            err = r.stderr.decode("utf-8", "replace")
            if r.returncode != 0 and "state directory" in err:
                d.blocked("airlock mcp rooted in <state>/audit", "refused at startup")
            else:
                d.escaped("airlock mcp rooted in <state>/audit", f"started (exit {r.returncode}): {err[-200:]}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    d.run(sys.modules[__name__])
