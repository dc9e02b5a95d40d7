//! Workspace layer, after the run: the change report of an overlay run (read
//! from the per-run upper layer) and the copy back (`apply`).
//!
//! Apply never follows a symlink: every directory on the way is opened with
//! `O_NOFOLLOW` from an fd on the workspace root, files are written to a
//! temporary name in their final directory and renamed into place, and a
//! protected path is never written (the attempt is reported as a violation).

use super::mounts::{is_whiteout, relative_inside, walk};
use super::sys;
use crate::{ChangeKind, FileChange, Violation};
use std::ffi::CString;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// One change with what apply needs.
#[derive(Debug, Clone)]
pub struct Change {
    /// Relative to the workspace root.
    pub rel: PathBuf,
    pub kind: ChangeKind,
    pub file_type: &'static str,
    pub size: u64,
}

impl Change {
    pub fn public(&self, root: &Path) -> FileChange {
        FileChange {
            path: root.join(&self.rel).to_string_lossy().into_owned(),
            kind: self.kind,
            file_type: self.file_type.to_string(),
            size: self.size,
        }
    }
}

fn type_name(m: &fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_symlink() {
        "symlink"
    } else if t.is_dir() {
        "dir"
    } else if t.is_file() {
        "file"
    } else {
        "other"
    }
}

fn is_opaque(path: &Path) -> bool {
    let Ok(c) = sys::cpath(path) else {
        return false;
    };
    // Root mode's overlay keeps its marks in trusted.*, rootless mode's
    // (mounted with `userxattr`) in user.*.
    [c"trusted.overlay.opaque", c"user.overlay.opaque"]
        .iter()
        .any(|name| {
            let mut buf = [0u8; 4];
            // SAFETY: c, name and buf are live; lgetxattr writes at most buf.len() bytes.
            let n = unsafe {
                libc::lgetxattr(
                    c.as_ptr(),
                    name.as_ptr(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                )
            };
            n >= 1 && buf[0] == b'y'
        })
}

fn same_content(a: &Path, b: &Path, ma: &fs::Metadata, mb: &fs::Metadata) -> bool {
    if type_name(ma) != type_name(mb) || ma.mode() & 0o7777 != mb.mode() & 0o7777 {
        return false;
    }
    if ma.file_type().is_symlink() {
        return fs::read_link(a).ok() == fs::read_link(b).ok();
    }
    if ma.is_file() {
        if ma.len() != mb.len() {
            return false;
        }
        use std::io::Read;
        let (Ok(mut fa), Ok(mut fb)) = (fs::File::open(a), fs::File::open(b)) else {
            return false;
        };
        let mut ba = vec![0u8; 64 * 1024];
        let mut bb = vec![0u8; 64 * 1024];
        loop {
            let (Ok(na), Ok(nb)) = (fa.read(&mut ba), fb.read(&mut bb)) else {
                return false;
            };
            if na != nb || ba[..na] != bb[..nb] {
                return false;
            }
            if na == 0 {
                return true;
            }
        }
    }
    true
}

/// Every file added, modified or deleted, read from the overlay's upper layer
/// against the (unchanged) lower workspace.
pub fn changes(upper: &Path, lower: &Path) -> Vec<Change> {
    let mut out = Vec::new();
    scan(upper, lower, Path::new(""), &mut out);
    out
}

fn scan(upper: &Path, lower: &Path, rel: &Path, out: &mut Vec<Change>) {
    let udir = upper.join(rel);
    let ldir = lower.join(rel);
    if !rel.as_os_str().is_empty() && is_opaque(&udir) {
        // The directory was replaced: whatever the lower one held is gone.
        if let Ok(entries) = fs::read_dir(&ldir) {
            for e in entries.flatten() {
                if fs::symlink_metadata(udir.join(e.file_name())).is_err() {
                    if let Ok(m) = e.path().symlink_metadata() {
                        out.push(Change {
                            rel: rel.join(e.file_name()),
                            kind: ChangeKind::Deleted,
                            file_type: type_name(&m),
                            size: m.len(),
                        });
                    }
                }
            }
        }
    }
    let Ok(entries) = fs::read_dir(&udir) else {
        return;
    };
    let mut names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        let r = rel.join(&name);
        let up = upper.join(&r);
        let lo = lower.join(&r);
        let Ok(um) = fs::symlink_metadata(&up) else {
            continue;
        };
        let lm = fs::symlink_metadata(&lo).ok();
        if is_whiteout(&um) {
            if let Some(lm) = lm {
                out.push(Change {
                    rel: r,
                    kind: ChangeKind::Deleted,
                    file_type: type_name(&lm),
                    size: lm.len(),
                });
            }
            continue;
        }
        match lm {
            None => added(upper, r, &um, out),
            Some(lm) if um.is_dir() && lm.is_dir() => scan(upper, lower, &r, out),
            Some(lm) => {
                if um.is_dir() {
                    out.push(Change {
                        rel: r.clone(),
                        kind: ChangeKind::Modified,
                        file_type: "dir",
                        size: 0,
                    });
                    added_tree(upper, &r, out);
                } else if !same_content(&up, &lo, &um, &lm) {
                    out.push(Change {
                        rel: r,
                        kind: ChangeKind::Modified,
                        file_type: type_name(&um),
                        size: um.len(),
                    });
                }
            }
        }
    }
}

