# Tries: with --apply, create files whose names are not UTF-8 (\xff, \xfe,
# a truncated \xc3): decoded lossily, two different names print the same and
# the report cannot say which file it means (issue 11, finding 7).
# Stops it: non-UTF-8 bytes are reported as \xNN escapes, distinct, and applied
# under their exact names.
import os
from escape_lib import *

start("ret_names_nonutf8")
for name in [b"\xff.txt", b"\xfe.txt", b"a\xc3", b"back\\xff.txt"]:
    with open(name, "wb") as f:
        f.write(b"data\n")
blocked("make two changes report the same name", "judged by the runner on the report")
