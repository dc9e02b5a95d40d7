# Tries: in workspace mode rw (write-through), leave a setuid/setgid executable in
# the real workspace. The workspace is idmapped so that root inside writes as the
# workspace's owner outside; when that owner is root (airlock run by root or a
# service), a 4755 file is a setuid-root program on the host that any user who can
# reach the directory may run. Stops it: the rw workspace is mounted nosuid AND the
# set-id bits are refused (or stripped) on write-through; the runner looks for
# set-id files in the host copy.
. ./escape_lib.sh
start fs_rw_setuid
cp /usr/bin/id ./suid-id
if chmod 4755 ./suid-id 2>/dev/null && [ -u ./suid-id ]; then echo "setuid bit set inside (the host copy is what counts)"; else blocked "chmod 4755 in rw workspace" "refused"; fi
mkdir -p sgid-dir
if chmod 2775 sgid-dir 2>/dev/null && [ -g sgid-dir ]; then echo "setgid dir inside"; else blocked "chmod 2775 dir in rw workspace" "refused"; fi
blocked "set-id files on the host" "judged by the runner on the host"