fn added_tree(upper: &Path, rel: &Path, out: &mut Vec<Change>) {
    let Ok(entries) = fs::read_dir(upper.join(rel)) else {
        return;
    };
    let mut names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        let r = rel.join(&name);
        let Ok(m) = fs::symlink_metadata(upper.join(&r)) else {
            continue;
        };
        if is_whiteout(&m) {
            continue;
        }
        added(upper, r, &m, out);
    }
}

/// `rel` is new in the upper layer: it, and everything below it if a directory.
fn added(upper: &Path, rel: PathBuf, m: &fs::Metadata, out: &mut Vec<Change>) {
    let is_dir = m.is_dir();
    out.push(Change {
        rel: rel.clone(),
        kind: ChangeKind::Added,
        file_type: type_name(m),
        size: if is_dir { 0 } else { m.len() },
    });
    if is_dir {
        added_tree(upper, &rel, out);
    }
}

/// True when `rel` is a protected path or lies below one.
pub fn is_protected(rel: &Path, protect: &[PathBuf]) -> bool {
    protect.iter().any(|p| {
        let p = relative_inside(p).unwrap_or_else(|| p.clone());
        !p.as_os_str().is_empty() && rel.starts_with(&p)
    })
}

fn violation(detail: String, rel: &Path) -> Violation {
    Violation {
        kind: "filesystem".into(),
        detail,
        data: serde_json::json!({ "path": rel.to_string_lossy() }),
    }
}

/// Copies the changes from `upper` into the workspace at `root`. Returns the
/// violations (protected or unsafe paths that were not written).
pub fn apply(
    changes: &[Change],
    upper: &Path,
    root: &Path,
    protect: &[PathBuf],
) -> io::Result<Vec<Violation>> {
    let root_fd = sys::open(root, libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0)?;
    let (uid, gid) = super::mounts::owner(root).unwrap_or((0, 0));
    let mut violations = Vec::new();
    // Deletions deepest first, then additions and modifications parents first.
    let mut deletes: Vec<&Change> = changes
        .iter()
        .filter(|c| c.kind == ChangeKind::Deleted)
        .collect();
    deletes.sort_by_key(|c| std::cmp::Reverse(c.rel.components().count()));
    let writes: Vec<&Change> = changes
        .iter()
        .filter(|c| c.kind != ChangeKind::Deleted)
        .collect();
    for c in deletes.into_iter().chain(writes) {
        // Deleting or replacing a parent of a protected path would change it too.
        let hits_parent = c.kind != ChangeKind::Added
            && protect.iter().any(|p| {
                relative_inside(p)
                    .is_some_and(|p| p.starts_with(&c.rel) && !c.rel.as_os_str().is_empty())
            });
        if is_protected(&c.rel, protect) || hits_parent {
            violations.push(violation(
                format!("not applied: {} is a protected path", c.rel.display()),
                &c.rel,
            ));
            continue;
        }
        if let Err(e) = apply_one(c, upper, root_fd.as_raw_fd(), uid, gid) {
            violations.push(violation(
                format!("not applied: {}: {e}", c.rel.display()),
                &c.rel,
            ));
        }
    }
    Ok(violations)
}

