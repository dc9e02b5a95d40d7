# Tries: flood stdout and stderr (64 MiB each) to exhaust the caller's memory or
# the model's context. Stops it: caps on captured stdout/stderr (1 MiB in the
# test policy): the output is truncated with a marker, the rest is dropped or the
# command is stopped (killed_by = "output").
import os
import sys
import escape_lib as L

L.start()
line = b"A" * 1023 + b"\n"
block = line * 1024
for i in range(64):
    os.write(1, block)
    os.write(2, block)
L.say("FLOOD-DONE")
