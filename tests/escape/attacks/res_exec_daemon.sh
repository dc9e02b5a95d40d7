# Tries: outlive the run with daemons whose command line no longer names the
# script (they exec sleep), in a new session, with SIGHUP ignored; the script
# exits 0 at once. The sleeps carry a number the runner knows ("1<IPC_KEY>"), and
# a surviving process would also keep its cgroup from being removed.
# Stops it: PID-namespace death and cgroup teardown.
echo "ATTACK-START res_exec_daemon"
. ./targets.env
setsid sh -c "exec sleep 1$IPC_KEY" </dev/null >/dev/null 2>&1 &
nohup sh -c "trap '' HUP TERM; exec sleep 2$IPC_KEY" </dev/null >/dev/null 2>&1 &
( exec -a "kworker/0:1" sleep "3$IPC_KEY" ) </dev/null >/dev/null 2>&1 &
sleep 0.3
echo "exiting with exec'd daemons behind"
