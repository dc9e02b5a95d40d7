# Tries: reach the host over IPv6: TCP and UDP to ::1 and to the IPv4-mapped
# ::ffff:127.0.0.1. Stops it: network namespace, socket-family filter.
import socket
import escape_lib as L

L.start()
for host, port in (("::1", int(L.T["TCP6_PORT"])), ("::ffff:127.0.0.1", int(L.T["TCP_PORT"]))):
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect((host, port))
        s.send(b"PWNED-tcp6")
        L.escaped(f"tcp6 connect {host}", "connected")
    except OSError as e:
        L.blocked(f"tcp6 connect {host}", L.ename(e) if e.errno else str(e))
try:
    u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    u.sendto(b"PWNED-udp6", ("::1", int(L.T["UDP6_PORT"])))
    L.say("sent a udp6 datagram (host listener must not get it)")
except OSError as e:
    L.blocked("udp6 sendto", L.ename(e))
L.blocked("ipv6 to the host", "judged by the host listeners")
