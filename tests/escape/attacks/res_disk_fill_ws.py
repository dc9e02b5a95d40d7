# Tries: fill the workspace (in overlay mode the writes land in the per-run
# upper layer). Stops it: the upper layer is size-limited (and the file-size
# rlimit caps any single file); 512 MiB written means no cap held.
import os
import escape_lib as L

L.start()
written = 0
block = b"y" * (1 << 20)
try:
    for i in range(512):
        with open(f"fill{i}", "wb") as f:
            f.write(block)
        written += 1
except OSError as e:
    L.blocked("fill workspace", f"{L.ename(e)} after {written} MiB")
L.say(f"MIB={written}")
for i in range(written + 1):
    try:
        os.unlink(f"fill{i}")
    except OSError:
        pass
if written >= 512:
    L.escaped("fill workspace", "512 MiB written")
