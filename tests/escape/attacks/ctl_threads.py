# Control: threads start and join (clone with thread flags stays allowed).
import threading
import escape_lib as L

print("CONTROL-START")
results = []
ts = [threading.Thread(target=lambda i=i: results.append(i * i)) for i in range(16)]
for t in ts:
    t.start()
for t in ts:
    t.join()
if sorted(results) == [i * i for i in range(16)]:
    L.control_ok("16 threads")
