# Tries: with --apply, a legitimate 255-byte file name (NAME_MAX): a temporary
# name built by prefixing it exceeds NAME_MAX and the apply fails (issue 11,
# finding 7).
# Stops it: apply's temporary names are short; the runner looks for the file
# on the host.
from escape_lib import *

start("ret_long_name")
with open("L" * 251 + ".txt", "w") as f:
    f.write("long\n")
blocked("a 255-byte name is lost on apply", "judged by the runner on the host")
