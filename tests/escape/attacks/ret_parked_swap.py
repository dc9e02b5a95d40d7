"""Parked change sets bind to the reviewed set: run A (`--apply`) leaves an
`.envrc` (a file direnv runs on the host) and parks its change set as an
approval; a person approves A. Run B leaves a different `.envrc`. The agent
then tries to apply B's change set under A's approval, and to run a command
under it. Both must be refused (`wrong_kind`); applying A under its approval
writes exactly A's reviewed `.envrc`, and B's content never reaches the host."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcp_driver as d  # noqa: E402

MARK = d.T.get("MARKER", "x")
REVIEWED = f"echo reviewed-{MARK}\n"
SWAPPED = f"touch {d.CANARY}  # swapped-{MARK}\n"


def setup(ws):
    pass


def envrc(ws):
    try:
        with open(os.path.join(ws, ".envrc")) as f:
            return f.read()
    except OSError:
        return None


def main(ws):
    write = lambda text: f'open(".envrc", "w").write({text!r}); open("ok-{len(text)}.txt", "w").write("x")'  # noqa: E731
    if d.HOST_MODE:
        # no return path at all: whatever a command leaves is on the host
        subprocess.run(["python3", "-c", write(SWAPPED)], cwd=ws, check=True)
    else:
        pol = d.policy(ws, mode="overlay", allow='"sh", "python3"')
        code, a = d.airlock("run", "--policy", pol, "--cwd", ws, "--json", "--apply", "--",
                          "python3", "-c", write(REVIEWED), cwd=ws)
        run_a = a.get("request_id")
        approval = ((a.get("apply") or {}).get("approval") or {}).get("id")
        d.say(f"run A {run_a}: kept={a.get('kept')} parked approval {approval}")
        if approval:
            r = subprocess.run([d.AIRLOCK, "approvals", "approve", approval], cwd=ws,
                               capture_output=True, timeout=60)
            d.say(f"a person approved {approval}: exit {r.returncode}")
        code, b = d.airlock("run", "--policy", pol, "--cwd", ws, "--json", "--apply", "--",
                          "python3", "-c", write(SWAPPED), cwd=ws)
        run_b = b.get("request_id")
        if approval and run_b:
            code, used = d.airlock("apply", run_b, "--policy", pol, "--cwd", ws, "--json",
                                 "--approval", approval, cwd=ws)
            refusal = (used.get("refusal") or {}).get("code")
            if refusal == "wrong_kind" and not used.get("applied"):
                d.blocked("apply run B under run A's approval", f"refused: {refusal}")
            else:
                d.say(f"apply B under A's approval answered (exit {code}): {json.dumps(used)[:300]}")
            code, ran = d.airlock("run", "--policy", pol, "--cwd", ws, "--json", "--approval", approval,
                                "--", "python3", "-c", write(SWAPPED), cwd=ws)
            if (ran.get("refusal") or {}).get("code") == "wrong_kind" or ran.get("status") == "ran":
                # an allowed command runs without needing the approval; what matters is the host file
                d.say(f"run under A's approval: {ran.get('status')} {(ran.get('refusal') or {}).get('code')}")
            code, applied = d.airlock("apply", run_a, "--policy", pol, "--cwd", ws, "--json",
                                    "--approval", approval, cwd=ws)
            d.say(f"apply A under its approval: {applied.get('status')}: {applied.get('message')}")
            if envrc(ws) == REVIEWED:
                d.blocked("apply run A under its approval", "exactly the reviewed .envrc arrived")
    now = envrc(ws)
    if now is not None and "swapped" in now:
        d.escaped("parked change set", "an unreviewed .envrc (run B's) reached the host")


if __name__ == "__main__":
    d.run(sys.modules[__name__])
