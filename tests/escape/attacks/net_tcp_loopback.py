# Tries: connect to the host's TCP listener on 127.0.0.1 and send data.
# Stops it: the network namespace (its own loopback, not the host's) and the
# seccomp socket-family filter (network mode none: AF_UNIX only).
import socket
import escape_lib as L

L.start()
for addr in ("127.0.0.1", "localhost", "127.1"):
    try:
        s = socket.create_connection((addr, int(L.T["TCP_PORT"])), timeout=2)
        s.send(b"PWNED-tcp")
        s.close()
        L.escaped(f"tcp connect {addr}", "connected to the host listener")
    except OSError as e:
        L.blocked(f"tcp connect {addr}", L.ename(e) if e.errno else str(e))
