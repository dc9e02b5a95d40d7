# Control: writes in the workspace work and are reported as changes, while the
# host copy of the workspace stays as it was (overlay mode, no apply; the runner
# checks the host copy).
echo CONTROL-START
echo new > created.txt && echo changed >> readme.txt && rm escape_lib.sh && mkdir -p sub/dir && echo x > sub/dir/f \
  && echo "CONTROL-OK wrote, modified and deleted in the workspace"
