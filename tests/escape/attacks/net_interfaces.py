# Tries: see the host's network interfaces (eth0, ...). Network mode none must
# give a namespace with a loopback interface and nothing else.
import os
import socket
import escape_lib as L

L.start()
try:
    names = sorted(n for _, n in socket.if_nameindex())
    if [n for n in names if n != "lo"]:
        L.escaped("network interfaces", f"{names}")
    else:
        L.blocked("network interfaces", f"only {names}")
except OSError as e:
    L.blocked("if_nameindex", L.ename(e))
try:
    sysnet = sorted(os.listdir("/sys/class/net"))
    if [n for n in sysnet if n != "lo"]:
        L.escaped("/sys/class/net", f"{sysnet}")
    else:
        L.blocked("/sys/class/net", f"{sysnet}")
except OSError as e:
    L.blocked("/sys/class/net", L.ename(e))
