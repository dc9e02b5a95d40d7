# Tries: open file descriptors without end (host fd tables are finite).
# Stops it: RLIMIT_NOFILE (open_files = 256 in the test policy). FDS= must
# stay within it.
import os
import escape_lib as L

L.start()
fds = []
try:
    while len(fds) < 200000:
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e:
    L.blocked("open fds", f"{L.ename(e)} after {len(fds)}")
L.say(f"FDS={len(fds)}")
