# Tries: the host's sysfs, read-only leaks of kernel and machine state: the
# firmware memory map, vmcoreinfo (the kernel's physical address), the
# kernel's build-id notes and BTF, the block devices and network interfaces,
# the DMI identity.
# Stops it: no /sys in the view (native, oci, gVisor); under docker an empty
# read-only tmpfs over the daemon's sysfs (its masked paths alone left these
# readable).
import os
import escape_lib as L

L.start()
for p in ("/sys/kernel/vmcoreinfo", "/sys/kernel/notes", "/sys/kernel/btf/vmlinux",
          "/sys/firmware/memmap/0/end", "/sys/devices/virtual/dmi/id/product_name",
          "/sys/kernel/mm/transparent_hugepage/enabled"):
    try:
        with open(p, "rb") as f:
            data = f.read(64)
        if data:
            L.escaped(f"read {p}", f"{len(data)} bytes: {data[:32]!r}")
        else:
            L.blocked(f"read {p}", "empty")
    except OSError as e:
        L.blocked(f"read {p}", L.ename(e))
for d in ("/sys/firmware", "/sys/block", "/sys/class/net", "/sys/kernel"):
    try:
        names = os.listdir(d)
        if names:
            L.escaped(f"list {d}", " ".join(sorted(names)[:8]))
        else:
            L.blocked(f"list {d}", "empty")
    except OSError as e:
        L.blocked(f"list {d}", L.ename(e))
