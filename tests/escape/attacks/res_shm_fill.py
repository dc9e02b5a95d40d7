# Tries: fill /dev/shm (POSIX shared memory). Stops it: /dev/shm inside is the
# sandbox's own small tmpfs (or counted against the memory limit); 1 GiB means
# no bound held. The host's /dev/shm must not change.
import os
import escape_lib as L

L.start()
written = 0
block = b"z" * (1 << 20)
path = "/dev/shm/" + L.T["PWNED"]
try:
    with open(path, "wb") as f:
        for written in range(1, 1025):
            f.write(block)
except OSError as e:
    L.blocked("fill /dev/shm", f"{L.ename(e)} after {written} MiB")
L.say(f"MIB={written}")
try:
    os.unlink(path)
except OSError:
    pass
if written >= 1024:
    L.escaped("fill /dev/shm", "1 GiB written")
