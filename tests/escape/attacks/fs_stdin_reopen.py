# Tries: airlock was started with a host file (a world-writable canary) as its
# stdin, and streams it to the command. Reopen that file through
# /proc/self/fd/0 for writing, write through fd 0 itself, and look for its host
# path. Stops it: the command's stdin is always a pipe from airlock, never the
# caller's descriptor, so there is no host file behind fd 0 to reopen or name.
# The bytes read are not printed (reading them is what the user asked for).
import os
import stat
import escape_lib as L

L.start()
data = os.read(0, 1 << 16)
L.say(f"read {len(data)} bytes from stdin")
target = os.readlink("/proc/self/fd/0")
if target.startswith("/") and "canary" in target:
    L.escaped("fd 0 names a host file", target)
else:
    L.blocked("fd 0 names no host file", target)
for flags, what in ((os.O_WRONLY, "O_WRONLY"), (os.O_RDWR, "O_RDWR"), (os.O_WRONLY | os.O_APPEND, "O_APPEND")):
    try:
        fd = os.open("/proc/self/fd/0", flags)
    except OSError as e:
        L.blocked(f"reopen /proc/self/fd/0 {what}", L.ename(e))
        continue
    if stat.S_ISFIFO(os.fstat(fd).st_mode):
        # Reopening a pipe gives the pipe itself: writing only feeds our own stdin.
        L.blocked(f"reopen /proc/self/fd/0 {what}", "gives only airlock's pipe, no host file")
        os.close(fd)
        continue
    try:
        os.write(fd, b"PWNED-VIA-STDIN\n")
        L.escaped(f"wrote through a reopened stdin ({what})")
    except OSError as e:
        L.blocked(f"write through reopened stdin ({what})", L.ename(e))
    finally:
        os.close(fd)
try:
    os.write(0, b"PWNED-VIA-FD0\n")
    L.escaped("wrote to fd 0")
except OSError as e:
    L.blocked("write to fd 0", L.ename(e))
