//! The prepared `/etc`: the sandbox's `/etc` files (copies of the allowed host
//! files, the symlinks, the files airlock writes, and empty mount points for
//! the directories that stay live binds) built once into a directory under the
//! state directory's cache and bound with one mount, instead of one bind per
//! entry ([`crate::view::split_etc`] says what goes in it).
//!
//! A prepared directory is named by the hash of everything it holds; for a
//! copied host file that is its identity and change times (device, inode,
//! size, mode, owner, mtime, ctime), so any change to a host file, in place or
//! by rename, and any change of policy (the git configuration it writes)
//! names another directory. Looking one up costs one `lstat` per copied file.
//!
//! Safety against other writers: the cache directories are created 0700 and
//! must belong to this user and be closed to others; a prepared directory is
//! built under a private temporary name, synced, and renamed into place, so a
//! directory under its final name is complete; it is opened without following
//! symlinks, checked on the open fd, and bound through that fd. A run holds a
//! shared `flock` on it while it is mounted; stale directories are removed only
//! by whoever takes the exclusive lock.

use crate::sys::{self, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};
use crate::view::EtcEntry;
use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Bumped when the layout of a prepared directory changes.
const FORMAT: &str = "airlock prepared etc v1";
/// A host file larger than this is not copied (the view keeps its binds).
const MAX_FILE: u64 = 8 << 20;
/// Prepared directories not built for this long are removed when a new one is
/// built (if no run holds them).
const STALE_AFTER: Duration = Duration::from_secs(3600);

/// A prepared directory in use: its fd carries the shared lock for the run;
/// `tree` is a detached read-only bind of it, made from the checked fd (a
/// detached tree can be attached in the sandbox's mount namespace, where the
/// host's mounts cannot be cloned from).
pub struct PreparedEtc {
    _dir: File,
    tree: OwnedFd,
    path: PathBuf,
}

impl PreparedEtc {
    /// Where it is on the host (for the view's record and error messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The detached read-only tree to attach at `/etc`.
    pub fn tree(&self) -> &OwnedFd {
        &self.tree
    }
}

/// The prepared directory for `entries` under `cache` (made if missing).
/// An error says why the view keeps its per-entry binds instead.
pub fn prepare(cache: &Path, entries: &[EtcEntry]) -> Result<PreparedEtc, String> {
    let (dir, name) = ensure(cache, entries)?;
    let fd_path = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
    let tree = sys::clone_tree(&fd_path, false).map_err(|e| format!("binding {name}: {e}"))?;
    sys::set_tree_attrs(
        &tree,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        None,
    )
    .map_err(|e| format!("binding {name} read-only: {e}"))?;
    Ok(PreparedEtc {
        _dir: dir,
        tree,
        path: cache.join(name),
    })
}

/// The prepared directory for `entries` (built if missing), opened, checked
/// and share-locked, with its name.
fn ensure(cache: &Path, entries: &[EtcEntry]) -> Result<(File, String), String> {
    let name = format!("etc-{}", fingerprint(entries)?);
    let root = private_dir(cache)?;
    if let Some(dir) = open_checked(&root, &name)? {
        return Ok((dir, name));
    }
    build(&root, &name, entries)?;
    remove_stale(&root, &name);
    let dir = open_checked(&root, &name)?
        .ok_or_else(|| format!("{name} vanished right after it was built"))?;
    Ok((dir, name))
}

/// The hash of what a prepared directory for `entries` holds.
fn fingerprint(entries: &[EtcEntry]) -> Result<String, String> {
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(FORMAT.as_bytes());
    for e in entries {
        match e {
            EtcEntry::Copy { rel, src } => {
                let m = copyable(src)?;
                field(b"copy");
                field(rel.as_os_str().as_encoded_bytes());
                for n in identity(&m) {
                    field(&n.to_le_bytes());
                }
            }
            EtcEntry::Symlink { rel, target } => {
                field(b"symlink");
                field(rel.as_os_str().as_encoded_bytes());
                field(target.as_os_str().as_encoded_bytes());
            }
            EtcEntry::File { rel, content } => {
                field(b"file");
                field(rel.as_os_str().as_encoded_bytes());
                field(content);
            }
            EtcEntry::MountPoint { rel, dir } => {
                field(if *dir { b"mount dir" } else { b"mount file" });
                field(rel.as_os_str().as_encoded_bytes());
            }
        }
    }
    Ok(hex::encode(&h.finalize()[..16]))
}

