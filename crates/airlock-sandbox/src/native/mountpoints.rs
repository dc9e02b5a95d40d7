//! Mount points inside the sandbox's new root, made on demand by one walker
//! that keeps the directories it has opened.
//!
//! Every step is an `openat` with `O_NOFOLLOW` from an fd, so a symlink in the
//! tree cannot redirect a mount. A view binds many entries under the same few
//! parents (`/etc/*`, `/dev/*`), so the walker keeps each directory it opened
//! and does not walk, create and close `/etc` again for every entry: a bind
//! below a known parent costs the open of its own mount point only.
//!
//! A kept fd names a directory *and the mount it was found on*. Once
//! something is mounted at that directory or above it, lookups through the
//! kept fd would resolve in the covered directory, out of the view: so
//! [`MountPoints::at`] forgets the target and everything below it before
//! handing it out (the caller is about to mount there), and an operation that
//! mounts by path instead calls [`MountPoints::forget_all`].

use crate::sys;
use crate::view::relative_inside;
use crate::{Layer, SandboxError};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

const LAYER: Layer = Layer::Filesystem;

fn fail(what: impl std::fmt::Display, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Layer {
        layer: LAYER,
        detail: format!("{what}: {e}"),
    }
}

/// The new root and the directories below it opened so far (`O_PATH`), keyed
/// by their path relative to the root.
pub struct MountPoints {
    root: RawFd,
    dirs: Vec<(PathBuf, OwnedFd)>,
}

impl MountPoints {
    /// A walker over the directory `root` (an `O_PATH` fd the caller keeps open).
    pub fn new(root: RawFd) -> Self {
        Self {
            root,
            dirs: Vec::new(),
        }
    }

    /// An fd on the directory at sandbox path `path`, created with its parents
    /// as needed. The fd stays owned by the walker.
    pub fn dir(&mut self, path: &Path) -> Result<RawFd, SandboxError> {
        let rel = relative(path)?;
        self.dir_rel(&rel, path)
    }

    /// Creates (if needed) the mount point for sandbox path `path`, a
    /// directory or an empty file, and returns an `O_PATH` fd on it. The
    /// caller is expected to mount there: the walker forgets `path` and every
    /// directory below it.
    pub fn at(&mut self, path: &Path, dir: bool) -> Result<OwnedFd, SandboxError> {
        let rel = relative(path)?;
        let name = rel
            .file_name()
            .ok_or_else(|| fail(path.display(), "cannot mount over the root itself"))?;
        let parent = match rel.parent() {
            Some(p) if !p.as_os_str().is_empty() => self.dir_rel(p, path)?,
            _ => self.root,
        };
        self.dirs.retain(|(kept, _)| !kept.starts_with(&rel));
        let c = CString::new(name.as_bytes()).map_err(|e| fail(path.display(), e))?;
        open_or_make(parent, &c, dir)
            .map_err(|e| fail(format!("mount point {}", path.display()), e))
    }

    /// Forgets every kept directory: something was mounted by path, and any of
    /// them may now be covered.
    pub fn forget_all(&mut self) {
        self.dirs.clear();
    }

    fn dir_rel(&mut self, rel: &Path, shown: &Path) -> Result<RawFd, SandboxError> {
        // The deepest kept ancestor (or the directory itself) is where the walk starts.
        let mut base = self.root;
        let mut done = PathBuf::new();
        for prefix in rel.ancestors().filter(|a| !a.as_os_str().is_empty()) {
            if let Some((p, fd)) = self.dirs.iter().find(|(p, _)| p == prefix) {
                base = fd.as_raw_fd();
                done = p.clone();
                break;
            }
        }
        let rest = rel.strip_prefix(&done).unwrap_or(rel).to_path_buf();
        for name in rest.iter() {
            let c = CString::new(name.as_bytes()).map_err(|e| fail(shown.display(), e))?;
            let fd = open_or_make(base, &c, true)
                .map_err(|e| fail(format!("mount point {}", shown.display()), e))?;
            done.push(name);
            base = fd.as_raw_fd();
            self.dirs.push((done.clone(), fd));
        }
        Ok(base)
    }
}

