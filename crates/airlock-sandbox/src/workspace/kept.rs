//! Kept change sets: a run's change set that was not applied (it needed a
//! person, was over a limit, or no apply was asked), kept in the state
//! directory so that a person can review it and apply it later without running
//! the command again (`airlock changes RUN_ID`, `airlock apply RUN_ID`).
//!
//! Layout of one kept set (`<state>/kept/<run id>/`): `upper/` holds the added
//! and modified entries at their workspace-relative paths (deletions live only
//! in the manifest); `manifest.json` lists every change with a hash of each
//! file's content and is written last, so that a directory without it is an
//! unfinished copy. A later apply reads the manifest, checks that `upper/`
//! still holds exactly what it lists and that the host entries are as they
//! were at the run, and hands the list to the same [`workspace::settle`] a run
//! uses: one return path, not a copy of it.

use super::{self as workspace, Approved, Budget, Change, Finished, HostStamp};
use crate::{ChangeKind, Limits, WorkspaceSpec};
use airlock_policy::changes::{escape_path, Classification, Disposition, EntryType};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The manifest's file name in a kept set's directory.
pub const MANIFEST: &str = "manifest.json";
/// The directory holding the added and modified entries.
pub const UPPER: &str = "upper";
/// `created_ms bytes`, for pruning.
pub const STAMP: &str = "stamp";
const VERSION: u32 = 1;

/// What a kept set holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    /// The workspace root the run changed (hex of its bytes: lossless).
    pub root: String,
    pub created_ms: u64,
    /// Bytes of file data kept under `upper/`.
    pub bytes: u64,
    /// The hash a person's approval binds to (see [`set_sha256`]).
    pub set_sha256: String,
    pub entries: Vec<KeptEntry>,
}

/// One change of a kept set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeptEntry {
    /// Relative path, hex of its bytes.
    pub rel: String,
    pub kind: ChangeKind,
    pub file_type: EntryType,
    pub size: u64,
    pub data: u64,
    pub mode: u32,
    pub host_mode: Option<u32>,
    /// A symlink's target, hex of its bytes.
    pub target: Option<String>,
    pub host_stamp: Option<HostStamp>,
    /// A file's content hash ([`content_sha256`]).
    pub sha256: Option<String>,
}

impl KeptEntry {
    fn rel(&self) -> Result<PathBuf, String> {
        unhex(&self.rel).map(|b| PathBuf::from(OsStr::from_bytes(&b)))
    }

    fn change(&self) -> Result<Change, String> {
        Ok(Change {
            rel: self.rel()?,
            kind: self.kind,
            file_type: self.file_type,
            size: self.size,
            data: self.data,
            mode: self.mode,
            host_mode: self.host_mode,
            target: match &self.target {
                Some(t) => Some(PathBuf::from(OsStr::from_bytes(&unhex(t)?))),
                None => None,
            },
            host_stamp: self.host_stamp,
        })
    }
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    hex::decode(s).map_err(|e| format!("the manifest holds a bad path ({e})"))
}

/// The hash an approval of a kept set binds to: every change's kind, type,
/// mode, path, link target and content hash, in order. The dispositions are
/// left out: they follow from the policy, which the approval binds separately.
pub fn set_sha256(entries: &[KeptEntry]) -> String {
    let mut h = Sha256::new();
    for e in entries {
        h.update(
            format!(
                "{:?} {} {:o} {} {} {}\n",
                e.kind,
                e.file_type.as_str(),
                e.mode,
                e.rel,
                e.target.as_deref().unwrap_or("-"),
                e.sha256.as_deref().unwrap_or("-"),
            )
            .as_bytes(),
        );
    }
    hex::encode(h.finalize())
}

const BLOCK: u64 = 64 * 1024;