/// What identifies one version of a host file: any write, rename or
/// attribute change alters at least one of these.
fn identity(m: &std::fs::Metadata) -> [i64; 10] {
    [
        m.dev() as i64,
        m.ino() as i64,
        m.size() as i64,
        m.mode() as i64,
        m.uid() as i64,
        m.gid() as i64,
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
    ]
}

/// The metadata of `src` if it is a regular file small enough to copy.
fn copyable(src: &Path) -> Result<std::fs::Metadata, String> {
    let m = std::fs::symlink_metadata(src).map_err(|e| format!("{}: {e}", src.display()))?;
    if !m.is_file() {
        return Err(format!("{} is no longer a regular file", src.display()));
    }
    if m.size() > MAX_FILE {
        return Err(format!("{} is larger than {MAX_FILE} bytes", src.display()));
    }
    Ok(m)
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Whether `m` belongs to this user and nobody else may write to it.
fn ours(m: &std::fs::Metadata) -> bool {
    m.uid() == euid() && m.mode() & 0o022 == 0
}

/// Creates `dir` (0700, parents too) or checks that it is ours; returns it
/// opened, so that every later step works below the checked fd.
fn private_dir(dir: &Path) -> Result<File, String> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let f = open_dir(dir).map_err(|e| format!("opening {}: {e}", dir.display()))?;
    let m = f
        .metadata()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    if !ours(&m) {
        return Err(format!(
            "{} is not owned by uid {} and closed to others",
            dir.display(),
            euid()
        ));
    }
    Ok(f)
}

fn open_dir(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(path)
}

/// `name` below the opened directory `dir`, without a second lookup of `dir`.
fn below(dir: &File, name: &str) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}/{name}", dir.as_raw_fd()))
}

fn flock(f: &File, how: libc::c_int) -> bool {
    // SAFETY: flock on an fd this File owns.
    unsafe { libc::flock(f.as_raw_fd(), how) == 0 }
}

/// Opens the prepared directory `name` under `root` with a shared lock, if it
/// exists and is ours and still has that name once locked.
fn open_checked(root: &File, name: &str) -> Result<Option<File>, String> {
    let path = below(root, name);
    let dir = match open_dir(&path) {
        Ok(d) => d,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => return Err(format!("opening {name}: {e}")),
    };
    if !flock(&dir, libc::LOCK_SH) {
        return Err(format!(
            "locking {name}: {}",
            std::io::Error::last_os_error()
        ));
    }
    let m = dir.metadata().map_err(|e| format!("{name}: {e}"))?;
    if !ours(&m) {
        return Err(format!(
            "{name} is not owned by uid {} and closed to others",
            euid()
        ));
    }
    // Removed (renamed aside) between the open and the lock: build it anew.
    match std::fs::symlink_metadata(&path) {
        Ok(now) if now.ino() == m.ino() && now.dev() == m.dev() => Ok(Some(dir)),
        _ => Ok(None),
    }
}

/// Builds the directory for `entries` under a temporary name and renames it
/// to `name`. Losing the race to a concurrent builder is fine: theirs holds
/// the same thing.
fn build(root: &File, name: &str, entries: &[EtcEntry]) -> Result<(), String> {
    let nonce = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let tmp_name = format!("tmp-{}-{nonce}", std::process::id());
    let tmp = below(root, &tmp_name);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&tmp)
        .map_err(|e| format!("creating {tmp_name}: {e}"))?;
    let filled = fill(&tmp, entries).and_then(|()| {
        std::fs::set_permissions(&tmp, PermissionsExt::from_mode(0o755))
            .map_err(|e| format!("{tmp_name}: {e}"))?;
        sync_dir(&tmp)
    });
    let renamed = filled.and_then(|()| match std::fs::rename(&tmp, below(root, name)) {
        Ok(()) => sync_dir(&below(root, ".")),
        Err(e)
            if e.raw_os_error() == Some(libc::EEXIST)
                || e.raw_os_error() == Some(libc::ENOTEMPTY) =>
        {
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(())
        }
        Err(e) => Err(format!("renaming {tmp_name} to {name}: {e}")),
    });
    if renamed.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    renamed
}

