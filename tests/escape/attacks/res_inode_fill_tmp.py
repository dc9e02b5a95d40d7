# Tries: exhaust inodes in /tmp with empty files (a size cap alone does not
# bound them; each costs kernel memory). Stops it: an inode cap on the tmpfs,
# or the memory cgroup charging the inodes; 100k files means neither held.
import os
import escape_lib as L

L.start()
n = 0
d = f"/tmp/inodes-{L.T['MARKER']}-{os.getpid()}"
os.mkdir(d)
try:
    for n in range(1, 100001):
        os.close(os.open(f"{d}/{n}", os.O_CREAT | os.O_WRONLY, 0o644))
except OSError as e:
    L.blocked("inode fill /tmp", f"{L.ename(e)} after {n} files")
L.say(f"FILES={n}")
if n >= 100000:
    L.escaped("inode fill /tmp", "100000 files created")
for i in range(1, n + 1):
    try:
        os.unlink(f"{d}/{i}")
    except OSError:
        pass
os.rmdir(d)
