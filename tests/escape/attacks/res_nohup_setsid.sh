# Tries: the shell way of outliving a run: nohup and setsid background jobs,
# disowned, while the script itself exits 0 at once. Stops it: teardown kills
# everything in the sandbox's PID namespace and cgroup.
echo "ATTACK-START res_nohup_setsid"
nohup sh -c 'while :; do sleep 1; done' "$0" >/dev/null 2>&1 &
setsid sh -c 'while :; do sleep 1; done' "$0" >/dev/null 2>&1 &
( exec sh -c 'trap "" HUP TERM; while :; do sleep 1; done' "$0" ) >/dev/null 2>&1 &
echo "exiting with daemons behind"
exit 0
