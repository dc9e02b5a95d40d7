# Tries: connect to the host's abstract unix socket (X11, D-Bus and containerd
# shims live there) by its name, and send datagrams to abstract names.
# Stops it: abstract sockets are scoped by the network namespace; landlock
# ABI 6 scoping is the second wall.
import socket
import escape_lib as L

L.start()
name = "\0" + L.T["ABSTRACT_NAME"]
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(name)
    s.send(b"PWNED-abstract")
    L.escaped("connect host abstract socket", "connected")
except OSError as e:
    L.blocked("connect host abstract socket", L.ename(e))
for probe in ("/tmp/.X11-unix/X0", "\0/tmp/.X11-unix/X0", "\0/org/freedesktop/systemd1/notify"):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1)
        s.connect(probe)
        L.escaped(f"connect {probe!r}", "connected")
    except OSError as e:
        L.blocked(f"connect {probe!r}", L.ename(e))
