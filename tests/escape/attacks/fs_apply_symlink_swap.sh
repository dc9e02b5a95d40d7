# Tries: abuse the copy-back of workspace changes (workspace.apply = auto). The
# runner planted linkfile -> host /tmp canary and linkdir -> host /tmp canary
# dir in the workspace. We replace them with a regular file and a directory; a
# naive apply that opens ws/linkfile or mkdir -p ws/linkdir follows the host
# symlinks and overwrites the canary or plants a file in the canary dir.
# Stops it: the copy never follows a symlink out of the root.
. ./escape_lib.sh
start fs_apply_symlink_swap
rm -f linkfile linkdir
echo "PWNED-through-apply" > linkfile
mkdir linkdir
echo pwned > "linkdir/$PWNED"
ln -s "$CANARY_HOME" newlink
echo "pwned" > newlink 2>/dev/null || blocked "write through new symlink" "target not visible"
blocked "apply phase" "judged by the runner on the host"
