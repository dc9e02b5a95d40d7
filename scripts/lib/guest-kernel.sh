# Debian's kernel for QEMU -M microvm guests, shared by scripts/setup-microvm
# (the microvm backend) and scripts/test.d/48-cgroup-v2.sh (the cgroup v2
# guest). Source it; every function prints nothing on success but its result.

# guest_kernel_version: the newest installed linux-image-*-amd64 that has its
# modules (overlay as the marker), or nothing.
guest_kernel_version() {
  local v
  for v in $(ls /boot/vmlinuz-*-amd64 2>/dev/null | sed 's|/boot/vmlinuz-||' | sort -V -r); do
    [ -f "/lib/modules/$v/kernel/fs/overlayfs/overlay.ko" ] && { echo "$v"; return; }
  done
}

# guest_unpack_vmlinux KVER OUT: QEMU's microvm boots an uncompressed ELF (PVH
# entry), so the vmlinux is unpacked from Debian's xz-compressed bzImage.
# Returns non-zero with a reason on stderr.
guest_unpack_vmlinux() {
  local kver=$1 out=$2 off
  off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "/boot/vmlinuz-$kver" | head -1 | cut -d: -f1 || true)
  [ -n "$off" ] || { echo "/boot/vmlinuz-$kver holds no xz stream (not a Debian amd64 kernel?)" >&2; return 1; }
  tail -c +$((off + 1)) "/boot/vmlinuz-$kver" | xz -dc --single-stream > "$out.tmp" 2>/dev/null || true # trailing data after the stream is expected
  [ "$(head -c 4 "$out.tmp" | od -An -c | tr -d ' ')" = '177ELF' ] || { echo "unpacking /boot/vmlinuz-$kver gave no ELF kernel" >&2; rm -f "$out.tmp"; return 1; }
  mv "$out.tmp" "$out"
}

# guest_copy_modules KVER DIR MODULE...: copies each module's .ko to
# DIR/NAME.ko (the caller lists them in load order, dependencies first).
guest_copy_modules() {
  local kver=$1 dir=$2 m f
  shift 2
  for m in "$@"; do
    f=$(modinfo -k "$kver" -n "$m" 2>/dev/null)
    [ -f "$f" ] || { echo "module $m of $kver not found" >&2; return 1; }
    cp "$f" "$dir/$m.ko" || return 1
  done
}

# guest_tcg_append: kernel command line words that keep TCG boots from hanging.
# The guest's TSC runs at the host's rate under TCG: telling the kernel that
# rate (tsc_early_khz) and the delay-loop value (lpj, HZ=250) skips the PIT
# calibration that hangs some boots.
guest_tcg_append() {
  local khz
  khz=$(awk -F': *' '/^cpu MHz/ { printf "%d", $2 * 1000; exit }' /proc/cpuinfo)
  [ "${khz:-0}" -gt 0 ] || khz=2000000
  echo "tsc_early_khz=$khz lpj=$((khz * 4)) tsc=reliable no_timer_check"
}
