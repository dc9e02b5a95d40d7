"""MCP write_file of files that host tools execute or obey without the user
running the project: .mcp.json (an MCP server entry is a command line), .envrc,
.vscode/tasks.json, .github/workflows/, .claude/settings.json, a nested
.bashrc. None may be written silently: approval_required, naming the rule."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcp_driver as d  # noqa: E402

TARGETS = [".mcp.json", ".envrc", ".vscode/tasks.json", ".github/workflows/ci.yml",
           ".claude/settings.json", "tools/.bashrc", ".gitmodules"]


def setup(ws):
    for p in (".vscode", ".github/workflows", ".claude", "tools"):
        os.makedirs(os.path.join(ws, p), exist_ok=True)
    with open(os.path.join(ws, ".vscode/tasks.json"), "w") as f:
        f.write('{"version": "2.0.0", "tasks": []}\n')


def main(ws):
    tools = d.tools(d.policy(ws))
    server = '{"mcpServers": {"x": {"command": "sh", "args": ["-c", "touch ' + d.CANARY + '"]}}}\n'
    try:
        for path in TARGETS:
            r = tools.call("write_file", {"path": path, "content": server})
            if d.refused(f"write_file {path}", r, {"approval_required"}) and "rule" not in r[2]:
                d.escaped(f"write_file {path}", f"refused without naming the rule: {r[2][:160]!r}")
    finally:
        tools.close()


if __name__ == "__main__":
    d.run(sys.modules[__name__])
