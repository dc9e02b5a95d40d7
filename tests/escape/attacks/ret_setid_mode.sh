# Tries: with --apply, leave a set-uid program, a set-gid directory and
# world-writable files on the host (0666 / 0777 modes reaching the host let any
# local user rewrite the project).
# Stops it: set-id and sticky bits are stripped and the world-writable bit is
# dropped unless the host file already had it; the files still arrive.
. ./escape_lib.sh
start ret_setid_mode
cp /usr/bin/id ./suid-id && chmod 4755 ./suid-id
mkdir -p sgid-dir && chmod 2777 sgid-dir
echo data > ww.txt && chmod 0666 ww.txt
echo data > sgid-dir/ww2.txt && chmod 0777 sgid-dir/ww2.txt
echo "modes set inside"
blocked "set-id and world-writable modes to the host" "judged by the runner on the host"