/// A hash of a file's content that does not depend on where its holes are:
/// the 64 KiB-aligned blocks inside data segments that hold a non-zero byte,
/// each with its offset, then the size. A sparse file is hashed at the cost of
/// its data, not of its size.
pub fn content_sha256(f: &fs::File, size: u64) -> io::Result<String> {
    use std::os::unix::fs::FileExt;
    let fd = f.as_raw_fd();
    let end = i64::try_from(size).map_err(|_| io::Error::other("file too large"))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; BLOCK as usize];
    let mut next: u64 = 0; // first block not hashed yet
    let mut off: i64 = 0;
    while off < end {
        // SAFETY: lseek on an fd we own; it only moves the file offset.
        let data = unsafe { libc::lseek(fd, off, libc::SEEK_DATA) };
        let data = if data < 0 {
            match crate::sys::last_errno() {
                libc::ENXIO => break,
                _ => off,
            }
        } else {
            data
        };
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(fd, data, libc::SEEK_HOLE) };
        let hole = if hole < 0 { end } else { hole.min(end) };
        let mut block = (data as u64 / BLOCK * BLOCK).max(next);
        while block < hole as u64 {
            let want = BLOCK.min(size - block) as usize;
            let mut got = 0;
            while got < want {
                let n = f.read_at(&mut buf[got..want], block + got as u64)?;
                if n == 0 {
                    break;
                }
                got += n;
            }
            if buf[..got].iter().any(|b| *b != 0) {
                h.update(block.to_le_bytes());
                h.update(&buf[..got]);
            }
            block += BLOCK;
        }
        next = block;
        off = hole.max(data + 1);
    }
    h.update(size.to_le_bytes());
    Ok(hex::encode(h.finalize()))
}

fn private_dir(p: &Path, recursive: bool) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(recursive)
        .mode(0o700)
        .create(p)
}

/// Keeps the not-discarded changes of `judged` (read from `upper`) in `dir`,
/// which must not exist yet.
pub fn save(
    dir: &Path,
    root: &Path,
    judged: &[(Change, Classification)],
    upper: &Path,
) -> io::Result<()> {
    if let Some(parent) = dir.parent() {
        private_dir(parent, true)?;
    }
    private_dir(dir, false)?;
    let result = save_into(dir, root, judged, upper);
    if result.is_err() {
        let _ = remove(dir);
    }
    result
}

