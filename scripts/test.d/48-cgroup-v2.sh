#!/usr/bin/env bash
# cgroup v2 for real (issue 14): this host has cgroup v1, so the v2 path runs in
# a QEMU guest with Debian's kernel whose init mounts only cgroup2
# (scripts/v2guest/init), and runs the focused v2 checks there
# (scripts/v2guest/guest-test.sh) as root and as an unprivileged user with a
# delegated subtree: memory, pids and CPU kills reported as such, the timeout
# taking the whole tree down through cgroup.kill, no cgroup left behind,
# `airlock doctor` on v2, and escape checks (no cgroupfs inside, no mount, no
# limit raised). docs/sandbox.md, "cgroup v2", says more.
#
# Software emulation (TCG) by default: this machine's /dev/kvm crashes stock
# guest kernels. Boots that hang calibrating the clock are avoided with
# tsc_early_khz/lpj and caught by a watchdog; a hung boot is retried (3 boots
# at most); a guest that boots and then does not finish fails the part.
# Needs root (apt-get, and the build writes root-owned files into the image).
#   V2GUEST_ACCEL=kvm      use KVM instead (where it works)
#   V2GUEST_TIMEOUT=300    seconds for one booted guest to finish
#   V2GUEST_BOOT_TIMEOUT=40  seconds for a boot to reach init (the watchdog)
set -uo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "48-cgroup-v2: run as root (installs packages, builds the guest image)"; exit 1; }
out=target/v2guest
accel=${V2GUEST_ACCEL:-tcg}
run_timeout=${V2GUEST_TIMEOUT:-300}
boot_timeout=${V2GUEST_BOOT_TIMEOUT:-40} # seconds until init says @@GUEST-UP (a normal boot: 3-5 s)
boots=3
checks_per_mode=32 # the number of checks in scripts/v2guest/guest-test.sh
mkdir -p "$out"

# -- packages (idempotent)
missing=()
for p in qemu-system-x86 busybox-static cpio e2fsprogs; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
# Debian's kernel: the newest installed linux-image-*-amd64 with its modules
# (scripts/lib/guest-kernel.sh, shared with scripts/setup-microvm).
. scripts/lib/guest-kernel.sh
kver=$(guest_kernel_version)
[ -n "$kver" ] || missing+=(linux-image-amd64)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
    > "$out/apt.log" 2>&1 || { tail -20 "$out/apt.log"; echo "48-cgroup-v2: could not install ${missing[*]}"; exit 1; }
  kver=$(guest_kernel_version)
fi
[ -n "$kver" ] || { echo "48-cgroup-v2: no Debian kernel with modules in /boot and /lib/modules after installing linux-image-amd64"; exit 1; }

cargo build -q --locked -p airlock || exit 1

# -- the kernel: QEMU's microvm boots an uncompressed ELF (PVH entry), so the
# vmlinux is unpacked from Debian's xz-compressed bzImage once per version.
vmlinux=$out/vmlinux-$kver
if [ ! -s "$vmlinux" ]; then
  guest_unpack_vmlinux "$kver" "$vmlinux" 2>&1 | sed 's/^/48-cgroup-v2: /'
  [ -s "$vmlinux" ] || exit 1
fi

# -- the guest's disks. The root filesystem: busybox, the airlock binary with
# its libraries (from ldd), the guest's init and checks, made into an ext4
# image by mke2fs -d (sparse; rebuilt every run, as the binary changes). The
# initramfs: busybox, the modules that mount it, and the same init.
root=$out/root initramfs=$out/initramfs
rm -rf "$root" "$initramfs"
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,lib,lib64,etc,proc,sys,dev,tmp,v2} \
  "$initramfs"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,modules}
case "$(ldd /bin/busybox 2>&1)" in *"not a dynamic executable"*) ;; *) echo "48-cgroup-v2: /bin/busybox is not static (busybox-static?)"; exit 1 ;; esac
for d in "$root" "$initramfs"; do
  cp /bin/busybox "$d/bin/busybox"
  for a in $("$d/bin/busybox" --list-full); do
    [ -e "$d/$a" ] || ln -s /bin/busybox "$d/$a"
  done
  install -m 0755 scripts/v2guest/init "$d/init"
done
# Stripped: the debug binary's line tables would only fill the disk.
if command -v objcopy >/dev/null; then
  objcopy --strip-debug target/debug/airlock "$root/usr/local/bin/airlock" || exit 1
else
  cp target/debug/airlock "$root/usr/local/bin/airlock"
fi
for lib in $(ldd target/debug/airlock | grep -o '/[^ ]*'); do
  mkdir -p "$root$(dirname "$lib")" && cp -L "$lib" "$root$lib" || exit 1
