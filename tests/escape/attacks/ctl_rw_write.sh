# Control: in workspace mode rw (overlay + automatic apply), ordinary writes,
# a deletion and a new directory reach the host workspace when the run ends.
. ./escape_lib.sh
start ctl_rw_write
echo fine > allowed.txt
mkdir -p sub/dir && echo x > sub/dir/f
rm -f readme.txt
control_ok "rw writes arrive"
