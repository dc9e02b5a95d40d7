# Tries: abuse the copy-back (workspace.apply = auto) by turning a workspace
# directory into a symlink to a host directory. The runner planted
# victimdir/secret.txt in the workspace; the host /tmp canary dir also holds a
# secret.txt. After `rm -rf victimdir; ln -s <host dir> victimdir` the changes are
# "victimdir/secret.txt deleted" and "victimdir is now a symlink": an apply that
# creates the symlink first and then deletes victimdir/secret.txt through it
# deletes the host's file. Also tries the same with a file-level symlink swap.
# Stops it: apply resolves every path beneath the workspace root without following
# symlinks (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS or equivalent).
. ./escape_lib.sh
start fs_apply_dir_to_symlink
rm -rf victimdir && ln -s "$TMP_CANARY_DIR" victimdir
rm -rf victimdir2 && ln -s "$FAKE_HOME" victimdir2
echo "changed" > ordinary.txt
blocked "apply through a dir turned symlink" "judged by the runner on the host"