fn sync_dir(path: &Path) -> Result<(), String> {
    open_dir(path)
        .and_then(|d| d.sync_all())
        .map_err(|e| format!("syncing {}: {e}", path.display()))
}

/// Writes every entry into the new directory `dir` (nobody else can reach it:
/// it is 0700 inside a 0700 cache). Modes are set explicitly, whatever the
/// umask: directories 0755 and written files 0644, as the per-entry view made
/// its mount points and files.
fn fill(dir: &Path, entries: &[EtcEntry]) -> Result<(), String> {
    for e in entries {
        let rel = match e {
            EtcEntry::Copy { rel, .. }
            | EtcEntry::Symlink { rel, .. }
            | EtcEntry::File { rel, .. }
            | EtcEntry::MountPoint { rel, .. } => rel,
        };
        let err = |what: &str, e: std::io::Error| format!("{what} {}: {e}", rel.display());
        let mut parents: Vec<&Path> = rel
            .ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty())
            .collect();
        parents.reverse();
        for p in parents {
            let at = dir.join(p);
            if std::fs::symlink_metadata(&at).is_err() {
                make_dir(&at).map_err(|e| err("creating", e))?;
            }
        }
        let at = dir.join(rel);
        match e {
            EtcEntry::Copy { src, .. } => copy_file(src, &at)?,
            EtcEntry::Symlink { target, .. } => {
                std::os::unix::fs::symlink(target, &at).map_err(|e| err("symlink", e))?
            }
            EtcEntry::File { content, .. } => {
                write_new(&at, 0o644, content)
                    .and_then(|f| f.sync_all())
                    .map_err(|e| err("writing", e))?;
            }
            EtcEntry::MountPoint { dir: true, .. } => {
                make_dir(&at).map_err(|e| err("creating", e))?
            }
            EtcEntry::MountPoint { dir: false, .. } => {
                write_new(&at, 0o644, b"")
                    .and_then(|f| f.sync_all())
                    .map_err(|e| err("creating", e))?;
            }
        }
    }
    Ok(())
}

fn make_dir(at: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new().mode(0o755).create(at)?;
    std::fs::set_permissions(at, PermissionsExt::from_mode(0o755))
}

/// Creates `at` with exactly `mode` and `content`; returns it open (unsynced).
fn write_new(at: &Path, mode: u32, content: &[u8]) -> std::io::Result<File> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(at)?;
    f.write_all(content)?;
    f.set_permissions(PermissionsExt::from_mode(mode))?;
    Ok(f)
}

/// Copies host file `src` with its permission bits (never set-id), owner and
/// times, so that it looks as the bind showed it. Refused if it changes while
/// it is read (the name would not match what it holds).
fn copy_file(src: &Path, at: &Path) -> Result<(), String> {
    let err = |e: std::io::Error| format!("copying {}: {e}", src.display());
    let before = copyable(src)?;
    let mut from = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(src)
        .map_err(err)?;
    let mut bytes = Vec::with_capacity(before.size() as usize);
    (&mut from)
        .take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(err)?;
    let after = from.metadata().map_err(err)?;
    if identity(&before) != identity(&after) || bytes.len() as u64 != after.size() {
        return Err(format!("{} changed while it was copied", src.display()));
    }
    let to = write_new(at, before.mode() & 0o777, &bytes).map_err(err)?;
    std::os::unix::fs::fchown(&to, Some(before.uid()), Some(before.gid())).map_err(err)?;
    let times = std::fs::FileTimes::new()
        .set_accessed(after.accessed().map_err(err)?)
        .set_modified(after.modified().map_err(err)?);
    to.set_times(times).map_err(err)?;
    to.sync_all().map_err(err)
}

