"""The audit signing key (AIRLOCK_AUDIT_SIGNING_KEY) and the checkpoint export
file (AIRLOCK_AUDIT_CHECKPOINT_FILE) inside the workspace (finding 2 of the
audit review). A run that can read the key can re-sign a rewritten log so that
`audit verify --key` passes, and whatever it prints is copied into the audit
log; a run that rewrites the checkpoint file hides a rollback from
`verify --checkpoints`.

The driver makes a workspace and a state dir of its own beside the runner's
workspace, generates a key pair in that workspace, then: an `rw` run reads the
key and rewrites both files (the key must not show up in the output or in the
audit log, and both files must be unchanged), and `airlock mcp` on that
workspace must refuse to start."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcp_driver as d  # noqa: E402

ATTACK = ('cat audit.pem; cat ./audit.pem; '
          'echo overwritten > audit.pem; echo "{\\"forged\\":1}" >> checkpoints.jsonl; true')


def setup(ws):
    pass


def read(p):
    try:
        with open(p, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def log_text(state):
    out = b""
    audit = os.path.join(state, "audit")
    for name in sorted(os.listdir(audit)) if os.path.isdir(audit) else []:
        if name.startswith("audit-"):
            out += read(os.path.join(audit, name)) or b""
    return out


def main(ws):
    base = tempfile.mkdtemp(prefix="keyws-", dir=os.path.dirname(ws))
    try:
        kws = os.path.join(base, "ws")
        state = os.path.join(base, "state")
        os.makedirs(kws)
        key = os.path.join(kws, "audit.pem")
        cps = os.path.join(kws, "checkpoints.jsonl")
        env = dict(os.environ, AIRLOCK_STATE_DIR=state, AIRLOCK_AUDIT_SIGNING_KEY=key,
                   AIRLOCK_AUDIT_CHECKPOINT_FILE=cps)
        if d.HOST_MODE:
            with open(key, "w") as f:
                f.write("-----BEGIN PRIVATE KEY-----\nstand-in\n-----END PRIVATE KEY-----\n")
        else:
            r = subprocess.run([d.AIRLOCK, "audit", "keygen", "--out", key], env=env, capture_output=True,
                               timeout=60)
            if r.returncode != 0:
                raise SystemExit(f"keygen failed: {r.stderr[-300:]!r}")
        key_before, cps_before = read(key), read(cps)

        pol = os.path.join(base, "policy.toml")
        with open(pol, "w") as f:
            f.write(d.policy_text(kws, mode="rw", allow='"sh", "cat", "echo", "true"'))
        if d.HOST_MODE:
            r = subprocess.run(["sh", "-c", ATTACK], cwd=kws, capture_output=True, timeout=60)
        else:
            r = subprocess.run([d.AIRLOCK, "run", "--policy", pol, "--cwd", kws, "--json", "--", "sh", "-c", ATTACK],
                               cwd=kws, env=env, capture_output=True, timeout=120)
        out = r.stdout + r.stderr
        if b"PRIVATE KEY" in out:
            d.escaped("read the signing key in the workspace", out[:200].decode("utf-8", "replace"))
        else:
            d.blocked("read the signing key in the workspace", "not shown")
        if b"PRIVATE KEY" in log_text(state):
            d.escaped("copy the signing key into the audit log", "the log holds it")
        else:
            d.blocked("copy the signing key into the audit log", "not in the log")
        if read(key) != key_before:
            d.escaped("rewrite the signing key (rw)", "the host's key changed")
        else:
            d.blocked("rewrite the signing key (rw)", "unchanged")
        now = read(cps)
        if now != cps_before and not (cps_before is None and now is not None and b"forged" not in now):
            d.escaped("append to the checkpoint file (rw)", repr((now or b"")[-120:]))
        else:
            d.blocked("append to the checkpoint file (rw)", "no forged line")

        if d.HOST_MODE:
            d.escaped("airlock mcp on a workspace holding the key", "no airlock: nothing refuses")
        else:
            r = subprocess.run([d.AIRLOCK, "mcp", "--policy", pol], cwd=kws, env=env, input=b"",
                               capture_output=True, timeout=60)
            err = r.stderr.decode("utf-8", "replace")
            if r.returncode != 0 and "AIRLOCK_AUDIT_SIGNING_KEY" in err:
                d.blocked("airlock mcp on a workspace holding the key", "refused at startup")
            else:
                d.escaped("airlock mcp on a workspace holding the key", f"started (exit {r.returncode}): {err[-200:]}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    d.run(sys.modules[__name__])
