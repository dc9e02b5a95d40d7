# Tries: outlive the run: double-fork with setsid (the child is reparented,
# leaves the process group and session) and keep running with the workspace
# path in its command line; the main process exits at once with status 0.
# Stops it: PID 1 of the namespace dying kills every process in it, and the
# cgroup is killed at teardown. The runner looks for survivors on the host.
import os
import time
import escape_lib as L

L.start()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in (0, 1, 2):
            os.close(fd)
        for _ in range(600):
            time.sleep(0.1)
            # try to leave a late trace on the host: nothing must appear
            try:
                with open(os.path.join(L.T["TMP_CANARY_DIR"], L.T["PWNED"]), "w") as f:
                    f.write("late")
            except OSError:
                pass
        os._exit(0)
    os._exit(0)
time.sleep(0.3)
L.say("parent exits, daemon detached")
