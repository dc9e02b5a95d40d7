#!/usr/bin/env python3
"""What a run's entry in <state>/runs costs to make and remove (issue 15): a
locked directory holding a `lock` file (the layout before) against one locked
empty file (the layout now). A directory has a data block; on a filesystem
mounted with `discard`, freeing it makes the last close wait for a discard
request to the disk, at the end of every run.

  python3 bench/tools/run_entry_cost.py [DIR] [N]   (DIR on the state dir's filesystem;
                                                     default /var/lib/airlock/bench-runs)
Prints the median make and remove times of each layout, twice, alternating.
"""
import ctypes
import fcntl
import os
import shutil
import statistics
import sys
import time

libc = ctypes.CDLL(None, use_errno=True)
AT_EMPTY_PATH = 0x1000
AT_FDCWD = -100


def link(fd: int, dst: str) -> None:
    if libc.linkat(fd, b"", AT_FDCWD, dst.encode(), AT_EMPTY_PATH) != 0:
        raise OSError(ctypes.get_errno(), "linkat " + dst)


def one(base: str, as_dir: bool) -> tuple[float, float]:
    name = os.path.join(base, "r%d" % time.monotonic_ns())
    t0 = time.perf_counter()
    if as_dir:
        os.mkdir(name, 0o700)
        fd = os.open(name, os.O_RDWR | os.O_TMPFILE, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        link(fd, name + "/lock")
    else:
        fd = os.open(base, os.O_RDWR | os.O_TMPFILE, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        link(fd, name)
    t1 = time.perf_counter()
    time.sleep(0.003)  # a run's length, roughly: the disk goes quiet
    t2 = time.perf_counter()
    if as_dir:
        os.unlink(name + "/lock")
        os.rmdir(name)
    else:
        os.unlink(name)
    os.close(fd)  # the inode (and a directory's block) is freed here
    t3 = time.perf_counter()
    return (t1 - t0) * 1e6, (t3 - t2) * 1e6


def main() -> None:
    base = sys.argv[1] if len(sys.argv) > 1 else "/var/lib/airlock/bench-runs"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    os.makedirs(base, mode=0o700, exist_ok=True)
    try:
        for as_dir in (True, False, True, False):
            r = [one(base, as_dir) for _ in range(n)]
            print("%-28s make %4.0f us, remove %4.0f us (medians of %d)" % (
                "directory with a lock file:" if as_dir else "one locked file:",
                statistics.median(x[0] for x in r), statistics.median(x[1] for x in r), n))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