fn save_into(
    dir: &Path,
    root: &Path,
    judged: &[(Change, Classification)],
    upper: &Path,
) -> io::Result<()> {
    let kup = dir.join(UPPER);
    private_dir(&kup, false)?;
    let mut entries = Vec::new();
    let mut dirs = Vec::new();
    let mut bytes = 0u64;
    for (c, class) in judged {
        if class.disposition == Disposition::Discard {
            continue;
        }
        let mut sha = None;
        if c.kind != ChangeKind::Deleted {
            let src = upper.join(&c.rel);
            let dst = kup.join(&c.rel);
            if let Some(p) = dst.parent() {
                private_dir(p, true)?;
            }
            match c.file_type {
                EntryType::Dir => {
                    private_dir(&dst, true)?;
                    dirs.push((dst, c.mode & 0o777));
                }
                EntryType::Symlink => {
                    let target = fs::read_link(&src)?;
                    if Some(&target) != c.target.as_ref() {
                        return Err(io::Error::other(format!(
                            "{}: symlink target changed since the scan",
                            escape_path(&c.rel)
                        )));
                    }
                    std::os::unix::fs::symlink(&target, &dst)?;
                }
                EntryType::File => {
                    let input = fs::OpenOptions::new()
                        .read(true)
                        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                        .open(&src)?;
                    let m = input.metadata()?;
                    if !m.is_file() {
                        return Err(io::Error::other(format!(
                            "{}: changed type since the scan",
                            escape_path(&c.rel)
                        )));
                    }
                    let out = fs::OpenOptions::new()
                        .write(true)
                        .read(true)
                        .create_new(true)
                        .mode(0o600)
                        .custom_flags(libc::O_NOFOLLOW)
                        .open(&dst)?;
                    let mut budget = Budget {
                        left: u64::MAX,
                        written: 0,
                        dense: false,
                    };
                    if m.len() > 0 {
                        workspace::copy_sparse(&input, &out, m.len(), &mut budget)?;
                    }
                    bytes += budget.written;
                    sha = Some(content_sha256(&out, m.len())?);
                    // The apply takes no more than the kept copy's bits, so it
                    // keeps the run's (set-id bits go: the apply strips them
                    // anyway); the owner can always read it back.
                    out.set_permissions(fs::Permissions::from_mode((c.mode & 0o777) | 0o600))?;
                }
                // Special files are denied; the manifest lists them for the report.
                _ => {}
            }
        }
        entries.push(KeptEntry {
            rel: hex::encode(c.rel.as_os_str().as_bytes()),
            kind: c.kind,
            file_type: c.file_type,
            size: c.size,
            data: c.data,
            mode: c.mode,
            host_mode: c.host_mode,
            target: c
                .target
                .as_ref()
                .map(|t| hex::encode(t.as_os_str().as_bytes())),
            host_stamp: c.host_stamp,
            sha256: sha,
        });
    }
    // Directory modes last, deepest first (a 0555 directory would refuse its children).
    for (d, mode) in dirs.iter().rev() {
        fs::set_permissions(d, fs::Permissions::from_mode(mode | 0o700))?;
    }
    let manifest = Manifest {
        version: VERSION,
        root: hex::encode(root.as_os_str().as_bytes()),
        created_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
        bytes,
        set_sha256: set_sha256(&entries),
        entries,
    };
    // A few bytes that pruning reads instead of a manifest that may list 100k entries.
    fs::write(
        dir.join(STAMP),
        format!("{} {}\n", manifest.created_ms, manifest.bytes),
    )?;
    let tmp = dir.join(".manifest.tmp");
    fs::write(
        &tmp,
        serde_json::to_vec(&manifest).map_err(io::Error::other)?,
    )?;
    fs::rename(&tmp, dir.join(MANIFEST))
}

/// Reads a kept set's manifest.
pub fn manifest(dir: &Path) -> Result<Manifest, String> {
    let text = fs::read(dir.join(MANIFEST)).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => "no kept change set by that run id (it was applied, discarded, expired, or the run kept nothing)".to_string(),
        _ => format!("cannot read {}: {e}", dir.join(MANIFEST).display()),
    })?;
    let m: Manifest = serde_json::from_slice(&text)
        .map_err(|e| format!("the kept change set's manifest is damaged ({e})"))?;
    if m.version != VERSION {
        return Err(format!(
            "the kept change set has manifest version {}, this airlock reads {VERSION}",
            m.version
        ));
    }
    Ok(m)
}

