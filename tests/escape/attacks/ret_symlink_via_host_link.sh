# Tries: with --apply, leave symlinks whose targets look inside the workspace
# but resolve out of it through a symlink the host workspace already has
# (`linkdir` -> a directory outside, made by the runner), or through a chain
# of new links: on the host, a later write through them lands outside.
# Stops it: a symlink's target is resolved through the host's existing links
# and the change set's own, not only lexically; out means denied.
. ./escape_lib.sh
start ret_symlink_via_host_link
ln -s linkdir/secret.txt through-host
mkdir -p d
ln -s ../linkdir d/up-host
ln -s d/up-host/secret.txt chained
ln -s c2 c1
ln -s c3 c2
ln -s linkdir c3
ln -s c1/x chain-out
ln -s readme.txt inside-link
echo "made symlinks through links"
blocked "symlinks out through existing and new links" "judged by the runner on the host"
