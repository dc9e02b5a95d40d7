# Tries: allocate and touch memory without end (1 GiB per second or so).
# Stops it: the cgroup memory limit with swap off: the OOM killer ends the
# command and airlock reports killed_by = "memory". Bounded at 4 GiB, so that a
# run with no sandbox stays harmless on this 24 GiB machine.
import escape_lib as L

L.start()
chunks = []
for i in range(64):
    chunks.append(bytearray(64 << 20))  # zero pages are touched by bytearray()
    L.say(f"MIB={(i + 1) * 64}")
L.escaped("memory bomb", "allocated 4 GiB without being stopped")
