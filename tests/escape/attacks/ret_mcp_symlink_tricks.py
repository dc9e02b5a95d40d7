"""MCP file tools and symlinks: a link to a hidden file, a link to a host
folder holding a canary, and a link to .git/hooks.
Nothing is read or written through a symlink; host canaries stay unread and
unchanged, no hook is planted."""
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
    with open(os.path.join(ws, ".env"), "w") as f:
        f.write("API_KEY=" + os.environ.get("AIRLOCK_ESCAPE_SECRET", "missing") + "\n")
    os.symlink(".env", os.path.join(ws, "envlink"))
    os.symlink(d.T["TMP_CANARY_DIR"], os.path.join(ws, "outdir"))
    os.symlink(".git/hooks", os.path.join(ws, "hookdir"))


def main(ws):
    pol = d.policy(ws, workspace='protect = [".git/hooks", ".git/config"]\n',
                   extra=f'[filesystem]\nhide = ["{ws}/.env"]\n')
    tools = d.tools(pol)
    try:
        d.refused("read_file envlink (-> hidden .env)", tools.call("read_file", {"path": "envlink"}))
        d.refused("read_file outdir/secret.txt (host canary)", tools.call("read_file", {"path": "outdir/secret.txt"}))
        d.refused("write_file outdir/secret.txt (host canary)",
                  tools.call("write_file", {"path": "outdir/secret.txt", "content": "pwned\n"}))
        d.refused("list_files outdir", tools.call("list_files", {"path": "outdir"}))
        d.refused("write_file hookdir/pre-commit", tools.call("write_file", {"path": "hookdir/pre-commit",
                                                                              "content": d.payload_sh()}))
        d.refused("write_file envlink", tools.call("write_file", {"path": "envlink", "content": "API_KEY=x\n"}))
    finally:
        tools.close()
    os.chmod(os.path.join(ws, ".git/hooks/pre-commit"), 0o755)
    r = d.git(ws, "commit", "-q", "--allow-empty", "-m", "after the attack")
    d.say(f"host git commit exit {r.returncode}")


if __name__ == "__main__":
    d.run(sys.modules[__name__])
