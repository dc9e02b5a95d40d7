//! Per-run lock files, `<runs>/<request_id>`, plus the shared mount points
//! (`root`, `lower` and `upper` under the mount base) that every run mounts on
//! in its own private mount namespace.
//!
//! The helper holds an exclusive `flock` on its run's file for the whole run.
//! A run file whose lock can be taken belongs to a helper that died (SIGKILL,
//! crash, power loss); the next helper to sweep removes it and its cgroup.
//!
//! A run is an empty file, not a directory: a directory has a data block, and
//! on a filesystem mounted with `discard` freeing that block at the end of
//! every run waited for a discard request to the disk (0.1-0.2 ms here, on the
//! way to the caller's exit). Directories `<runs>/<request_id>/lock` left by
//! an older airlock are still swept.

use crate::sys;
use crate::Layer;
use crate::SandboxError;
use std::ffi::{CStr, CString};
use std::fs;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

pub const LAYER: Layer = Layer::StateDir;

fn fail(what: impl std::fmt::Display, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Layer {
        layer: LAYER,
        detail: format!("{what}: {e}"),
    }
}

/// The default runs directory: `$AIRLOCK_STATE_DIR/runs`, else `/var/lib/airlock/runs`.
pub fn default_runs_dir() -> PathBuf {
    match std::env::var_os("AIRLOCK_STATE_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("runs"),
        _ => PathBuf::from("/var/lib/airlock/runs"),
    }
}

/// A request id is used as a directory and cgroup name: keep it to a safe alphabet.
pub fn valid_run_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// Directories every run mounts on, each in its own private mount namespace:
/// the new root's tmpfs, the idmapped lower layer and the upper layer's tmpfs.
/// They are shared and never
/// removed, because removing a directory that is still a mount point in a dying
/// namespace makes the kernel detach those mounts synchronously (an RCU grace
/// period per directory, measured at several ms each).
const MOUNT_POINTS: [&str; 3] = ["root", "lower", "upper"];

/// Where the shared mount points live as root: `/run/airlock/mnt` (a tmpfs on
/// any systemd-era host, outside every workspace and state directory).
const MOUNT_BASE: &str = "/run/airlock/mnt";

/// The mount base in force in this helper: [`MOUNT_BASE`], or in rootless mode
/// the caller's runtime directory's `mnt` (set once, before the run directory
/// is created).
static MOUNT_BASE_IN_FORCE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Sets where this helper's shared mount points live (rootless mode).
pub fn set_mount_base(base: PathBuf) {
    let _ = MOUNT_BASE_IN_FORCE.set(base);
}

fn mount_base() -> &'static Path {
    MOUNT_BASE_IN_FORCE
        .get()
        .map(PathBuf::as_path)
        .unwrap_or(Path::new(MOUNT_BASE))
}

/// The mount point `which` ("root", "lower" or "upper").
pub fn mount_point(which: &str) -> PathBuf {
    mount_base().join(which)
}

/// Gives the unnamed (O_TMPFILE) file `file` the name `name` in `dir`.
/// `linkat(AT_EMPTY_PATH)` needs CAP_DAC_READ_SEARCH before Linux 6.10 (it
/// answers ENOENT without it, as for an ordinary user on Debian 12's 6.1); the
/// `/proc/self/fd` form with AT_SYMLINK_FOLLOW is open to anyone there.
fn link_unnamed(file: &OwnedFd, dir: &OwnedFd, name: &CStr) -> std::io::Result<()> {
    // SAFETY: both fds are open; the names are live C strings.
    let direct = sys::cvt(unsafe {
        libc::linkat(
            file.as_raw_fd(),
            c"".as_ptr(),
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::AT_EMPTY_PATH,
        )
    });
    match direct {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => link_via_proc(file, dir, name),
        other => other.map(|_| ()),
    }
}

/// `link_unnamed` through `/proc/self/fd/N` (what open(2) documents for
/// O_TMPFILE without CAP_DAC_READ_SEARCH).
fn link_via_proc(file: &OwnedFd, dir: &OwnedFd, name: &CStr) -> std::io::Result<()> {
    let proc_path = sys::cpath(Path::new(&format!("/proc/self/fd/{}", file.as_raw_fd())))?;
    // SAFETY: proc_path and name are live C strings; dir is an open fd.
    sys::cvt(unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            proc_path.as_ptr(),
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    })
    .map(|_| ())
}

/// A run's entry in the runs directory, locked for as long as this lives.
pub struct RunLock {
    /// `<runs>/<request_id>`.
    pub path: PathBuf,
    /// Holding this fd holds the lock.
    _lock: OwnedFd,
}

impl RunLock {
    /// Creates `<runs>/<name>` with its lock held. Fails if it already exists.
    pub fn create(runs: &Path, name: &str) -> Result<RunLock, SandboxError> {
        if !valid_run_name(name) {
            return Err(SandboxError::Spec(format!(
                "request id `{name}` is not a valid run name"
            )));
        }
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(runs)
            .map_err(|e| fail(runs.display(), e))?;
        let path = runs.join(name);
        let c_name = CString::new(name).map_err(|e| fail("run name", e))?;
        // Created unnamed, locked, and only then linked in, so that a
        // concurrent sweep can never see it unlocked.
        let lock = sys::open(runs, libc::O_RDWR | libc::O_TMPFILE, 0o600)
            .map_err(|e| fail("run lock file", e))?;
        // SAFETY: flock on an fd we own.
        sys::cvt(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) })
            .map_err(|e| fail("lock run file", e))?;
        let dir = sys::open(runs, libc::O_PATH | libc::O_DIRECTORY, 0)
            .map_err(|e| fail("runs dir", e))?;
        link_unnamed(&lock, &dir, &c_name).map_err(|e| fail(path.display(), e))?;
        let base = mount_base();
        for name in MOUNT_POINTS {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(base.join(name))
                .map_err(|e| fail(base.join(name).display(), e))?;
        }
        Ok(RunLock { path, _lock: lock })
    }

    /// Removes the run's file (the lock goes with the fd when `self` drops).
    pub fn remove(&self) -> std::io::Result<()> {
        match fs::remove_file(&self.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            r => r,
        }
    }
}

