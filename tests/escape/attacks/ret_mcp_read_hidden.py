"""MCP read_file of a path in filesystem.hide (`.env` holding the caller's
secret, which `cat .env` in the sandbox cannot see), by every spelling: plain,
./, absolute, through a symlink and through a hard link. The secret must never
be printed."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcp_driver as d  # noqa: E402


def setup(ws):
    with open(os.path.join(ws, ".env"), "w") as f:
        f.write("API_KEY=" + os.environ.get("AIRLOCK_ESCAPE_SECRET", "missing") + "\n")
    os.symlink(".env", os.path.join(ws, "envlink"))
    os.link(os.path.join(ws, ".env"), os.path.join(ws, "env-hardlink"))


def main(ws):
    pol = d.policy(ws, extra=f'[filesystem]\nhide = ["{ws}/.env"]\n')
    tools = d.tools(pol)
    try:
        for path in [".env", "./.env", os.path.join(ws, ".env"), "envlink", "env-hardlink", "sub/../.env"]:
            d.refused(f"read_file {path}", tools.call("read_file", {"path": path}))
    finally:
        tools.close()


if __name__ == "__main__":
    d.run(sys.modules[__name__])
