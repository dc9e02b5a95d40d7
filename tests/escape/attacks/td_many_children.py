# Tries: leave many processes behind in every arrangement (new sessions,
# process groups, orphans, zombies, stopped processes) and exit 0 at once.
# Stops it: teardown by PID namespace and cgroup; the runner checks the host's
# process table for anything carrying the workspace path.
import os
import signal
import time
import escape_lib as L

L.start()
for i in range(12):
    pid = os.fork()
    if pid == 0:
        if i % 3 == 0:
            os.setsid()
        elif i % 3 == 1:
            os.setpgid(0, 0)
        if i % 4 == 0 and os.fork() == 0:
            os.kill(os.getpid(), signal.SIGSTOP)  # a stopped grandchild
        time.sleep(120)
        os._exit(0)
zombie = os.fork()
if zombie == 0:
    os._exit(0)
time.sleep(0.3)
L.say("exiting with 12 children, a stopped grandchild and a zombie behind")