fn relative(path: &Path) -> Result<PathBuf, SandboxError> {
    relative_inside(path).ok_or_else(|| fail(path.display(), "path must not contain `..`"))
}

/// Opens `name` below `dir` without following a symlink, creating it (an
/// empty directory or file) if it is missing. Opening first: in a view most
/// mount points already exist (a prepared `/etc` carries its own).
fn open_or_make(dir: RawFd, name: &std::ffi::CStr, is_dir: bool) -> io::Result<OwnedFd> {
    let flags = if is_dir {
        libc::O_PATH | libc::O_NOFOLLOW | libc::O_DIRECTORY
    } else {
        libc::O_PATH | libc::O_NOFOLLOW
    };
    match sys::openat(dir, name, flags, 0) {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
        other => return other,
    }
    // SAFETY: name is a live C string; dir is an open directory fd.
    let rc = unsafe {
        if is_dir {
            libc::mkdirat(dir, name.as_ptr(), 0o755)
        } else {
            libc::mknodat(dir, name.as_ptr(), libc::S_IFREG | 0o644, 0)
        }
    };
    // Another walker may have made it in between: only the open below decides.
    if rc < 0 && sys::last_errno() != libc::EEXIST {
        return Err(io::Error::last_os_error());
    }
    sys::openat(dir, name, flags, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    fn root() -> (tempfile::TempDir, OwnedFd) {
        let t = tempfile::tempdir().unwrap();
        let fd = sys::open(t.path(), libc::O_PATH | libc::O_DIRECTORY, 0).unwrap();
        (t, fd)
    }

    #[test]
    fn makes_directories_and_file_mount_points_with_their_parents() {
        let (t, fd) = root();
        let mut m = MountPoints::new(fd.as_raw_fd());
        m.at(Path::new("/etc/ssl/certs"), true).unwrap();
        m.at(Path::new("/dev/null"), false).unwrap();
        assert!(t.path().join("etc/ssl/certs").is_dir());
        let null = std::fs::symlink_metadata(t.path().join("dev/null")).unwrap();
        assert!(null.file_type().is_file() && null.len() == 0);
        assert!(!null.file_type().is_fifo());
    }

    #[test]
    fn keeps_parents_but_forgets_a_mount_point_and_what_lies_below_it() {
        let (_t, fd) = root();
        let mut m = MountPoints::new(fd.as_raw_fd());
        m.dir(Path::new("/etc/ssl/private")).unwrap();
        let kept = |m: &MountPoints| -> Vec<String> {
            m.dirs
                .iter()
                .map(|(p, _)| p.display().to_string())
                .collect()
        };
        assert_eq!(kept(&m), ["etc", "etc/ssl", "etc/ssl/private"]);
        m.at(Path::new("/etc/ssl"), true).unwrap();
        assert_eq!(kept(&m), ["etc"]);
        m.forget_all();
        assert!(kept(&m).is_empty());
    }

    #[test]
    fn a_symlink_on_the_way_is_refused_not_followed() {
        let (t, fd) = root();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), t.path().join("etc")).unwrap();
        let mut m = MountPoints::new(fd.as_raw_fd());
        let err = m.at(Path::new("/etc/passwd"), false).unwrap_err();
        assert!(err.to_string().contains("/etc/passwd"), "{err}");
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
    }

    #[test]
    fn dot_dot_and_the_root_itself_are_refused() {
        let (_t, fd) = root();
        let mut m = MountPoints::new(fd.as_raw_fd());
        assert!(m.at(Path::new("/etc/../x"), true).is_err());
        assert!(m.at(Path::new("/"), true).is_err());
    }
}
