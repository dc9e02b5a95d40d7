# Streaming variant (airlock run without --json: output goes straight to the
# caller's terminal, which is also stdin). Tries: push characters into the terminal input with TIOCSTI (and
# TIOCLINUX), through fds 0-2 and /dev/tty; the runner starts airlock with a
# pseudo-terminal as its controlling terminal and watches it for the echo.
# Stops it: the command gets pipes, not the caller's terminal, a new session
# (setsid), and seccomp denies the two ioctls.
import fcntl
import os
import termios
import escape_lib as L

L.start()
payload = f"echo INJECTED-{L.T['MARKER']}\n"
TIOCLINUX = 0x541C
fds = [(0, "fd 0"), (1, "fd 1"), (2, "fd 2")]
try:
    fds.append((os.open("/dev/tty", os.O_RDWR), "/dev/tty"))
except OSError as e:
    L.blocked("open /dev/tty", L.ename(e))
for fd, name in fds:
    try:
        for ch in payload:
            fcntl.ioctl(fd, termios.TIOCSTI, ch.encode())
        L.escaped(f"TIOCSTI on {name}", "characters injected")
    except OSError as e:
        L.blocked(f"TIOCSTI on {name}", L.ename(e))
    try:
        fcntl.ioctl(fd, TIOCLINUX, b"\x02")
        L.escaped(f"TIOCLINUX on {name}", "accepted")
    except OSError as e:
        L.blocked(f"TIOCLINUX on {name}", L.ename(e))
