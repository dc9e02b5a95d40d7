"""A host's abstract unix socket against a sandbox that shares the host's
network namespace (network mode open on the oci and docker backends).

    abstract_probe.py listen LOG NAME   on the host: listen on the abstract
        NAME, create LOG.ready once listening, append a line to LOG for each
        connection accepted (until killed)
    abstract_probe.py attempt NAME      in the sandbox: connect to the host's
        NAME and to an abstract socket of its own; prints both outcomes
        ("EPERM connected" when the host's is scoped away and its own works)
"""
import errno
import socket
import sys


def listen(log: str, name: str) -> None:
    s = socket.socket(socket.AF_UNIX)
    s.bind("\0" + name)
    s.listen()
    open(log + ".ready", "w").close()
    while True:
        c, _ = s.accept()
        with open(log, "a") as f:
            f.write("accepted\n")
        c.close()


def connect(name: str) -> str:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect("\0" + name)
        return "connected"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def attempt(name: str) -> None:
    own = socket.socket(socket.AF_UNIX)
    own.bind("\0" + name + "-own")
    own.listen()
    print(connect(name), connect(name + "-own"))


if __name__ == "__main__":
    if sys.argv[1:2] == ["listen"] and len(sys.argv) == 4:
        listen(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["attempt"] and len(sys.argv) == 3:
        attempt(sys.argv[2])
    else:
        raise SystemExit(__doc__)
