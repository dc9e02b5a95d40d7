# Tries: fill /tmp. Stops it: /tmp is a tmpfs capped by limits.tmp (16 MiB in the
# test policy), so the host's disk is untouched. Writes stop at ENOSPC (or
# EFBIG from the file-size rlimit); 512 MiB written means no cap held.
import os
import escape_lib as L

L.start()
written = 0
block = b"x" * (1 << 20)
try:
    for i in range(512):
        with open(f"/tmp/fill{i}", "wb") as f:
            f.write(block)
        written += 1
except OSError as e:
    L.blocked("fill /tmp", f"{L.ename(e)} after {written} MiB")
L.say(f"MIB={written}")
for i in range(written + 1):
    try:
        os.unlink(f"/tmp/fill{i}")
    except OSError:
        pass
if written >= 512:
    L.escaped("fill /tmp", "512 MiB written")
