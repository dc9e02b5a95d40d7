//! Which cgroup hierarchies this host offers: `/proc/self/mountinfo` parsing,
//! the v1/v2 choice for a privileged run, and the delegated v2 subtree an
//! unprivileged user may manage.

use super::fs::read_file;
use super::{err, CgroupHost, V1Roots};
use crate::sys;
use crate::SandboxError;
use std::path::{Path, PathBuf};

fn decode_mount_path(field: &str) -> PathBuf {
    // mountinfo escapes space, tab, newline and backslash as \ooo (octal).
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        if let Some(d) = octal {
            let v = d.iter().fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
            out.push(v as u8);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// (mount point, fs type, super options) of every cgroup mount in `mountinfo`.
pub(super) fn cgroup_mounts(mountinfo: &str) -> Vec<(PathBuf, String, Vec<String>)> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mount_point = left.split_whitespace().nth(4)?;
            let mut r = right.split_whitespace();
            let fstype = r.next()?.to_string();
            let _source = r.next()?;
            let options = r
                .next()
                .unwrap_or("")
                .split(',')
                .map(String::from)
                .collect();
            (fstype == "cgroup" || fstype == "cgroup2")
                .then(|| (decode_mount_path(mount_point), fstype, options))
        })
        .collect()
}

fn v2_usable(root: &Path) -> bool {
    let Ok(controllers) = std::fs::read_to_string(root.join("cgroup.controllers")) else {
        return false;
    };
    let have: Vec<&str> = controllers.split_whitespace().collect();
    let writable = std::ffi::CString::new(
        root.join("cgroup.subtree_control")
            .as_os_str()
            .as_encoded_bytes(),
    )
    // SAFETY: access reads a valid C string and touches nothing else.
    .map(|c| unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0)
    .unwrap_or(false);
    ["memory", "pids", "cpu"].iter().all(|c| have.contains(c)) && writable
}

impl CgroupHost {
    /// Finds a usable layout from `/proc/self/mountinfo`: v2 when a cgroup2
    /// mount offers memory, pids and cpu and is writable; otherwise v1 when
    /// memory, pids, cpu and cpuacct hierarchies are mounted.
    pub fn detect() -> Result<CgroupHost, SandboxError> {
        let mountinfo = read_file(Path::new("/proc/self/mountinfo"))?;
        Self::detect_from(&mountinfo)
    }

    fn detect_from(mountinfo: &str) -> Result<CgroupHost, SandboxError> {
        let mounts = cgroup_mounts(mountinfo);
        if let Some((root, _, _)) = mounts
            .iter()
            .find(|(p, t, _)| t == "cgroup2" && v2_usable(p))
        {
            return Ok(Self::v2_at(root.clone()));
        }
        let find = |controller: &str| {
            mounts
                .iter()
                .find(|(_, t, o)| t == "cgroup" && o.iter().any(|x| x == controller))
                .map(|(p, _, _)| p.clone())
        };
        match (find("memory"), find("pids"), find("cpu"), find("cpuacct")) {
            (Some(memory), Some(pids), Some(cpu), Some(cpuacct)) => Ok(Self::v1_at(V1Roots {
                memory,
                pids,
                cpu,
                cpuacct,
                freezer: find("freezer"),
            })),
            _ => Err(err(
                "no usable cgroups: no cgroup2 mount with memory, pids and cpu controllers \
                 enabled and writable, and no cgroup v1 memory, pids, cpu and cpuacct hierarchies",
            )),
        }
    }
}