/// Loads a kept set for the workspace `root` and checks it: the manifest
/// still hashes to its set hash, `upper/` holds exactly the content it lists,
/// and every host entry a change replaces, removes or creates is as it was at
/// the run. Any mismatch refuses the whole set, naming the first one.
pub fn load(dir: &Path, root: &Path) -> Result<(Manifest, Vec<Change>), String> {
    let m = manifest(dir)?;
    let kept_root = PathBuf::from(OsStr::from_bytes(&unhex(&m.root)?));
    if kept_root != root {
        return Err(format!(
            "the run changed the workspace {}, but the policy's workspace is {}; run this from that workspace's policy",
            escape_path(&kept_root),
            escape_path(root)
        ));
    }
    if set_sha256(&m.entries) != m.set_sha256 {
        return Err("the kept change set's manifest does not match its own hash; it was altered after the run, rerun the command".into());
    }
    let kup = dir.join(UPPER);
    let mut out = Vec::with_capacity(m.entries.len());
    for e in &m.entries {
        let c = e.change()?;
        let shown = escape_path(&c.rel);
        let mismatch = |what: &str| {
            format!("the kept copy of `{shown}` {what} since the run; it no longer matches the reviewed change set, rerun the command")
        };
        if c.kind != ChangeKind::Deleted {
            let p = kup.join(&c.rel);
            match c.file_type {
                EntryType::File => {
                    let f = fs::OpenOptions::new()
                        .read(true)
                        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                        .open(&p)
                        .map_err(|_| mismatch("is gone"))?;
                    let fm = f.metadata().map_err(|_| mismatch("is gone"))?;
                    if !fm.is_file() || fm.len() != c.size {
                        return Err(mismatch("changed"));
                    }
                    let sha =
                        content_sha256(&f, fm.len()).map_err(|_| mismatch("is unreadable"))?;
                    if Some(&sha) != e.sha256.as_ref() {
                        return Err(mismatch("changed"));
                    }
                }
                EntryType::Symlink if fs::read_link(&p).ok() != c.target => {
                    return Err(mismatch("changed"));
                }
                EntryType::Dir if !fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) => {
                    return Err(mismatch("changed"));
                }
                _ => {}
            }
        }
        // The host side: an apply later must not overwrite what the user did since.
        let now = fs::symlink_metadata(root.join(&c.rel)).ok();
        let host_moved = match (&c.kind, &c.host_stamp, &now) {
            (ChangeKind::Added, _, None) => false,
            (ChangeKind::Added, _, Some(_)) => true,
            (_, Some(was), Some(now)) => *was != HostStamp::of(now),
            (_, _, _) => true,
        };
        if host_moved {
            return Err(format!(
                "`{shown}` changed in the host workspace since the run, so the kept change set no longer applies as reviewed; rerun the command"
            ));
        }
        out.push(c);
    }
    Ok((m, out))
}

/// The report of a kept set against the workspace policy `ws`: what an apply
/// would do now (nothing is written).
pub fn report(
    dir: &Path,
    ws: &WorkspaceSpec,
    limits: &Limits,
) -> Result<(Finished, Manifest), String> {
    let (m, changes) = load(dir, &ws.root)?;
    let (mut f, _) = workspace::settle(changes, &dir.join(UPPER), ws, limits, false, Approved::No);
    f.summary.kept = true;
    Ok((f, m))
}

/// Applies a kept set through the run's own return path. `approved`: the set
/// hash a person approved (held changes apply only if it is this set's).
/// A set that was applied is removed; one that was not stays kept.
pub fn apply(
    dir: &Path,
    ws: &WorkspaceSpec,
    limits: &Limits,
    approved: Option<&str>,
) -> Result<(Finished, Manifest), String> {
    let (m, changes) = load(dir, &ws.root)?;
    let approval = match approved {
        Some(a) => Approved::Set {
            approved: a,
            current: &m.set_sha256,
        },
        None => Approved::No,
    };
    let (mut f, _) = workspace::settle(changes, &dir.join(UPPER), ws, limits, true, approval);
    f.summary.kept = !f.applied;
    if f.applied {
        let _ = remove(dir);
    }
    Ok((f, m))
}

/// Removes a kept set (its directories may have lost their write bit).
pub fn remove(dir: &Path) -> io::Result<()> {
    fn open_up(p: &Path) {
        if let Ok(m) = fs::symlink_metadata(p) {
            if m.is_dir() {
                let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o700));
                if let Ok(rd) = fs::read_dir(p) {
                    for e in rd.flatten() {
                        open_up(&e.path());
                    }
                }
            }
        }
    }
    open_up(dir);
    fs::remove_dir_all(dir)
}

/// When a finished kept set was made and the bytes it holds (`None`: it is
/// unfinished, or not a kept set).
pub fn stamp(dir: &Path) -> Option<(u64, u64)> {
    if !dir.join(MANIFEST).exists() {
        return None;
    }
    let text = fs::read_to_string(dir.join(STAMP)).ok()?;
    let mut it = text.split_whitespace().map(|w| w.parse::<u64>().ok());
    Some((it.next()??, it.next()??))
}
