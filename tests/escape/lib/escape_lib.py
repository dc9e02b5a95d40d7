"""Shared helpers for the Python attack programs of the escape corpus.

The runner copies this file next to every attack, together with `targets.env`
(what the attacker is told about the host: ports, paths, PIDs; never the
secrets themselves). Output protocol, read by tests/escape/run.py:

    ATTACK-START              the program really ran
    BLOCKED <what>: <how>     one attempt was stopped (errno name, signal, ...)
    ESCAPED <what>: <detail>  one attempt got through: the runner fails the case
    CONTROL-OK <detail>       a control case did what it must be able to do
"""

import errno
import os
import sys


def _load_targets():
    values = {}
    here = os.path.dirname(os.path.abspath(__file__))
    for base in (os.getcwd(), here):
        path = os.path.join(base, "targets.env")
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    line = line.strip()
                    if line and not line.startswith("#") and "=" in line:
                        k, v = line.split("=", 1)
                        values[k] = v
            break
    return values


T = _load_targets()
HOST_MODE = T.get("HOST_MODE") == "1"


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def start(name=None):
    say("ATTACK-START " + (name or os.path.basename(sys.argv[0])))


def blocked(what, how):
    say(f"BLOCKED {what}: {how}")


def escaped(what, detail=""):
    say(f"ESCAPED {what}: {detail}")


def control_ok(detail=""):
    say(f"CONTROL-OK {detail}")


def ename(err):
    if isinstance(err, OSError):
        err = err.errno
    return errno.errorcode.get(err, str(err))


def attempt(what, fn):
    """Run fn(); an OSError means the attempt was blocked, a return value means it
    got through. Returns fn's result or None."""
    try:
        result = fn()
    except OSError as e:
        blocked(what, ename(e))
        return None
    escaped(what, repr(result)[:200])
    return result


def read_file(path, limit=1 << 20):
    with open(path, "rb") as f:
        return f.read(limit)


def try_read(what, path, show=True):
    """Try to read a host file. Its content is printed (so that the runner sees a
    canary leak in the output) only when show is true; otherwise just its size."""
    try:
        data = read_file(path)
    except OSError as e:
        blocked(what, ename(e))
        return None
    if show:
        escaped(what, data.decode("utf-8", "replace")[:4000])
    else:
        escaped(what, f"{len(data)} bytes readable")
    return data


def canary_paths():
    """Every canary file the runner planted, by name."""
    out = {}
    for k, v in T.items():
        if k.startswith("CANARY_"):
            out[k] = v
    return out
