"""MCP list_files must not show paths in filesystem.hide (a `.env` file and
a `private/` folder), neither at the top nor recursively, nor list inside them."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcp_driver as d  # noqa: E402


def setup(ws):
    with open(os.path.join(ws, ".env"), "w") as f:
        f.write("API_KEY=" + os.environ.get("AIRLOCK_ESCAPE_SECRET", "missing") + "\n")
    os.makedirs(os.path.join(ws, "private/keys"))
    with open(os.path.join(ws, "private/keys/id"), "w") as f:
        f.write("key\n")


def main(ws):
    pol = d.policy(ws, extra=f'[filesystem]\nhide = ["{ws}/.env", "{ws}/private"]\n')
    tools = d.tools(pol)
    try:
        for args in [{"path": "."}, {"path": ".", "recursive": True}]:
            r = tools.call("list_files", args)
            if r is None or r[0]:
                d.escaped(f"list_files {args}", f"the listing itself failed: {r!r}"[:200])
                continue
            names = [e.get("path", "") for e in r[1].get("entries", [])]
            shown = [n for n in names if n.startswith((".env", "private"))]
            if shown:
                d.escaped(f"list_files {args}", f"hidden paths listed: {shown[:4]}")
            else:
                d.blocked(f"list_files {args}", f"{len(names)} entries, none hidden")
        for path in ["private", "private/keys"]:
            d.refused(f"list_files {path}", tools.call("list_files", {"path": path}), {"hidden"})
    finally:
        tools.close()


if __name__ == "__main__":
    d.run(sys.modules[__name__])
