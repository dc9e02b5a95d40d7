"""MCP write_file of `.git/objects/../config` (and other spellings of the
protected .git/config): the protect check must see the path that is opened.
A planted core.fsmonitor would run at the host's next `git status`."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcp_driver as d  # noqa: E402


def setup(ws):
    d.git_repo(ws)


def main(ws):
    pol = d.policy(ws, workspace='protect = [".git/hooks", ".git/config"]\n')
    tools = d.tools(pol)
    evil = f'[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch {d.CANARY}; false"\n'
    try:
        for path in [".git/objects/../config", ".git/refs/heads/../../config", "./.git/./config",
                     os.path.join(ws, ".git/objects/../config")]:
            d.refused(f"write_file {path}", tools.call("write_file", {"path": path, "content": evil}),
                      {"bad_path", "protected_path", "approval_required"})
    finally:
        tools.close()
    r = d.git(ws, "status", "--porcelain")
    d.say(f"host git status exit {r.returncode}")


if __name__ == "__main__":
    d.run(sys.modules[__name__])
