#!/usr/bin/env python3
"""Make an OCI bundle for crun that is as close as the OCI spec gets to `airlock run`.

rootfs: an empty directory with read-only, nosuid, nodev binds of the host's /usr
and /etc (this host is merged-/usr: /bin /lib /lib64 /sbin are symlinks), a fresh
/proc with the usual masked and read-only paths, a tmpfs /dev and /tmp; new user
(root mapped to 2000000000, the sandbox uid), pid, net, ipc, uts, mount and cgroup namespaces; cgroup
memory 512 MiB and pids 256; no capabilities; no_new_privs; read-only root.
Adapted from the planning notes' peer_baselines.sh.

usage: mk_oci_bundle.py DIR [--no-userns] [--no-cgroup] -- ARGS...
"""
import json
import os
import sys


def main() -> None:
    argv = sys.argv[1:]
    if "--" not in argv or not argv:
        raise SystemExit(__doc__)
    d = argv[0]
    i = argv.index("--")
    flags, args = argv[1:i], argv[i + 1:]
    userns = "--no-userns" not in flags
    cgroup = "--no-cgroup" not in flags
    root = os.path.join(d, "rootfs")
    os.makedirs(root, exist_ok=True)
    for sub in ("usr", "etc", "tmp", "proc", "dev"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    for name, target in (("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64"), ("sbin", "usr/sbin")):
        p = os.path.join(root, name)
        if not os.path.islink(p):
            os.symlink(target, p)
    ns = [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount", "cgroup")]
    if userns:
        ns.append({"type": "user"})
    linux = {
        "namespaces": ns,
        "maskedPaths": ["/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
                        "/proc/sched_debug", "/proc/scsi", "/sys/firmware"],
        "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"],
    }
    if userns:
        linux["uidMappings"] = [{"containerID": 0, "hostID": 2000000000, "size": 65536}]
        linux["gidMappings"] = [{"containerID": 0, "hostID": 2000000000, "size": 65536}]
    if cgroup:
        linux["resources"] = {"memory": {"limit": 512 << 20}, "pids": {"limit": 256},
                              "devices": [{"allow": False, "access": "rwm"}]}
        linux["cgroupsPath"] = "/airlock-bench/" + os.path.basename(os.path.abspath(d))
    cfg = {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False, "user": {"uid": 0, "gid": 0}, "args": args,
            "env": ["PATH=/usr/bin:/bin", "HOME=/tmp"], "cwd": "/tmp",
            "capabilities": {k: [] for k in ("bounding", "effective", "inheritable", "permitted", "ambient")},
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
            "noNewPrivileges": True,
        },
        "root": {"path": "rootfs", "readonly": True},
        "hostname": "sbx",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc", "options": ["nosuid", "noexec", "nodev"]},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
            {"destination": "/usr", "type": "bind", "source": "/usr", "options": ["rbind", "ro", "nosuid", "nodev"]},
            {"destination": "/etc", "type": "bind", "source": "/etc", "options": ["rbind", "ro", "nosuid", "nodev"]},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "nodev", "mode=1777", "size=65536k"]},
        ],
        "linux": linux,
    }
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)


if __name__ == "__main__":
    main()