/// Removes other prepared directories built more than [`STALE_AFTER`] ago that
/// no run holds, and temporary ones left by a builder that died.
fn remove_stale(root: &File, keep: &str) {
    let Ok(list) = std::fs::read_dir(below(root, ".")) else {
        return;
    };
    for entry in list.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == keep || !(name.starts_with("etc-") || name.starts_with("tmp-")) {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_AFTER);
        if !old {
            continue;
        }
        let path = below(root, &name);
        let Ok(dir) = open_dir(&path) else { continue };
        if flock(&dir, libc::LOCK_EX | libc::LOCK_NB) {
            let aside = below(root, &format!("tmp-gc-{name}"));
            if std::fs::rename(&path, &aside).is_ok() {
                let _ = std::fs::remove_dir_all(&aside);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn entries(host: &Path) -> Vec<EtcEntry> {
        vec![
            EtcEntry::Copy {
                rel: "nsswitch.conf".into(),
                src: host.join("nsswitch.conf"),
            },
            EtcEntry::Symlink {
                rel: "localtime".into(),
                target: "/usr/share/zoneinfo/UTC".into(),
            },
            EtcEntry::File {
                rel: "airlock/gitconfig".into(),
                content: b"[user]\n".to_vec(),
            },
            EtcEntry::MountPoint {
                rel: "ssl".into(),
                dir: true,
            },
        ]
    }

    #[test]
    fn built_once_reused_and_renamed_when_a_host_file_changes() {
        let t = tempfile::tempdir().unwrap();
        let host = t.path().join("host");
        std::fs::create_dir(&host).unwrap();
        let src = host.join("nsswitch.conf");
        std::fs::write(&src, "hosts: files\n").unwrap();
        std::fs::set_permissions(&src, PermissionsExt::from_mode(0o640)).unwrap();
        let cache = t.path().join("cache/etc");
        let (_, first) = ensure(&cache, &entries(&host)).unwrap();
        let dir = cache.join(&first);
        assert_eq!(
            std::fs::read(dir.join("nsswitch.conf")).unwrap(),
            b"hosts: files\n"
        );
        let copied = std::fs::metadata(dir.join("nsswitch.conf")).unwrap();
        let original = std::fs::metadata(&src).unwrap();
        assert_eq!(copied.mode() & 0o7777, 0o640);
        assert_eq!(copied.mtime(), original.mtime());
        assert_eq!(
            std::fs::read_link(dir.join("localtime")).unwrap(),
            Path::new("/usr/share/zoneinfo/UTC")
        );
        assert_eq!(
            std::fs::read(dir.join("airlock/gitconfig")).unwrap(),
            b"[user]\n"
        );
        assert_eq!(
            std::fs::metadata(dir.join("airlock")).unwrap().mode() & 0o777,
            0o755
        );
        assert!(dir.join("ssl").is_dir());
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o755);
        // Same inputs: the same directory, nothing rebuilt.
        let (_, again) = ensure(&cache, &entries(&host)).unwrap();
        assert_eq!(again, first);
        // The host file changes in place: another directory, with the new content.
        std::fs::write(&src, "hosts: files dns\n").unwrap();
        let (_, changed) = ensure(&cache, &entries(&host)).unwrap();
        assert_ne!(changed, first);
        assert_eq!(
            std::fs::read(cache.join(&changed).join("nsswitch.conf")).unwrap(),
            b"hosts: files dns\n"
        );
        // Different written content (another policy's git configuration): another one too.
        let mut other = entries(&host);
        other[2] = EtcEntry::File {
            rel: "airlock/gitconfig".into(),
            content: b"[core]\n".to_vec(),
        };
        assert_ne!(ensure(&cache, &other).unwrap().1, changed);
        // No temporary directory is left behind.
        let names: Vec<String> = std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| n.starts_with("etc-")), "{names:?}");
    }

    #[test]
    fn a_cache_others_can_write_to_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let host = t.path().join("host");
        std::fs::create_dir(&host).unwrap();
        std::fs::write(host.join("nsswitch.conf"), "x").unwrap();
        let cache = t.path().join("cache");
        std::fs::create_dir(&cache).unwrap();
        std::fs::set_permissions(&cache, PermissionsExt::from_mode(0o777)).unwrap();
        let e = ensure(&cache, &entries(&host)).unwrap_err();
        assert!(e.contains("closed to others"), "{e}");
        // A planted prepared directory that others could write to is refused too.
        std::fs::set_permissions(&cache, PermissionsExt::from_mode(0o700)).unwrap();
        let name = format!("etc-{}", fingerprint(&entries(&host)).unwrap());
        std::fs::create_dir(cache.join(&name)).unwrap();
        std::fs::set_permissions(cache.join(&name), PermissionsExt::from_mode(0o777)).unwrap();
        let e = ensure(&cache, &entries(&host)).unwrap_err();
        assert!(e.contains("closed to others"), "{e}");
    }
}
