# Tries: use the open file descriptors of other processes in the sandbox, above
# all PID 1 (airlock's helper/init): if it holds a directory fd on a host path
# (the old root, the run directory, the state dir, a cgroup dir), opening
# /proc/1/fd/N and walking ".." from it leaves the sandbox. Also /proc/*/cwd and
# /proc/*/map_files. Stops it: ptrace access checks on /proc/<pid>/fd (PID 1 keeps
# privileges the command does not have), and the helper holding no such fd.
import os
import escape_lib as L

L.start()
me = os.getpid()
pids = [p for p in os.listdir("/proc") if p.isdigit()]
if L.HOST_MODE:
    # with no sandbox, look only at this test's own processes, never at others'
    pids = [L.T["RUNNER_PID"], L.T["SENTINEL_PID"]]
for pid in sorted(pids, key=int):
    if int(pid) == me:
        continue
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError as e:
        L.blocked(f"list /proc/{pid}/fd", L.ename(e))
        continue
    for fd in fds:
        link = f"/proc/{pid}/fd/{fd}"
        try:
            target = os.readlink(link)
        except OSError as e:
            L.blocked(f"readlink {link}", L.ename(e))
            continue
        try:
            o = os.open(link, os.O_RDONLY)
        except OSError as e:
            L.blocked(f"open {link} ({target})", L.ename(e))
            continue
        if os.path.isdir(link):
            try:
                up = os.open("../../../../../../..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=o)
                names = os.listdir(up)
                L.escaped(f"walk .. from {link} ({target})", f"{names[:10]}")
            except OSError as e:
                L.blocked(f"walk .. from {link}", L.ename(e))
        else:
            L.say(f"opened {link} -> {target} (a file or pipe of a sandbox process)")
        os.close(o)
    if pid == "1" and not fds:
        L.blocked("/proc/1/fd", "empty")
