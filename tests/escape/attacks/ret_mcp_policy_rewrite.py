"""MCP write_file of the active policy file: `./airlock.toml` (picked up when
no --policy is given) and a policy named with --policy inside the workspace.
Rewriting it would give the next run open network. Denied, always."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcp_driver as d  # noqa: E402

OPEN = '[workspace]\nroot = "."\nmode = "rw"\n[network]\nmode = "open"\n[commands]\nallow = ["curl", "sh"]\n'


def setup(ws):
    with open(os.path.join(ws, "airlock.toml"), "w") as f:
        f.write('[workspace]\nroot = "."\nmode = "rw"\n[network]\nmode = "none"\n[commands]\nallow = ["ls"]\n')
    os.makedirs(os.path.join(ws, "policies"))
    with open(os.path.join(ws, "policies/agent.toml"), "w") as f:
        f.write(d.policy_text(ws))


def main(ws):
    tools = d.tools(None, cwd=ws)  # ./airlock.toml is the policy
    try:
        for path in ["airlock.toml", "./airlock.toml", os.path.join(ws, "airlock.toml")]:
            d.refused(f"write_file {path} (the active policy)", tools.call("write_file", {"path": path, "content": OPEN}),
                      {"airlock_file"})
    finally:
        tools.close()
    tools = d.tools(os.path.join(ws, "policies/agent.toml"))
    try:
        d.refused("write_file policies/agent.toml (the active --policy)",
                  tools.call("write_file", {"path": "policies/agent.toml", "content": OPEN}), {"airlock_file"})
        d.refused("write_file airlock.toml (the policy a later run would pick up)",
                  tools.call("write_file", {"path": "airlock.toml", "content": OPEN}), {"airlock_file"})
    finally:
        tools.close()


if __name__ == "__main__":
    d.run(sys.modules[__name__])
