"""MCP write_file over paths in filesystem.hide (`.env`, a file in a hidden
folder, a new file there): hidden means not writable either."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcp_driver as d  # noqa: E402


def setup(ws):
    with open(os.path.join(ws, ".env"), "w") as f:
        f.write("API_KEY=original\n")
    os.makedirs(os.path.join(ws, "private"))
    with open(os.path.join(ws, "private/config"), "w") as f:
        f.write("original\n")


def main(ws):
    pol = d.policy(ws, extra=f'[filesystem]\nhide = ["{ws}/.env", "{ws}/private"]\n')
    tools = d.tools(pol)
    try:
        for path in [".env", "./.env", "private/config", "private/new"]:
            d.refused(f"write_file {path}", tools.call("write_file", {"path": path, "content": "API_KEY=attacker\n"}),
                      {"hidden"})
    finally:
        tools.close()


if __name__ == "__main__":
    d.run(sys.modules[__name__])
