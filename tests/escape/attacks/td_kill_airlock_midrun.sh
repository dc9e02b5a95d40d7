# Tries: nothing by itself: it starts children and sleeps. The runner SIGKILLs
# the airlock process itself mid-run; then no process, mount, cgroup or state
# may be left (the helper dies with its parent: PDEATHSIG / the pipe closing).
echo "ATTACK-START td_kill_airlock_midrun"
( while :; do sleep 1; done ) &
( trap '' TERM HUP; while :; do sleep 1; done ) &
while :; do sleep 1; done
