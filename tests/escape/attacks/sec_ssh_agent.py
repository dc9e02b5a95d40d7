# Tries: talk to the caller's ssh-agent ($SSH_AUTH_SOCK, a host unix socket the
# runner listens on) and to other host daemons' sockets (docker, dbus).
# Stops it: no host socket is bound into the sandbox; the agent variable is
# scrubbed. The runner's listener must receive nothing.
import os
import socket
import escape_lib as L

L.start()
paths = [os.environ.get("SSH_AUTH_SOCK"), L.T["UNIX_PATH"], "/var/run/docker.sock", "/run/docker.sock",
         "/run/dbus/system_bus_socket", "/run/containerd/containerd.sock", "/run/systemd/private"]
for p in [x for x in paths if x]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(p)
        s.send(b"PWNED-agent")
        L.escaped(f"connect {p}", "connected")
    except OSError as e:
        L.blocked(f"connect {p}", L.ename(e))
    finally:
        s.close()
