# Tries: with --apply, create 100,000 small files (issue 11, finding 7: one
# 8.9 MB audit record, a 13 MB JSON answer, 8 s of scanning outside the
# timeout).
# Stops it: the report lists the first entries with counts and a digest of the
# full list; the audit record is bounded; scan and apply stay fast. The runner
# checks the sizes, the wall time and that the files arrived.
import os
from escape_lib import *

start("ret_many_files")
n = 0
# In directories of 1,000; the runner's targets say how many files in all.
for d in range(int(T.get("MANY_FILES", "100000")) // 1000):
    os.makedirs(f"many/d{d}")
    for i in range(1000):
        open(f"many/d{d}/f{i}", "w").close()
        n += 1
print(f"made {n} files inside")
blocked("blow up the report and the audit record", "judged by the runner on the host")