fn apply_one(c: &Change, upper: &Path, root: RawFd, uid: u32, gid: u32) -> io::Result<()> {
    let parent_rel = c.rel.parent().unwrap_or(Path::new(""));
    let name = c
        .rel
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty path"))?;
    let name_c = CString::new(name.as_bytes())?;
    // Opening every component with O_NOFOLLOW refuses a symlinked directory.
    let parent: OwnedFd = walk(root, parent_rel, libc::O_RDONLY | libc::O_DIRECTORY)?;
    let p = parent.as_raw_fd();
    match c.kind {
        ChangeKind::Deleted => remove_at(p, &name_c),
        ChangeKind::Added | ChangeKind::Modified => {
            let src = upper.join(&c.rel);
            let m = fs::symlink_metadata(&src)?;
            let mode = m.permissions().mode() & 0o777;
            if m.is_dir() {
                // A modified dir was a non-dir before: replace it.
                if let Ok(old) = stat_at(p, &name_c) {
                    if old.st_mode & libc::S_IFMT != libc::S_IFDIR {
                        remove_at(p, &name_c)?;
                    }
                }
                // SAFETY: name_c is a live C string; p is an open directory fd.
                let rc = unsafe { libc::mkdirat(p, name_c.as_ptr(), mode) };
                if rc < 0 && sys::last_errno() != libc::EEXIST {
                    return Err(io::Error::last_os_error());
                }
                // SAFETY: as above.
                unsafe { libc::fchownat(p, name_c.as_ptr(), uid, gid, libc::AT_SYMLINK_NOFOLLOW) };
                Ok(())
            } else if m.file_type().is_symlink() {
                let target = fs::read_link(&src)?;
                let tmp = tmp_name(name);
                let t = sys::cpath(&target)?;
                // SAFETY: live C strings; p is an open directory fd.
                sys::cvt(unsafe { libc::symlinkat(t.as_ptr(), p, tmp.as_ptr()) })?;
                // SAFETY: as above.
                unsafe { libc::fchownat(p, tmp.as_ptr(), uid, gid, libc::AT_SYMLINK_NOFOLLOW) };
                rename_into(p, &tmp, &name_c)
            } else if m.is_file() {
                let tmp = tmp_name(name);
                let mut input =
                    fs::File::from(sys::open(&src, libc::O_RDONLY | libc::O_NOFOLLOW, 0)?);
                let out = sys::openat(
                    p,
                    &tmp,
                    libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
                    0o600,
                )?;
                let mut out = fs::File::from(out);
                let copied = io::copy(&mut input, &mut out).map(|_| {
                    // SAFETY: fchown/fchmod on an fd we own.
                    unsafe {
                        libc::fchown(out.as_raw_fd(), uid, gid);
                        libc::fchmod(out.as_raw_fd(), mode);
                    }
                });
                if let Err(e) = copied {
                    // SAFETY: live C string; p is an open directory fd.
                    unsafe { libc::unlinkat(p, tmp.as_ptr(), 0) };
                    return Err(e);
                }
                if let Ok(old) = stat_at(p, &name_c) {
                    if old.st_mode & libc::S_IFMT == libc::S_IFDIR {
                        remove_at(p, &name_c)?;
                    }
                }
                rename_into(p, &tmp, &name_c)
            } else {
                Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "special files are not copied back",
                ))
            }
        }
    }
}

fn tmp_name(name: &std::ffi::OsStr) -> CString {
    let mut v = b".airlock-apply-".to_vec();
    v.extend_from_slice(name.as_bytes());
    v.retain(|b| *b != 0);
    CString::new(v).unwrap_or_else(|_| CString::from(c".airlock-apply"))
}

fn rename_into(dir: RawFd, from: &CString, to: &CString) -> io::Result<()> {
    // SAFETY: live C strings; dir is an open directory fd.
    let rc = unsafe { libc::renameat(dir, from.as_ptr(), dir, to.as_ptr()) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        // SAFETY: as above.
        unsafe { libc::unlinkat(dir, from.as_ptr(), 0) };
        return Err(e);
    }
    Ok(())
}

fn stat_at(dir: RawFd, name: &CString) -> io::Result<libc::stat> {
    // SAFETY: st is written by fstatat before it is read; name is a live C string.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    sys::cvt(unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok(st)
}

/// Removes a file, symlink or whole directory tree below `dir` without following symlinks.
fn remove_at(dir: RawFd, name: &CString) -> io::Result<()> {
    let st = match stat_at(dir, name) {
        Ok(st) => st,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
        let sub = sys::openat(
            dir,
            name,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            0,
        )?;
        let listing = fs::read_dir(format!("/proc/self/fd/{}", sub.as_raw_fd()))?;
        for e in listing.flatten() {
            let n = CString::new(e.file_name().as_bytes())?;
            remove_at(sub.as_raw_fd(), &n)?;
        }
        // SAFETY: live C string; dir is an open directory fd.
        sys::cvt(unsafe { libc::unlinkat(dir, name.as_ptr(), libc::AT_REMOVEDIR) })?;
    } else {
        // SAFETY: as above.
        sys::cvt(unsafe { libc::unlinkat(dir, name.as_ptr(), 0) })?;
    }
    Ok(())
}