/// A cgroup v2 subtree this user may manage (systemd user delegation, or a
/// subtree an administrator `chown`ed): the highest ancestor of this process's
/// own cgroup, below the cgroup2 mount `mount`, whose `cgroup.procs`,
/// `cgroup.subtree_control` and directory are writable by the caller and which
/// offers the memory, pids and cpu controllers. `own` is this process's
/// cgroup path as `/proc/self/cgroup` gives it (`0::/user.slice/...`).
pub fn delegated_v2_in(mount: &Path, own: &str) -> Option<PathBuf> {
    let rel = own.trim().trim_start_matches('/');
    let mut candidates = Vec::new();
    let mut cur = mount.to_path_buf();
    for comp in Path::new(rel).components() {
        cur.push(comp);
        candidates.push(cur.clone());
    }
    let writable = |p: &Path| {
        sys::cpath(p)
            .ok()
            // SAFETY: c is a live C string.
            .is_some_and(|c| unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0)
    };
    candidates.into_iter().find(|dir| {
        let controllers =
            std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
        let have: Vec<&str> = controllers.split_whitespace().collect();
        ["memory", "pids", "cpu"].iter().all(|c| have.contains(c))
            && writable(dir)
            && writable(&dir.join("cgroup.procs"))
            && writable(&dir.join("cgroup.subtree_control"))
    })
}

/// The delegated cgroup v2 subtree of this host and user, if there is one.
pub fn delegated_v2() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?.to_string();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    cgroup_mounts(&mountinfo)
        .into_iter()
        .filter(|(_, fstype, _)| fstype == "cgroup2")
        .find_map(|(mp, _, _)| delegated_v2_in(&mp, &path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::cgroup::tests::fake_v2_root;

    #[test]
    fn detection_reads_mountinfo() {
        let root = fake_v2_root();
        let v2_line = format!(
            "30 25 0:26 / {} rw,nosuid - cgroup2 cgroup2 rw\n",
            root.path().display()
        );
        let host = CgroupHost::detect_from(&v2_line).unwrap();
        assert_eq!(host, CgroupHost::v2_at(root.path()));

        // This machine's shape: v1 controllers plus a cgroup2 with only hugetlb.
        let empty_v2 = tempfile::tempdir().unwrap();
        std::fs::write(empty_v2.path().join("cgroup.controllers"), "hugetlb\n").unwrap();
        std::fs::write(empty_v2.path().join("cgroup.subtree_control"), "").unwrap();
        let mixed = format!(
            "31 25 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n\
             32 25 0:28 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n\
             33 25 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
             34 25 0:30 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n\
             35 25 0:31 / /sys/fs/cgroup/free\\040zer rw - cgroup cgroup rw,freezer\n\
             36 25 0:32 / {} rw - cgroup2 cgroup2 rw\n",
            empty_v2.path().display()
        );
        let host = CgroupHost::detect_from(&mixed).unwrap();
        assert_eq!(
            host,
            CgroupHost::v1_at(V1Roots {
                memory: "/sys/fs/cgroup/memory".into(),
                pids: "/sys/fs/cgroup/pids".into(),
                cpu: "/sys/fs/cgroup/cpu".into(),
                cpuacct: "/sys/fs/cgroup/cpuacct".into(),
                freezer: Some("/sys/fs/cgroup/free zer".into()),
            })
        );
        let none = format!(
            "36 25 0:32 / {} rw - cgroup2 cgroup2 rw\n",
            empty_v2.path().display()
        );
        assert!(matches!(
            CgroupHost::detect_from(&none),
            Err(SandboxError::Layer {
                layer: crate::Layer::Cgroup,
                ..
            })
        ));
    }

    #[test]
    fn a_delegated_subtree_needs_controllers_and_write_access() {
        let d = tempfile::tempdir().unwrap();
        let svc = d
            .path()
            .join("user.slice/user-1000.slice/user@1000.service");
        let app = svc.join("app.slice/x.scope");
        std::fs::create_dir_all(&app).unwrap();
        let own = "/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope";
        // Nothing shaped like a cgroup: no subtree.
        assert_eq!(delegated_v2_in(d.path(), own), None);
        for f in ["cgroup.procs", "cgroup.subtree_control"] {
            std::fs::write(svc.join(f), "").unwrap();
        }
        std::fs::write(svc.join("cgroup.controllers"), "cpu io memory pids\n").unwrap();
        assert_eq!(delegated_v2_in(d.path(), own), Some(svc.clone()));
        std::fs::write(svc.join("cgroup.controllers"), "cpu io pids\n").unwrap();
        assert_eq!(delegated_v2_in(d.path(), own), None);
    }
}
