# Tries: the host-interference files of /proc and /sys: sysrq-trigger,
# core_pattern (a path to code execution as host root, proven under bubblewrap
# on this machine), modprobe, uevent_helper, drop_caches, and reading the masked
# kcore, kmsg, keys, timer_list. Writable opens are never written to.
# Stops it: /proc/sys and sysrq-trigger read-only, the sensitive entries masked,
# no capabilities, root inside is not host root.
import os
import escape_lib as L

L.start()
for p in ("/proc/sysrq-trigger", "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe",
          "/sys/kernel/uevent_helper", "/proc/sys/vm/drop_caches", "/proc/sys/kernel/hostname",
          "/proc/sys/user/max_user_namespaces", "/sys/kernel/mm/transparent_hugepage/enabled"):
    try:
        fd = os.open(p, os.O_WRONLY)
        os.close(fd)
        L.escaped(f"open {p} for writing", "opened (not written)")
    except OSError as e:
        L.blocked(f"open {p} for writing", L.ename(e))
for p in ("/proc/kcore", "/proc/kmsg", "/proc/keys", "/proc/timer_list", "/dev/kmsg", "/dev/mem", "/dev/port"):
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        try:
            data = os.read(fd, 64)
        except OSError as e:
            data = b""
            L.blocked(f"read {p}", L.ename(e))
        os.close(fd)
        if data:
            L.escaped(f"read {p}", f"{len(data)} bytes")
        else:
            L.blocked(f"read {p}", "empty (masked)")
    except OSError as e:
        L.blocked(f"read {p}", L.ename(e))