done
printf 'root:x:0:0:root:/root:/bin/sh\ntester:x:1000:1000:tester:/home/tester:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\ntester:x:1000:\n' > "$root/etc/group"
install -m 0755 scripts/v2guest/guest-test.sh "$root/v2/guest-test.sh"
rm -f "$out/rootfs.img"
mke2fs -q -t ext4 -d "$root" -F "$out/rootfs.img" 512M || exit 1
guest_copy_modules "$kver" "$initramfs/modules" virtio_ring virtio virtio_mmio virtio_blk crc16 mbcache jbd2 crc32c_generic ext4 overlay \
  || { echo "48-cgroup-v2: could not copy the guest's modules"; exit 1; }
(cd "$initramfs" && find . | cpio -o -H newc -R 0:0 --quiet) | gzip -1 > "$out/initrd.gz" || exit 1
echo "guest: Linux $kver, accel $accel, root filesystem $(du -h "$out/rootfs.img" | cut -f1), initramfs $(du -h "$out/initrd.gz" | cut -f1)"

# -- boot, with a watchdog; retry only boots that never reached init
append="console=ttyS0 panic=-1 $(guest_tcg_append)"
log=$out/console.log
qpid=""
cleanup() { [ -n "$qpid" ] && kill "$qpid" 2>/dev/null; }
trap cleanup EXIT
result=""
for attempt in $(seq 1 $boots); do
  rm -f "$log"
  start=$(date +%s.%N)
  qemu-system-x86_64 -M microvm -accel "$accel" -cpu max -m 1024 -smp 1 \
    -nodefaults -no-user-config -display none -serial "file:$log" -no-reboot \
    -drive "id=root,file=$out/rootfs.img,format=raw,if=none,cache=unsafe" -device virtio-blk-device,drive=root \
    -kernel "$vmlinux" -initrd "$out/initrd.gz" -append "$append" \
    > "$out/qemu.err" 2>&1 &
  qpid=$!
  up="" result=""
  while kill -0 "$qpid" 2>/dev/null; do
    now=$(date +%s.%N)
    elapsed=$(awk -v a="$start" -v b="$now" 'BEGIN { printf "%d", b - a }')
    if [ -z "$up" ] && grep -q '^@@GUEST-UP' "$log" 2>/dev/null; then
      up=$(awk -v a="$start" -v b="$now" 'BEGIN { printf "%.1f", b - a }')
      echo "boot $attempt: init up after ${up}s"
    fi
    if [ -z "$up" ] && [ "$elapsed" -ge $boot_timeout ]; then
      result="boot-hang"; break
    fi
    if [ "$elapsed" -ge $((boot_timeout + run_timeout)) ]; then
      result="run-timeout"; break
    fi
    sleep 0.5
  done
  if [ -n "$result" ]; then
    kill "$qpid" 2>/dev/null
  fi
  wait "$qpid" 2>/dev/null
  qpid=""
  total=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  [ -n "$up" ] || grep -q '^@@GUEST-UP' "$log" 2>/dev/null || result=${result:-boot-hang}
  if [ "$result" = boot-hang ]; then
    echo "boot $attempt: no init after ${total}s (hung or crashed while booting); last console lines:"
    tr -d '\r' < "$log" 2>/dev/null | grep -v '^\s*$' | tail -5 | sed 's/^/     /'
    sed 's/^/     qemu: /' "$out/qemu.err"
    continue
  fi
  echo "guest ran for ${total}s"
  break
done

# -- the verdict, from the guest's @@ lines only
if [ "$result" = boot-hang ]; then
  echo "48-cgroup-v2: FAILED: the guest did not boot in $boots attempts (watchdog ${boot_timeout}s each; console above, full log $log)"
  exit 1
fi
lines=$(tr -d '\r' < "$log" | grep -a '^@@')
grep -a '^@@\(OK\|FAIL\|INFO\|DUMP\|GUEST-ERROR\)' <<<"$lines" | sed 's/^@@//'
pass=$(grep -ac '^@@OK ' <<<"$lines")
fail=$(grep -ac '^@@FAIL ' <<<"$lines")
problems=()
[ "$result" = run-timeout ] && problems+=("the guest booted but did not finish within ${run_timeout}s (last console lines: $(tr -d '\r' < "$log" | tail -3 | tr '\n' '|'))")
grep -aq '^@@GUEST-ERROR' <<<"$lines" && problems+=("the guest could not be set up")
for m in root user flat; do
  grep -aq "^@@END $m " <<<"$lines" || problems+=("the $m checks did not finish")
done
grep -aq '^@@GUEST-DONE' <<<"$lines" || problems+=("the guest did not reach its end")
[ "$fail" = 0 ] || problems+=("$fail checks failed")
# guest-test.sh's checks per mode: fewer OK lines means some never ran.
for m in root user flat; do
  want=$checks_per_mode
  [ $m = flat ] && want=2
  n=$(grep -ac "^@@OK $m " <<<"$lines")
  [ "$n" -ge "$want" ] || [ "$fail" != 0 ] || problems+=("only $n of $want $m checks passed")
done
echo "$pass passed, $fail failed"
if [ ${#problems[@]} -gt 0 ]; then
  printf '48-cgroup-v2: FAILED: %s\n' "${problems[@]}"
  echo "(full console log: $log)"
  exit 1
fi
