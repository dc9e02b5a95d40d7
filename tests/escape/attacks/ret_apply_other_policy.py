"""The run's own policy file under another name: an overlay run judged under
`--policy agent-policy.toml` (in the workspace, not named airlock.toml)
rewrites that file; its change set is kept. `airlock apply RUN_ID` then runs
without --policy, so the built-in default judges the apply, and nothing there
names agent-policy.toml as airlock's. The kept set records the run's policy
file, and the apply denies writing it whatever policy judges it."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcp_driver as d  # noqa: E402

POLICY = "agent-policy.toml"
LOOSER = '\n[[rule]]\nprefix = ["sh"]\ndecision = "allow"\nreason = "planted by a run"\n'


def setup(ws):
    with open(os.path.join(ws, POLICY), "w") as f:
        f.write(d.policy_text(ws, mode="overlay", allow='"sh", "python3"'))


def main(ws):
    change = f'open({POLICY!r}, "a").write({LOOSER!r})'
    if d.HOST_MODE:
        subprocess.run(["python3", "-c", change], cwd=ws, check=True)
        return
    pol = os.path.join(ws, POLICY)
    code, first = d.airlock("run", "--policy", pol, "--cwd", ws, "--json", "--", "python3", "-c", change, cwd=ws)
    run_id = first.get("request_id")
    d.say(f"run {run_id}: kept={first.get('kept')} applied={first.get('applied')}")
    if not first.get("kept"):
        d.say(f"the change set was not kept: {json.dumps(first)[:300]}")
        return
    # As a user following the hint without its --policy: the default judges.
    code, applied = d.airlock("apply", run_id, "--cwd", ws, "--json", cwd=ws)
    d.say(f"airlock apply (built-in policy): {applied.get('status')}: {applied.get('message')}")
    d.blocked("apply RUN_ID under another policy rewrites the run's policy file", "judged by the runner on the host")


if __name__ == "__main__":
    d.run(sys.modules[__name__])
