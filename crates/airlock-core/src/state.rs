//! The state directory: where the audit log, pending approvals and grants live.
//!
//! `$AIRLOCK_STATE_DIR` if set; otherwise `$XDG_STATE_HOME/airlock`; otherwise
//! `/var/lib/airlock` for root; otherwise `~/.local/state/airlock`. Every directory
//! airlock creates in it is mode 0700, because the log holds commands and output.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot find a state directory: set AIRLOCK_STATE_DIR (no HOME, no XDG_STATE_HOME)")]
    NoLocation,
    #[error("state directory {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("state directory {path} is not a directory")]
    NotADirectory { path: PathBuf },
    #[error("state directory {path} is a symlink (to {target}); airlock never follows a link in its state directory, so that what it writes there cannot be redirected: set AIRLOCK_STATE_DIR to the real directory (or replace the link with a directory)")]
    Symlink { path: PathBuf, target: String },
}

/// Where the state directory is, from the environment (nothing is created).
pub fn resolve_state_dir() -> Result<PathBuf, StateError> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var("AIRLOCK_STATE_DIR") {
        return Ok(dir);
    }
    if let Some(dir) = var("XDG_STATE_HOME") {
        return Ok(dir.join("airlock"));
    }
    if rustix::process::geteuid().is_root() {
        return Ok(PathBuf::from("/var/lib/airlock"));
    }
    var("HOME")
        .map(|home| home.join(".local/state/airlock"))
        .ok_or(StateError::NoLocation)
}

/// Create `path` (and missing parents) with mode 0700. An existing directory keeps
/// its contents, but its mode is tightened to 0700 if it was looser.
pub fn ensure_private_dir(path: &Path) -> Result<(), StateError> {
    let io = |source| StateError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_symlink() {
            return Err(StateError::Symlink {
                path: path.to_path_buf(),
                target: std::fs::read_link(path)
                    .map(|t| t.display().to_string())
                    .unwrap_or_else(|_| "?".into()),
            });
        }
    }
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
    {
        Ok(()) => {}
        Err(e) => return Err(io(e)),
    }
    let meta = std::fs::symlink_metadata(path).map_err(io)?;
    if !meta.is_dir() {
        return Err(StateError::NotADirectory {
            path: path.to_path_buf(),
        });
    }
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    Ok(())
}

/// The forms a path is compared in: as written (made absolute, lexically) and
/// resolved (symlinks followed as far as it exists), so that a link on either
/// side does not hide that one tree lies inside the other.
fn forms(p: &Path) -> Vec<PathBuf> {
    let abs = airlock_policy::load::absolute_lexical(p);
    let mut out = vec![abs.clone()];
    if let Ok(real) = std::fs::canonicalize(&abs) {
        if real != abs {
            out.push(real);
        }
    }
    out
}

/// The host trees a policy shows a run, with what each is: its workspace
/// root, then its `filesystem.read` and `filesystem.write` paths.
pub fn shown_trees(
    policy: &airlock_policy::Policy,
) -> impl Iterator<Item = (&'static str, &PathBuf)> {
    std::iter::once(("workspace", &policy.workspace.root))
        .chain(
            policy
                .filesystem
                .read
                .iter()
                .map(|p| ("filesystem.read path", p)),
        )
        .chain(
            policy
                .filesystem
                .write
                .iter()
                .map(|p| ("filesystem.write path", p)),
        )
}

/// Refuses a tree the sandbox would show from the host (`what`: the
/// workspace, a `filesystem.read` or `filesystem.write` path) that is the
/// state directory or lies inside it. Airlock hides its state directory when
/// it lies inside such a tree; it cannot hide a tree from itself, so a
/// sandboxed command would see, and with a write path or an applied change
/// set rewrite, the audit log, pending approvals and grants (finding 1 of
/// the audit review).
pub fn refuse_tree_in_state_dir(state: &Path, what: &str, tree: &Path) -> Result<(), String> {
    let states = forms(state);
    for t in forms(tree) {
        if let Some(s) = states.iter().find(|s| t.starts_with(s)) {
            let place = if t == *s {
                "is airlock's state directory".to_string()
            } else {
                format!("lies inside airlock's state directory {}", s.display())
            };
            return Err(format!(
                "refused: the {what} {} {place} (AIRLOCK_STATE_DIR): a sandboxed command would \
                 see, and could rewrite, the audit log, approvals and grants kept there. Run \
                 airlock from a directory outside {} (or name another workspace.root), or set \
                 AIRLOCK_STATE_DIR to a directory outside every workspace",
                tree.display(),
                state.display()
            ));
        }
    }
    Ok(())
}

/// A short random id with a prefix (`ap-3f9c2a7d1e4b`): 48 bits from the kernel's
/// random source, so that ids are not guessable from one another.
pub fn random_id(prefix: &str) -> String {
    use std::io::Read;
    let mut bytes = [0u8; 6];
    let filled = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_ok();
    if !filled {
        // Fall back to time, pid and a counter: unique, if not unpredictable.
        let seed = format!(
            "{}-{}-{}",
            crate::clock::now_ms(),
            std::process::id(),
            next_counter()
        );
        let digest = <sha2::Sha256 as sha2::Digest>::digest(seed.as_bytes());
        bytes.copy_from_slice(&digest[..6]);
    }
    format!("{prefix}-{}", hex::encode(bytes))
}

fn next_counter() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// A unique, sortable request id: milliseconds since the epoch, pid and a counter.
pub fn new_request_id() -> String {
    format!(
        "r{:013x}-{:05x}-{:04x}",
        crate::clock::now_ms(),
        std::process::id(),
        next_counter()
    )
}

/// Write `bytes` to `path` atomically: a temporary file in the same directory,
/// fsync, rename over, fsync of the directory. Readers see the old or the new
/// content, never a mix; a crash leaves at worst a stray `.tmp` file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("state");
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        next_counter()
    ));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlinked_state_dir_is_refused_and_its_target_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = ensure_private_dir(&link).unwrap_err().to_string();
        assert!(e.contains("is a symlink (to "), "{e}");
        assert!(
            e.contains("set AIRLOCK_STATE_DIR to the real directory"),
            "{e}"
        );
        assert_eq!(
            std::fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o755
        );
        let dangling = tmp.path().join("dangling");
        std::os::unix::fs::symlink(tmp.path().join("nowhere"), &dangling).unwrap();
        assert!(ensure_private_dir(&dangling).is_err());
        assert!(!tmp.path().join("nowhere").exists());
    }

    #[test]
    fn private_dir_is_0700_even_if_it_existed_looser() {
        let tmp = tempfile::tempdir().unwrap();
        let fresh = tmp.path().join("a/b");
        ensure_private_dir(&fresh).unwrap();
        assert_eq!(
            std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777,
            0o700
        );
        let loose = tmp.path().join("loose");
        std::fs::create_dir(&loose).unwrap();
        std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&loose).unwrap();
        assert_eq!(
            std::fs::metadata(&loose).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }

    #[test]
    fn random_ids_differ() {
        let a = random_id("ap");
        let b = random_id("ap");
        assert_ne!(a, b);
        assert!(a.starts_with("ap-") && a.len() == 15, "{a}");
    }
}
