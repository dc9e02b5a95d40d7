# Tries: create four 60 MiB sparse files (they cost the overlay's tmpfs nothing)
# and --apply: a copy that fills the holes writes 240 MiB to the host's disk,
# more than the overlay itself may hold (issue 11, finding 6).
# Stops it: apply copies data segments only (SEEK_DATA/SEEK_HOLE), and the
# bytes one apply writes are bounded by [changes] max_bytes.
. ./escape_lib.sh
start ret_sparse
for i in 1 2 3 4; do
  truncate -s 60M "sparse$i.bin" || dd if=/dev/zero of="sparse$i.bin" bs=1 count=0 seek=60M 2>/dev/null
  printf 'x' | dd of="sparse$i.bin" bs=1 seek=1000000 conv=notrunc 2>/dev/null
done
echo "made sparse files inside"
blocked "amplify sparse files on apply" "judged by the runner on the host"
