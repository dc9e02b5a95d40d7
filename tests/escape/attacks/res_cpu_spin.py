# Tries: spin on the CPU forever. Stops it: the wall-clock timeout (and the CPU
# time limit); cpu.max keeps it to its share meanwhile.
import escape_lib as L

L.start()
while True:
    pass
