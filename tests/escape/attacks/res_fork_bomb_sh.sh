# Tries: the classic shell fork bomb. Stops it: pids.max of the sandbox's cgroup;
# the wall-clock timeout then kills the whole tree (cgroup.kill or PID 1 death).
echo "ATTACK-START res_fork_bomb_sh"
bomb() { bomb | bomb & }
bomb
wait
