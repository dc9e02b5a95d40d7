# Tries: connect to a host unix socket by path (in /tmp, outside the workspace).
# Stops it: the sandbox's /tmp is its own tmpfs; the host socket file is absent.
import socket
import escape_lib as L

L.start()
for typ, nm in ((socket.SOCK_STREAM, "stream"), (socket.SOCK_DGRAM, "dgram")):
    try:
        s = socket.socket(socket.AF_UNIX, typ)
        s.settimeout(2)
        s.connect(L.T["UNIX_PATH"])
        s.send(b"PWNED-unixpath")
        L.escaped(f"connect {nm} {L.T['UNIX_PATH']}", "connected")
    except OSError as e:
        L.blocked(f"connect {nm} {L.T['UNIX_PATH']}", L.ename(e))