/// `remove_dir_all`, which never follows symlinks; a missing tree is fine.
pub fn remove_tree(path: &Path) -> std::io::Result<()> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        r => r,
    }
}

/// Runs under `runs` whose helper is gone: their lock is free. Returns their
/// names after removing them. `on_stale` runs first for each (to destroy its
/// cgroup).
pub fn clean_stale(runs: &Path, mut on_stale: impl FnMut(&str)) -> Vec<String> {
    let mut cleaned = Vec::new();
    let Ok(entries) = fs::read_dir(runs) else {
        return cleaned;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !valid_run_name(&name) {
            continue;
        }
        let path = entry.path();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        // A run's file is linked in only once locked; an older airlock's run
        // directory holds its lock as `lock`.
        let lock_path = if is_dir {
            path.join("lock")
        } else {
            path.clone()
        };
        let remove = |p: &Path| {
            if is_dir {
                remove_tree(p)
            } else {
                fs::remove_file(p)
            }
        };
        let lock = match sys::open(&lock_path, libc::O_RDWR | libc::O_NOFOLLOW, 0) {
            Ok(l) => l,
            // A directory without a lock file is a run that died while being
            // created only if it is old enough not to be in creation right now.
            Err(_) => {
                let old = is_dir
                    && entry
                        .metadata()
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age.as_secs() > 60);
                if old {
                    on_stale(&name);
                    if remove(&path).is_ok() {
                        cleaned.push(name);
                    }
                }
                continue;
            }
        };
        // SAFETY: flock on an fd we own.
        let free = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        if free {
            on_stale(&name);
            if remove(&path).is_ok() {
                cleaned.push(name);
            }
        }
    }
    cleaned
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn an_unnamed_lock_file_is_linked_through_proc() {
        // The fallback for kernels before 6.10, where an ordinary user's
        // linkat(AT_EMPTY_PATH) answers ENOENT (the cgroup v2 guest of
        // scripts/test.d/48-cgroup-v2.sh runs it for real as uid 1000).
        let d = tempfile::tempdir().unwrap();
        let file = sys::open(d.path(), libc::O_RDWR | libc::O_TMPFILE, 0o600).unwrap();
        let dir = sys::open(d.path(), libc::O_PATH | libc::O_DIRECTORY, 0).unwrap();
        link_via_proc(&file, &dir, c"lock").unwrap();
        assert!(d.path().join("lock").is_file());
        // The name exists now: a second link is refused, not replaced.
        assert_eq!(
            link_via_proc(&file, &dir, c"lock")
                .unwrap_err()
                .raw_os_error(),
            Some(libc::EEXIST)
        );
        // link_unnamed (direct, or through /proc where the kernel wants it) on
        // a fresh unnamed file: one that was linked once cannot be again.
        std::fs::remove_file(d.path().join("lock")).unwrap();
        let file = sys::open(d.path(), libc::O_RDWR | libc::O_TMPFILE, 0o600).unwrap();
        link_unnamed(&file, &dir, c"lock").unwrap();
        assert!(d.path().join("lock").is_file());
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_run_is_one_empty_locked_file_that_goes_with_it() {
        let d = tempfile::tempdir().unwrap();
        let runs = d.path().join("runs");
        let run = RunLock::create(&runs, "r1").unwrap();
        let meta = fs::symlink_metadata(&run.path).unwrap();
        assert!(meta.is_file(), "a run is a file, not a directory");
        assert_eq!((meta.len(), meta.blocks()), (0, 0), "no data block to free");
        // Held: a sweep leaves it, and a second run of that name is refused.
        assert!(clean_stale(&runs, |_| {}).is_empty());
        let again = RunLock::create(&runs, "r1").err().unwrap().to_string();
        assert!(again.contains("r1") && again.contains("exists"), "{again}");
        run.remove().unwrap();
        drop(run);
        assert!(entries(&runs).is_empty());
    }

    #[test]
    fn the_sweep_removes_dead_runs_in_both_layouts_and_keeps_live_ones() {
        let d = tempfile::tempdir().unwrap();
        let runs = d.path().join("runs");
        let live = RunLock::create(&runs, "live").unwrap();
        // A helper that died: its file's lock is free.
        fs::write(runs.join("dead-file"), "").unwrap();
        // An older airlock's run directory whose helper died.
        fs::create_dir(runs.join("dead-dir")).unwrap();
        fs::write(runs.join("dead-dir").join("lock"), "").unwrap();
        // Not a run name: never touched.
        fs::write(runs.join(".other"), "").unwrap();
        let mut swept = Vec::new();
        let mut cleaned = clean_stale(&runs, |name| swept.push(name.to_string()));
        cleaned.sort();
        swept.sort();
        assert_eq!(cleaned, ["dead-dir", "dead-file"]);
        assert_eq!(swept, cleaned, "each dead run's cgroup is swept first");
        assert_eq!(entries(&runs), [".other", "live"]);
        drop(live);
    }
}
