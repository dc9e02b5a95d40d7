# Tries: ignore SIGTERM, SIGINT and SIGHUP in a process tree that sleeps in a
# loop past the timeout. Stops it: the timeout kills with SIGKILL (cgroup.kill or
# the PID namespace's init dying), not a polite SIGTERM.
echo "ATTACK-START res_sigterm_ignore"
trap '' TERM INT HUP
( trap '' TERM INT HUP; while :; do sleep 1; done ) &
( trap '' TERM INT HUP; while :; do sleep 1; done ) &
while :; do sleep 1; done
