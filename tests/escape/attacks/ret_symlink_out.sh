# Tries: with --apply, leave symlinks that point out of the workspace (to the
# home directory's .bashrc, to /, to /etc/shadow, and up with ../..): on the
# host they would turn a later write by the user or an agent into a write
# outside (issue 11, finding 5).
# Stops it: symlinks whose target resolves outside the workspace are denied;
# one inside is applied, with its target in the report.
. ./escape_lib.sh
start ret_symlink_out
mkdir -p src
ln -s /root/.bashrc src/calc2.py
ln -s / rootdir
ln -s /etc/shadow shadow
ln -s ../../../../etc/passwd src/up
ln -s "$FAKE_HOME" home
ln -s readme.txt inside-link
echo "made symlinks inside"
blocked "symlinks out of the workspace" "judged by the runner on the host"
