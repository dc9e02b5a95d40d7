# Tries: ln -s the host canary directories into the workspace, then cat, ls and
# cp through them. Stops it: the targets are outside the sandbox's view.
. ./escape_lib.sh
start fs_symlink_dir_escape
ln -s "$TMP_CANARY_DIR" tmpdir
ln -s "$FAKE_HOME" homedir
try_read "cat through dir symlink (tmp)" tmpdir/secret.txt
try_read "cat through dir symlink (home ssh)" homedir/.ssh/id_rsa
try_cmd "cp out through symlink" cp homedir/.aws/credentials ./stolen
[ -f ./stolen ] && escaped "copied credentials" "$(cat ./stolen)"
try_cmd "write through dir symlink" sh -c "echo pwned > tmpdir/$PWNED"
