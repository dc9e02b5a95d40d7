#!/usr/bin/env python3
"""Runs the documentation's command examples as a reader would type them.

Every line of a ```sh block in the files below that starts with `airlock` (or is
the `curl` beside `airlock serve`) is collected. Each runs with `bash -c`, exactly
as written, in a fresh copy of a small project (a git repository with a Makefile,
a unittest file and `fix-things.sh` listed in its airlock.toml), with the built
binary first on PATH and a private state directory. The expected exit status is
the one the line's own comment names (`# exit 3: ...`), else 0. A line that cannot
run as written (a placeholder such as `ap-…`, a person at a terminal, a server
that never ends) is skipped with the reason printed, so every example is either
run or accounted for. Prints `N passed, N failed, N skipped`.

    python3 tests/docs/examples.py target/debug/airlock
"""

import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCS = ["README.md", "docs/sandbox.md", "docs/policy.md", "docs/interfaces.md", "docs/audit.md"]

# Substring of a line -> why it is not run as written.
SKIP = {
    "…": "holds a placeholder (…) for the reader to fill in",
    "ap-3f9c2a7d1e4b": "names an example approval id",
    "gr-5d1e0c9b2a44": "names an example grant id",
    "audit show a42": "names an example record id",
    "[--": "shows optional flags in brackets",
    "--ask": "asks a person at a terminal",
    "--wait-approval": "waits for a person to answer",
    "airlock mcp": "a stdio server for an MCP client (run by clients/python/tests/test_mcp.py)",
    "--listen 127.0.0.1:8787": "needs a tokens file of the reader's (run by 60-interfaces)",
    "--network files.example.com": "needs a policy in network allowlist mode (run by 70-netproxy)",
    "cargo install": "the install step (run by 45-readme)",
    "audit.pem": "needs the operator's signing key outside the state dir (run by crates/airlock/tests/audit_anchor.rs)",
    "airlock audit checkpoint": "needs AIRLOCK_AUDIT_SIGNING_KEY (run by crates/airlock/tests/audit_anchor.rs)",
    "--tokens /etc/airlock": "needs the server's tokens file (tenant grants: crates/airlock/tests/serve_http.rs)",
}

EXIT_COMMENT = re.compile(r"#\s*exit (\d+)")


def examples():
    for doc in DOCS:
        in_block = False
        lines = (REPO / doc).read_text().splitlines()
        for n, line in enumerate(lines, 1):
            if line.startswith("```"):
                in_block = line.strip() == "```sh"
                continue
            text = line.strip()
            # A line ending in a backslash goes on with the next, as in a shell.
            k = n
            while text.endswith("\\") and k < len(lines):
                text = text[:-1] + " " + lines[k].strip()
                k += 1
            if in_block and (text.startswith("airlock ") or text.startswith("curl --unix-socket")):
                yield doc, n, text


def project(tmp: pathlib.Path) -> pathlib.Path:
    """The small project every example starts from."""
    ws = tmp / "template"
    ws.mkdir()
    (ws / "Makefile").write_text("test:\n\t@echo make test ok\n")
    (ws / "test_calc.py").write_text(
        "import unittest\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(1 + 1, 2)\n")
    (ws / "fix-things.sh").write_text("#!/bin/sh\necho fixed > FIXED.txt\n")
    (ws / "fix-things.sh").chmod(0o755)
    (ws / "build").mkdir()
    (tmp / "shared-data").mkdir()
    git = ["git", "-c", "user.name=docs", "-c", "user.email=docs@example.invalid"]
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    subprocess.run([*git, "add", "-A"], cwd=ws, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=ws, check=True)
    # The default policy, plus the line the denial of ./fix-things.sh asks for.
    subprocess.run(["airlock", "policy", "init"], cwd=ws, check=True, stdout=subprocess.DEVNULL)
    policy = (ws / "airlock.toml").read_text().replace("\nallow = [\n", '\nallow = [ "./fix-things.sh",\n', 1)
    (ws / "airlock.toml").write_text(policy)
    return ws


def main():
    binary = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else REPO / "target/debug/airlock").resolve()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="airlock-docs-"))
    state = tmp / "state"
    env = dict(os.environ, PATH=f"{binary.parent}:{os.environ['PATH']}", AIRLOCK_STATE_DIR=str(state))
    env.pop("AIRLOCK_POLICY", None)
    os.environ.update(env)
    passed = failed = skipped = 0
    server = server_ws = None
    try:
        template = project(tmp)
        for i, (doc, n, line) in enumerate(examples()):
            where = f"{doc}:{n}"
            why = next((r for s, r in SKIP.items() if s in line), None)
            if why:
                skipped += 1
                print(f"skip {where}: {line}\n     ({why})")
                continue
            ws = tmp / f"ws{i}"
            shutil.copytree(template, ws, symlinks=True)
            if line.startswith("airlock policy init"):
                (ws / "airlock.toml").unlink()  # init never overwrites: show it a project without one
            if line.startswith("airlock serve"):
                # Started as the doc says, kept for the curl lines that follow it.
                if server is None:
                    server_ws = ws
                    server = subprocess.Popen(["bash", "-c", line.rstrip("& ").split("#")[0]], cwd=ws, env=env,
                                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL, start_new_session=True)
                    deadline = time.time() + 30
                    while not (state / "airlock.sock").exists() and time.time() < deadline:
                        time.sleep(0.05)
                ok = (state / "airlock.sock").exists()
                passed, failed = (passed + 1, failed) if ok else (passed, failed + 1)
                print(f"{'ok  ' if ok else 'FAIL'} {where}: {line}")
                continue
            if line.startswith("curl"):
                # The doc names root's default state directory; this run's is private.
                line = line.replace("/var/lib/airlock/", f"{state}/")
            if " --server" in line and server_ws is not None:
                # A run through the server is judged in the server's workspace.
                ws = server_ws
            want = int(m.group(1)) if (m := EXIT_COMMENT.search(line)) else 0
            try:
                run = subprocess.run(["bash", "-c", line], cwd=ws, env=env, stdin=subprocess.DEVNULL,
                                     capture_output=True, text=True, timeout=120)
                got, out = run.returncode, (run.stdout + run.stderr)
            except subprocess.TimeoutExpired:
                got, out = "timeout", ""
            if got == want:
                passed += 1
                print(f"ok   {where}: {line}")
            else:
                failed += 1
                print(f"FAIL {where}: {line}\n     exit {got}, expected {want}\n" +
                      "\n".join("     | " + l for l in out.splitlines()[-12:]))
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
