# Tries: open an AF_VSOCK socket. This machine is a Firecracker VM: vsock reaches
# the hypervisor's services, and inside bubblewrap the socket opens. The test
# only creates and binds (it never connects anywhere). Stops it: seccomp refuses
# AF_VSOCK always (and io_uring, the other way to make one, answers ENOSYS).
import socket
import escape_lib as L

L.start()
for typ, name in ((socket.SOCK_STREAM, "stream"), (socket.SOCK_DGRAM, "dgram"), (socket.SOCK_SEQPACKET, "seqpacket")):
    try:
        s = socket.socket(socket.AF_VSOCK, typ)
    except OSError as e:
        L.blocked(f"AF_VSOCK {name}", L.ename(e))
        continue
    L.escaped(f"AF_VSOCK {name}", "socket created")
    s.close()
