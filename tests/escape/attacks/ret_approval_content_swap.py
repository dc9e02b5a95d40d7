"""Approvals bind to content: a person approves `bash build.sh`; a later
allowed `--apply` run rewrites build.sh; the run under the approval must
refuse (content_changed, naming build.sh), not run the new content."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcp_driver as d  # noqa: E402

SWAPPED = "SWAPPED-CONTENT-" + d.T.get("MARKER", "x")


def setup(ws):
    with open(os.path.join(ws, "build.sh"), "w") as f:
        f.write("echo reviewed build step\n")


def main(ws):
    rewrite = f'open("build.sh", "w").write("echo {SWAPPED}\\n")'
    if d.HOST_MODE:
        # no approvals at all: the rewrite lands and the command runs what it says now
        subprocess.run(["python3", "-c", rewrite], cwd=ws, check=True)
        out = subprocess.run(["bash", "build.sh"], cwd=ws, capture_output=True, text=True).stdout
        if SWAPPED in out:
            d.escaped("approved bash build.sh", "ran the rewritten build.sh")
        return
    pol = d.policy(ws, mode="overlay", allow='"sh", "python3"',
                   extra='[[rule]]\nprefix = ["bash", "build.sh"]\ndecision = "approval_required"\n'
                         'reason = "the build script needs a person"\n')
    code, first = d.airlock("run", "--policy", pol, "--cwd", ws, "--json", "--", "bash", "build.sh", cwd=ws)
    approval = (first.get("approval") or {}).get("id")
    if not approval:
        d.escaped("setup", f"no approval was asked for (exit {code}): {json.dumps(first)[:300]}")
        return
    r = subprocess.run([d.AIRLOCK, "approvals", "approve", approval], cwd=ws, capture_output=True, timeout=60)
    d.say(f"approved {approval}: exit {r.returncode}")
    code, applied = d.airlock("run", "--policy", pol, "--cwd", ws, "--json", "--apply", "--",
                            "python3", "-c", rewrite, cwd=ws)
    with open(os.path.join(ws, "build.sh")) as f:
        if SWAPPED not in f.read():
            d.escaped("setup", f"the --apply run did not rewrite build.sh (exit {code}): {json.dumps(applied)[:300]}")
            return
    code, used = d.airlock("run", "--policy", pol, "--cwd", ws, "--json", "--approval", approval, "--",
                         "bash", "build.sh", cwd=ws)
    stdout = str(used.get("stdout") or "")
    refusal = used.get("refusal") or {}
    if SWAPPED in stdout:
        d.escaped("approved bash build.sh", "ran the rewritten build.sh under the old approval")
    elif refusal.get("code") == "content_changed" and "build.sh" in refusal.get("message", ""):
        d.blocked("approved bash build.sh", f"content_changed: {refusal.get('message')}")
    else:
        d.escaped("approved bash build.sh", f"unexpected answer (exit {code}): {json.dumps(used)[:300]}")


if __name__ == "__main__":
    d.run(sys.modules[__name__])
