# Tries: with --apply, leave a FIFO (a later MCP write_file or editor blocks on
# it), a unix socket and, if allowed, a device node in the workspace.
# Stops it: special files are denied by the change-set policy.
import os, socket
from escape_lib import *

start("ret_special_files")
os.mkfifo("fifo")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("sock")
try:
    os.mknod("null2", 0o666 | 0o020000, os.makedev(1, 3))
    print("made a char device inside")
except OSError as e:
    print(f"mknod refused inside: {e}")
blocked("special files to the host", "judged by the runner on the host")
