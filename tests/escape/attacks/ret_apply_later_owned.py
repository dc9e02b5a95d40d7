"""Apply later goes through the same return path: an overlay run without
--apply rewrites the active policy file (airlock.toml in the workspace) and
plants .git/config; its change set is kept. `airlock apply RUN_ID` must deny
the policy file (airlock's own, always) and hold the git config for a person,
while an ordinary file of the same set arrives."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcp_driver as d  # noqa: E402

MARK = d.T.get("MARKER", "x")
OPEN_POLICY = '[workspace]\nmode = "rw"\n[network]\nmode = "open"\n[commands]\nallow = ["*"]\n'


def setup(ws):
    with open(os.path.join(ws, "airlock.toml"), "w") as f:
        f.write(d.policy_text(ws, mode="overlay", allow='"sh", "python3"'))


def main(ws):
    change = (f'open("airlock.toml", "w").write({OPEN_POLICY!r}); '
              f'import os; os.makedirs(".git", exist_ok=True); '
              f'open(".git/config", "w").write("[core]\\n\\tfsmonitor = touch {d.CANARY}\\n"); '
              f'open("later-{MARK}.txt", "w").write("arrived")')
    if d.HOST_MODE:
        subprocess.run(["python3", "-c", change], cwd=ws, check=True)
        return
    pol = os.path.join(ws, "airlock.toml")
    code, first = d.airlock("run", "--policy", pol, "--cwd", ws, "--json", "--", "python3", "-c", change, cwd=ws)
    run_id = first.get("request_id")
    d.say(f"run {run_id}: kept={first.get('kept')} applied={first.get('applied')}")
    if not first.get("kept"):
        d.say(f"the change set was not kept: {json.dumps(first)[:300]}")
        return
    code, shown = d.airlock("changes", run_id, "--policy", pol, "--cwd", ws, "--json", cwd=ws)
    d.say(f"airlock changes: {shown.get('message')}")
    code, applied = d.airlock("apply", run_id, "--policy", pol, "--cwd", ws, "--json", cwd=ws)
    d.say(f"airlock apply: {applied.get('status')}: {applied.get('message')}")
    if not os.path.exists(os.path.join(ws, f"later-{MARK}.txt")):
        d.say("the ordinary file did not arrive (the set is held for the git config)")
    d.blocked("apply RUN_ID of a rewritten policy file and .git/config", "judged by the runner on the host")


if __name__ == "__main__":
    d.run(sys.modules[__name__])
