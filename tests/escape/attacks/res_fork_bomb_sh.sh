# Tries: the classic shell fork bomb. Stops it: pids.max of the sandbox's cgroup.
# The main shell outlives the bomb's first generations on purpose: the classic
# form exits at once, and when it exits before the bomb has reached pids.max the
# tree is torn down with no limit hit to report (CI saw exit 0 after 0.11 s).
# With the main shell alive the hit is certain, and airlock must name it.
echo "ATTACK-START res_fork_bomb_sh"
bomb() { bomb | bomb & }
bomb
wait
sleep 2
