# Tries: send UDP datagrams to the host's listener on 127.0.0.1 (connected and
# unconnected sockets). Stops it: network namespace and socket-family filter.
import socket
import escape_lib as L

L.start()
port = int(L.T["UDP_PORT"])
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
except OSError as e:
    L.blocked("udp socket", L.ename(e))
else:
    for i in range(3):
        try:
            s.sendto(b"PWNED-udp", ("127.0.0.1", port))
            L.say("sent a datagram (inside: the host listener must not get it)")
        except OSError as e:
            L.blocked("udp sendto", L.ename(e))
    try:
        s.connect(("127.0.0.1", port))
        s.send(b"PWNED-udp-connected")
    except OSError as e:
        L.blocked("udp connect+send", L.ename(e))
    L.blocked("udp to the host", "judged by the host listener")
