"""MCP write_file of `.git/objects/../hooks/pre-commit`: a hook written
through `..` past the protect check runs at the host's next `git commit`
(the hook exists and is executable, so an overwrite keeps its mode)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcp_driver as d  # noqa: E402


def setup(ws):
    d.git_repo(ws)
    hook = os.path.join(ws, ".git/hooks/pre-commit")
    with open(hook, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(hook, 0o755)


def main(ws):
    pol = d.policy(ws, workspace='protect = [".git/hooks", ".git/config"]\n')
    tools = d.tools(pol)
    try:
        for path in [".git/objects/../hooks/pre-commit", ".git/logs/../hooks/pre-commit",
                     ".git/hooks/pre-commit", ".git/hooks/post-checkout"]:
            d.refused(f"write_file {path}", tools.call("write_file", {"path": path, "content": d.payload_sh()}),
                      {"bad_path", "protected_path", "approval_required"})
    finally:
        tools.close()
    os.chmod(os.path.join(ws, ".git/hooks/pre-commit"), 0o755)  # the runner's chmod pass may have changed it
    r = d.git(ws, "commit", "-q", "--allow-empty", "-m", "after the attack")
    d.say(f"host git commit exit {r.returncode}")


if __name__ == "__main__":
    d.run(sys.modules[__name__])
