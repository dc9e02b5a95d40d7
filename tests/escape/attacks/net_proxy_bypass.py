# Tries: use the egress proxy (network.mode = "allowlist": HTTP proxy and SOCKS5
# relay on the sandbox's loopback) to reach what the allowlist does not name: the
# host's loopback listeners by IP literal, by "localhost", by IPv6, by an absolute
# URL, and through SOCKS5 with an IP address. With network mode none there is no
# proxy and every attempt fails at once. Stops it: the proxy allows only listed
# host names, pins the address it resolved, and refuses loopback/private ranges;
# the runner's listeners must receive nothing.
import os
import socket
import struct
import escape_lib as L

L.start()


def proxy_addr(var, default_port):
    v = os.environ.get(var) or os.environ.get(var.lower()) or ""
    hostport = v.split("://")[-1].rstrip("/")
    if ":" in hostport:
        h, p = hostport.rsplit(":", 1)
        return h.strip("[]"), int(p)
    return "127.0.0.1", default_port


tcp, tcp6 = int(L.T["TCP_PORT"]), int(L.T["TCP6_PORT"])
http = proxy_addr("HTTP_PROXY", 3128)
L.say(f"http proxy {http}, env keys: {sorted(k for k in os.environ if 'proxy' in k.lower())}")
requests = [
    ("CONNECT 127.0.0.1", f"CONNECT 127.0.0.1:{tcp} HTTP/1.1\r\nHost: 127.0.0.1:{tcp}\r\n\r\n"),
    ("CONNECT localhost", f"CONNECT localhost:{tcp} HTTP/1.1\r\nHost: localhost:{tcp}\r\n\r\n"),
    ("CONNECT [::1]", f"CONNECT [::1]:{tcp6} HTTP/1.1\r\nHost: [::1]:{tcp6}\r\n\r\n"),
    ("CONNECT 0x7f000001", f"CONNECT 2130706433:{tcp} HTTP/1.1\r\nHost: 2130706433:{tcp}\r\n\r\n"),
    ("GET absolute URL", f"GET http://127.0.0.1:{tcp}/PWNED HTTP/1.1\r\nHost: 127.0.0.1:{tcp}\r\n\r\n"),
    # an allowed name in Host but a loopback target (never the allowed name as the
    # target: that would make the proxy resolve it, and tests do no lookups)
    ("Host header mismatch", f"CONNECT 127.0.0.1:{tcp} HTTP/1.1\r\nHost: pypi.test:443\r\n\r\n"),
]
for what, req in requests:
    try:
        s = socket.create_connection(http, timeout=3)
        s.sendall(req.encode())
        answer = s.recv(200).decode("latin-1")
        status = answer.split("\r\n", 1)[0]
        if " 200" in status:
            s.sendall(b"PWNED-through-proxy")
            L.escaped(f"proxy {what}", status)
        else:
            L.blocked(f"proxy {what}", status or "closed")
        s.close()
    except OSError as e:
        L.blocked(f"proxy {what}", L.ename(e) if e.errno else str(e))
socks = proxy_addr("ALL_PROXY", 1080)
try:
    s = socket.create_connection(socks, timeout=3)
    s.sendall(b"\x05\x01\x00")
    if s.recv(2) != b"\x05\x00":
        L.blocked("socks5 greeting", "refused")
    else:
        s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack(">H", tcp))
        rep = s.recv(10)
        if len(rep) > 1 and rep[1] == 0:
            s.sendall(b"PWNED-through-socks")
            L.escaped("socks5 CONNECT 127.0.0.1", "granted")
        else:
            L.blocked("socks5 CONNECT 127.0.0.1", f"reply {rep[:2].hex()}")
    s.close()
except OSError as e:
    L.blocked("socks5", L.ename(e) if e.errno else str(e))
