# Tries: exhaust inodes in the workspace's upper layer with empty files.
# Stops it: the upper layer's inode cap or the memory cgroup; 100k files means
# neither held.
import os
import escape_lib as L

L.start()
n = 0
os.mkdir("inodes")
try:
    for n in range(1, 100001):
        os.close(os.open(f"inodes/{n}", os.O_CREAT | os.O_WRONLY, 0o644))
except OSError as e:
    L.blocked("inode fill workspace", f"{L.ename(e)} after {n} files")
L.say(f"FILES={n}")
if n >= 100000:
    L.escaped("inode fill workspace", "100000 files created")
for i in range(1, n + 1):
    try:
        os.unlink(f"inodes/{i}")
    except OSError:
        pass
