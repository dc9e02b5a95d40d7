#!/usr/bin/env python3
"""What a gVisor guest's credentials and priorities are on the HOST.

Inside gVisor, /proc/self/status, uid_map, nice and oom_score_adj are the
Sentry's bookkeeping (tiers/gvisor.toml lists priv_caps_status and
res_sched_priority for that reason). This checks the host side while a guest
is live and has set nice -20 and oom_score_adj -1000 (57-tiers.sh starts it):
every runsc-sandbox and runsc-gofer process and their descendants (the ptrace
stubs that run guest code) run as a non-root host uid with no_new_privs and a
seccomp filter, and every one of their threads keeps nice >= 0, SCHED_OTHER
and oom_score_adj >= 0.

Prints one line per problem; exit status 0 when there is none. With no runsc
process found it fails: nothing was checked.
"""

import os
import sys

ROOTS = ("runsc-sandbox", "runsc-gofer")


def processes() -> dict[int, tuple[str, int]]:
    """pid -> (argv[0], ppid) of every process still there."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv0 = open(f"/proc/{name}/cmdline", "rb").read().split(b"\0")[0].decode(errors="replace")
            stat = open(f"/proc/{name}/stat").read()
        except OSError:
            continue
        out[int(name)] = (argv0, int(stat.rsplit(")", 1)[1].split()[1]))
    return out


def sandbox_tree(procs: dict[int, tuple[str, int]]) -> list[int]:
    """The runsc sandbox and gofer processes and all their descendants."""
    tree = [p for p, (argv0, _) in procs.items() if argv0 in ROOTS]
    i = 0
    while i < len(tree):
        tree += [p for p, (_, ppid) in procs.items() if ppid == tree[i] and p not in tree]
        i += 1
    return tree


def status(pid: int) -> dict[str, str]:
    lines = open(f"/proc/{pid}/status").read().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


def problems_of(pid: int, argv0: str) -> list[str]:
    out = []
    st = status(pid)
    uids = st.get("Uid", "0").split()
    if "0" in uids:
        out.append(f"{pid} {argv0}: runs as host uid 0 ({st.get('Uid')})")
    if st.get("NoNewPrivs") != "1":
        out.append(f"{pid} {argv0}: NoNewPrivs {st.get('NoNewPrivs')}")
    if st.get("Seccomp") != "2":
        out.append(f"{pid} {argv0}: Seccomp {st.get('Seccomp')}")
    oom = int(open(f"/proc/{pid}/oom_score_adj").read())
    if oom < 0:
        out.append(f"{pid} {argv0}: oom_score_adj {oom}")
    for tid in os.listdir(f"/proc/{pid}/task"):
        fields = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
        nice, policy = int(fields[16]), int(fields[38])
        if nice < 0 or policy != 0:
            out.append(f"{pid}/{tid} {argv0}: nice {nice}, scheduling policy {policy}")
    return out


def main() -> int:
    procs = processes()
    tree = sandbox_tree(procs)
    if not tree:
        print("no runsc-sandbox or runsc-gofer process found: nothing was checked")
        return 1
    problems = []
    for pid in tree:
        try:
            problems += problems_of(pid, procs[pid][0])
        except OSError:
            continue  # gone meanwhile
    for p in problems:
        print(p)
    print(f"checked {len(tree)} runsc processes on the host: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
