# Control: AF_UNIX sockets inside the sandbox (socketpair and a path socket in
# /tmp) still work in network mode none.
import os
import socket
import escape_lib as L

print("CONTROL-START")
a, b = socket.socketpair()
a.send(b"hi")
ok = b.recv(2) == b"hi"
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
path = f"/tmp/ctl-{os.getpid()}.sock"
srv.bind(path)
srv.listen(1)
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.connect(path)
s, _ = srv.accept()
c.send(b"yo")
ok = ok and s.recv(2) == b"yo"
os.unlink(path)
if ok:
    L.control_ok("unix sockets work")
