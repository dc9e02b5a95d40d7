//! Reading and writing cgroupfs control files, shared by both hierarchies.

use super::{err, io_err};
use crate::SandboxError;
use std::io::Write;
use std::path::{Path, PathBuf};

pub(super) fn write_file(path: &Path, value: &str) -> Result<(), SandboxError> {
    // O_CREAT lets the v2 unit tests run on a plain directory. On cgroupfs it
    // changes nothing: an existing control file is opened, and a missing one
    // cannot be created (the open fails, which refuses the layer).
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| {
            // cgroupfs answers EACCES, not ENOENT, to O_CREAT of a missing file.
            if e.raw_os_error() == Some(libc::EACCES) && !path.exists() {
                err(format!(
                    "{} does not exist (controller not enabled for this cgroup?)",
                    path.display()
                ))
            } else {
                io_err("open", path, e)
            }
        })?;
    f.write_all(value.as_bytes())
        .map_err(|e| io_err(&format!("write {value:?} to"), path, e))
}

pub(super) fn read_file(path: &Path) -> Result<String, SandboxError> {
    std::fs::read_to_string(path).map_err(|e| io_err("read", path, e))
}

/// Reads `key N` from a flat-keyed file (memory.events, pids.events, cpu.stat,
/// memory.oom_control).
pub(super) fn keyed_value(path: &Path, key: &str) -> Result<u64, SandboxError> {
    let text = read_file(path)?;
    text.lines()
        .find_map(|l| {
            let mut it = l.split_whitespace();
            (it.next() == Some(key)).then(|| it.next()?.parse().ok())?
        })
        .ok_or_else(|| err(format!("{}: no `{key}` entry", path.display())))
}

pub(super) fn single_value(path: &Path) -> Result<u64, SandboxError> {
    let text = read_file(path)?;
    text.trim()
        .parse()
        .map_err(|_| err(format!("{}: not a number: {text:?}", path.display())))
}

pub(super) fn mkdir(path: &Path, exist_ok: bool) -> Result<(), SandboxError> {
    match std::fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if exist_ok && e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(err(format!(
            "{} already exists (a live run with the same name, or a leftover: see clean_stale)",
            path.display()
        ))),
        Err(e) => Err(io_err("mkdir", path, e)),
    }
}

/// Reads `cgroup.procs` of `dir` and of every group below it: a group's
/// members are those of its whole subtree (an OCI runtime, for one, makes
/// the container's group inside the run's). A missing file (the cgroup is
/// gone) is an empty list.
pub(super) fn members_of(dir: &Path) -> Result<Vec<i32>, SandboxError> {
    let mut pids = Vec::new();
    for group in subtree(dir)? {
        let path = group.join("cgroup.procs");
        match std::fs::read_to_string(&path) {
            Ok(text) => pids.extend(text.lines().filter_map(|l| l.trim().parse::<i32>().ok())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("read", &path, e)),
        }
    }
    Ok(pids)
}

/// `dir` and every directory below it, parents before their children (a
/// missing `dir` is an empty list). cgroupfs counts subdirectories in a
/// directory's link count, so a group with none, the usual case, costs one
/// `stat` and no listing.
pub(super) fn subtree(dir: &Path) -> Result<Vec<PathBuf>, SandboxError> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut next = vec![dir.to_path_buf()];
    while let Some(group) = next.pop() {
        let links = match std::fs::symlink_metadata(&group) {
            Ok(m) if m.is_dir() => m.nlink(),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_err("stat", &group, e)),
        };
        if links != 2 {
            let entries = match std::fs::read_dir(&group) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_err("read", &group, e)),
            };
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    next.push(entry.path());
                }
            }
        }
        out.push(group);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::cgroup::tests::*;
    use crate::native::cgroup::SandboxError;
    use std::path::PathBuf;

    #[test]
    fn a_missing_control_file_is_named_in_the_error() {
        let dir = PathBuf::from("/sys/fs/cgroup/pids/airlock").join(unique("missing"));
        std::fs::create_dir_all(&dir).unwrap();
        let result = write_file(&dir.join("memory.max"), "1");
        std::fs::remove_dir(&dir).unwrap();
        match result {
            Err(SandboxError::Layer {
                layer: crate::Layer::Cgroup,
                detail,
            }) => {
                assert!(detail.contains("memory.max does not exist"), "{detail}")
            }
            other => panic!("{other:?}"),
        }
    }
}
