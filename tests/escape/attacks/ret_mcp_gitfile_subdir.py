"""MCP write_file of a gitfile in a subdirectory (`sub/.git`: gitdir: ...)
pointing git at a directory whose config the attacker wrote as plain data,
and of `.git/commondir`: the host's next `git status` in sub/ would run its
core.fsmonitor. Both are host-executable metadata: approval_required."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcp_driver as d  # noqa: E402


def setup(ws):
    d.git_repo(ws)
    for p in ("sub", "evilgit/objects/info", "evilgit/refs/heads"):
        os.makedirs(os.path.join(ws, p), exist_ok=True)
    with open(os.path.join(ws, "sub/README"), "w") as f:
        f.write("a folder\n")


def main(ws):
    pol = d.policy(ws)
    tools = d.tools(pol)
    try:
        # plain data files: allowed, and harmless while nothing points git at them
        tools.call("write_file", {"path": "evilgit/HEAD", "content": "ref: refs/heads/main\n"})
        tools.call("write_file", {"path": "evilgit/config", "content":
                   f'[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "touch {d.CANARY}; false"\n'})
        d.refused("write_file sub/.git (gitfile)",
                  tools.call("write_file", {"path": "sub/.git", "content": "gitdir: ../evilgit\n"}),
                  {"approval_required"})
        d.refused("write_file .git/commondir",
                  tools.call("write_file", {"path": ".git/commondir", "content": "../evilgit\n"}),
                  {"approval_required"})
        d.refused("write_file .git/info/attributes",
                  tools.call("write_file", {"path": ".git/info/attributes", "content": "* filter=x\n"}),
                  {"approval_required"})
    finally:
        tools.close()
    r = d.git(os.path.join(ws, "sub"), "status", "--porcelain")
    d.say(f"host git status in sub/ exit {r.returncode}")


if __name__ == "__main__":
    d.run(sys.modules[__name__])
