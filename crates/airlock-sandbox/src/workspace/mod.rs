//! Workspace layer, after the run: the change report of an overlay run (read
//! from the per-run upper layer) and the copy back (`apply`). Shared by every
//! backend whose workspace is an overlay staged on the host (native, oci,
//! gvisor, docker, microvm) and by wasm's scratch copy: one return path, one
//! set of rules, whichever backend ran the command.
//!
//! Apply never follows a symlink: every directory on the way is opened with
//! `O_NOFOLLOW` from an fd on the workspace root, files are written to a
//! temporary name in their final directory and renamed into place, and a
//! protected path is never written (the attempt is reported as a violation).
//! A change set that was not applied can be kept ([`kept`]) and applied
//! later through the same [`settle`].

pub mod kept;

use crate::sys::{self, walk};
use crate::{ChangeKind, ChangeSummary, FileChange, Limits, Violation, WorkspaceSpec};
use airlock_policy::changes::{
    escape_path, ChangeKind as PolicyKind, Classification, Context, Disposition, Entry, EntryType,
    Rules,
};
use sha2::{Digest, Sha256};
use std::ffi::CString;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// One change with what apply needs.
#[derive(Debug, Clone)]
pub struct Change {
    /// Relative to the workspace root.
    pub rel: PathBuf,
    pub kind: ChangeKind,
    pub file_type: EntryType,
    pub size: u64,
    /// Bytes of data an apply writes (allocated blocks, capped at the size:
    /// a sparse file's holes cost nothing).
    pub data: u64,
    /// Permission bits (with set-id and sticky) of the new entry, or of the deleted one.
    pub mode: u32,
    /// Permission bits of the host entry, when there is one.
    pub host_mode: Option<u32>,
    /// A symlink's target.
    pub target: Option<PathBuf>,
    /// What the host entry looked like at the scan (size, mtime s, mtime ns),
    /// when there is one: a later apply refuses if the host entry moved on.
    pub host_stamp: Option<HostStamp>,
}

/// The host entry a change replaces, as seen at the scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HostStamp {
    pub file_type: EntryType,
    pub size: u64,
    pub mtime: i64,
    pub mtime_ns: i64,
}

impl HostStamp {
    pub fn of(m: &fs::Metadata) -> HostStamp {
        HostStamp {
            file_type: EntryType::from_mode(m.mode()),
            // A directory's size says nothing about its content.
            size: if m.is_dir() { 0 } else { m.len() },
            mtime: if m.is_dir() { 0 } else { m.mtime() },
            mtime_ns: if m.is_dir() { 0 } else { m.mtime_nsec() },
        }
    }
}

impl Change {
    fn from_meta(
        rel: PathBuf,
        kind: ChangeKind,
        m: &fs::Metadata,
        host: Option<&fs::Metadata>,
        path: &Path,
    ) -> Change {
        let file_type = EntryType::from_mode(m.mode());
        let is_dir = file_type == EntryType::Dir;
        let target = (file_type == EntryType::Symlink && kind != ChangeKind::Deleted)
            .then(|| fs::read_link(path).ok())
            .flatten();
        Change {
            rel,
            kind,
            file_type,
            size: if is_dir { 0 } else { m.len() },
            data: if file_type == EntryType::File && kind != ChangeKind::Deleted {
                (m.blocks() * 512).min(m.len())
            } else {
                0
            },
            mode: m.mode() & 0o7777,
            host_mode: host.map(|h| h.mode() & 0o7777),
            target,
            host_stamp: host.map(HostStamp::of),
        }
    }

    fn deleted(rel: PathBuf, host: &fs::Metadata) -> Change {
        Change {
            rel,
            kind: ChangeKind::Deleted,
            file_type: EntryType::from_mode(host.mode()),
            size: if host.is_dir() { 0 } else { host.len() },
            data: 0,
            mode: host.mode() & 0o7777,
            host_mode: Some(host.mode() & 0o7777),
            target: None,
            host_stamp: Some(HostStamp::of(host)),
        }
    }

    /// The classifier's view of this change.
    pub fn entry(&self) -> Entry<'_> {
        Entry {
            rel: &self.rel,
            kind: match self.kind {
                ChangeKind::Added => PolicyKind::Added,
                ChangeKind::Modified => PolicyKind::Modified,
                ChangeKind::Deleted => PolicyKind::Deleted,
            },
            file_type: self.file_type,
            mode: self.mode,
            host_mode: self.host_mode,
            host_type: self.host_stamp.map(|s| s.file_type),
            symlink_target: self.target.as_deref(),
        }
    }

    /// The public form, with what the change-set policy said.
    pub fn public(&self, root: &Path, class: Option<&Classification>) -> FileChange {
        let mode = class
            .and_then(|c| c.mode)
            .or(
                (self.kind != ChangeKind::Deleted && self.file_type != EntryType::Symlink)
                    .then_some(self.mode),
            );
        FileChange {
            path: escape_path(&root.join(&self.rel)),
            kind: self.kind,
            file_type: self.file_type,
            size: self.size,
            mode: mode.map(|m| format!("{m:04o}")),
            target: self.target.as_deref().map(escape_path),
            replaces: self
                .host_stamp
                .map(|s| s.file_type)
                .filter(|t| self.kind != ChangeKind::Deleted && *t != self.file_type),
            disposition: class.map(|c| c.disposition),
            reason: class
                .filter(|c| !c.reason.is_empty())
                .map(|c| c.reason.clone()),
        }
    }

    /// One line of the digest of the full list.
    pub(crate) fn digest_line(&self, d: Disposition) -> String {
        let mut line = format!(
            "{:?} {} {} {:04o} {}",
            self.kind,
            d.as_str(),
            self.file_type.as_str(),
            self.mode,
            escape_path(&self.rel)
        );
        if let Some(t) = &self.target {
            line.push_str(" -> ");
            line.push_str(&escape_path(t));
        }
        line.push('\n');
        line
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
    if EntryType::from_mode(ma.mode()) != EntryType::from_mode(mb.mode())
        || ma.mode() & 0o7777 != mb.mode() & 0o7777
    {
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
pub fn changes(upper: &Path, lower: &Path) -> Scanned {
    let mut out = Scanned::default();
    scan(upper, lower, Path::new(""), &mut out);
    out
}

/// What [`changes`] read, and where it could not read on (a path longer than
/// the kernel's `PATH_MAX`, an entry gone in between): a set with such a hole
/// is never applied, since what lies in the hole is unknown.
#[derive(Debug, Default)]
pub struct Scanned {
    pub changes: Vec<Change>,
    pub unread: Vec<(PathBuf, io::Error)>,
}

fn scan(upper: &Path, lower: &Path, rel: &Path, out: &mut Scanned) {
    let udir = upper.join(rel);
    let ldir = lower.join(rel);
    if !rel.as_os_str().is_empty() && is_opaque(&udir) {
        // The directory was replaced: whatever the lower one held is gone.
        match fs::read_dir(&ldir) {
            Ok(entries) => {
                for e in entries.flatten() {
                    if fs::symlink_metadata(udir.join(e.file_name())).is_err() {
                        if let Ok(m) = e.path().symlink_metadata() {
                            out.changes
                                .push(Change::deleted(rel.join(e.file_name()), &m));
                        }
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => out.unread.push((rel.to_path_buf(), e)),
        }
    }
    let entries = match fs::read_dir(&udir) {
        Ok(entries) => entries,
        Err(e) => {
            out.unread.push((rel.to_path_buf(), e));
            return;
        }
    };
    let mut names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        let r = rel.join(&name);
        let up = upper.join(&r);
        let lo = lower.join(&r);
        let um = match fs::symlink_metadata(&up) {
            Ok(m) => m,
            Err(e) => {
                out.unread.push((r, e));
                continue;
            }
        };
        let lm = fs::symlink_metadata(&lo).ok();
        if is_whiteout(&um) {
            if let Some(lm) = lm {
                out.changes.push(Change::deleted(r, &lm));
            }
            continue;
        }
        match lm {
            None => added(upper, r, &um, out),
            Some(lm) if um.is_dir() && lm.is_dir() => scan(upper, lower, &r, out),
            Some(lm) => {
                if um.is_dir() {
                    out.changes.push(Change::from_meta(
                        r.clone(),
                        ChangeKind::Modified,
                        &um,
                        Some(&lm),
                        &up,
                    ));
                    added_tree(upper, &r, out);
                } else if !same_content(&up, &lo, &um, &lm) {
                    out.changes.push(Change::from_meta(
                        r,
                        ChangeKind::Modified,
                        &um,
                        Some(&lm),
                        &up,
                    ));
                }
            }
        }
    }
}

fn added_tree(upper: &Path, rel: &Path, out: &mut Scanned) {
    let entries = match fs::read_dir(upper.join(rel)) {
        Ok(entries) => entries,
        Err(e) => {
            out.unread.push((rel.to_path_buf(), e));
            return;
        }
    };
    let mut names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        let r = rel.join(&name);
        let m = match fs::symlink_metadata(upper.join(&r)) {
            Ok(m) => m,
            Err(e) => {
                out.unread.push((r, e));
                continue;
            }
        };
        if is_whiteout(&m) {
            continue;
        }
        added(upper, r, &m, out);
    }
}

/// `rel` is new in the upper layer: it, and everything below it if a directory.
fn added(upper: &Path, rel: PathBuf, m: &fs::Metadata, out: &mut Scanned) {
    let is_dir = m.is_dir();
    let path = upper.join(&rel);
    out.changes.push(Change::from_meta(
        rel.clone(),
        ChangeKind::Added,
        m,
        None,
        &path,
    ));
    if is_dir {
        added_tree(upper, &rel, out);
    }
}

/// Entries of a change list kept in the report; the rest is counted and hashed.
pub const LISTED: usize = 1000;

/// Entries of a change list an audit record lists; a longer set's full list
/// goes to [`WorkspaceSpec::list`].
pub const AUDIT_LISTED: usize = 100;
/// Refusals listed one by one; the rest end in "… and N more".
pub const REFUSALS_LISTED: usize = 20;

/// The size of a run's upper layer for these limits (three quarters of memory).
pub fn overlay_bytes(limits: &Limits) -> u64 {
    (limits.memory_bytes / 4 * 3).max(1 << 20)
}

/// The inode cap of a run's upper layer for these limits.
pub fn overlay_files(limits: &Limits) -> u64 {
    (limits.memory_bytes / 4096).max(1024)
}

/// What the return path did with one run's changes.
#[derive(Debug, Default)]
pub struct Finished {
    /// The first [`LISTED`] changes (discarded ones left out), with their dispositions.
    pub changes: Vec<FileChange>,
    pub summary: ChangeSummary,
    pub applied: bool,
    pub violations: Vec<Violation>,
}

/// Debug builds only: with this variable set to `1` (passed from the caller to
/// the helper), every change is allowed, modes are kept, files are copied
/// densely under the old long temporary names and the report lists every
/// change with lossy names: the return path as it was before issue 11, so that the escape
/// corpus can show its return-path cases failing (`run.py --return-path-off`).
/// Release builds have no such switch.
#[cfg(debug_assertions)]
pub const RETURN_PATH_OFF: &str = "AIRLOCK_TEST_RETURN_PATH_OFF";

fn return_path_off() -> bool {
    #[cfg(debug_assertions)]
    {
        std::env::var_os(RETURN_PATH_OFF).is_some_and(|v| v == "1")
    }
    #[cfg(not(debug_assertions))]
    {
        false
    }
}

/// The change-set rules of a workspace spec, for a set that changes the
/// paths `changed` (relative to the root).
pub fn rules<'a>(ws: &WorkspaceSpec, changed: impl IntoIterator<Item = &'a Path>) -> Rules {
    let protect: Vec<PathBuf> = ws
        .protect
        .iter()
        .map(|p| crate::view::relative_inside(p).unwrap_or_else(|| p.clone()))
        .filter(|p| !p.as_os_str().is_empty())
        .collect();
    // The host's git configuration is read when the set is judged, so the
    // configuration the user's git obeys then is what names the held files.
    let home = ws.home.as_deref();
    let context = Context::new(&ws.root, &ws.owned, &protect)
        .with_home(home)
        .with_host_config()
        .with_envrc_below(changed);
    Rules::new(&ws.changes, context)
}

/// The workspace as a change set (an upper layer, or a kept set's files) would
/// leave it, for the change-set rules: an entry of the set hides the host's
/// (a whiteout hides it for good), else the host's entry shows. A directory
/// the set made opaque still shows the host entries below it here, which can
/// only make a rule more careful.
struct SetView<'a> {
    set: &'a Path,
    host: &'a Path,
}

impl SetView<'_> {
    /// The entry at `p` in the view: the set's, else the host's, with which of the two.
    fn entry(&self, p: &Path) -> Option<(fs::Metadata, PathBuf)> {
        let in_set = self.set.join(p);
        match fs::symlink_metadata(&in_set) {
            Ok(m) if is_whiteout(&m) => None,
            Ok(m) => Some((m, in_set)),
            Err(_) => {
                let on_host = self.host.join(p);
                fs::symlink_metadata(&on_host).ok().map(|m| (m, on_host))
            }
        }
    }
}

impl airlock_policy::changes::View for SetView<'_> {
    fn link(&self, p: &Path) -> Option<PathBuf> {
        match self.entry(p)? {
            (m, at) if m.file_type().is_symlink() => fs::read_link(at).ok(),
            _ => None,
        }
    }

    fn exists(&self, p: &Path) -> bool {
        self.entry(p).is_some()
    }

    fn read(&self, p: &Path, max: usize) -> Option<Vec<u8>> {
        let (m, at) = self.entry(p)?;
        read_regular(&m, &at, max)
    }

    fn read_host(&self, p: &Path, max: usize) -> Option<Vec<u8>> {
        let at = self.host.join(p);
        let m = fs::symlink_metadata(&at).ok()?;
        read_regular(&m, &at, max)
    }

    fn nested_git(&self, dir: &Path) -> Option<PathBuf> {
        nested_git(&self.host.join(dir)).map(|found| dir.join(found))
    }

    fn host_has(&self, p: &Path) -> bool {
        fs::symlink_metadata(self.host.join(p)).is_ok()
    }

    fn names(&self, p: &Path) -> Vec<std::ffi::OsString> {
        let list = |d: &Path| -> Vec<(std::ffi::OsString, bool)> {
            fs::read_dir(d)
                .map(|it| {
                    it.flatten()
                        .map(|e| {
                            let gone = e.metadata().is_ok_and(|m| is_whiteout(&m));
                            (e.file_name(), gone)
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let set = list(&self.set.join(p));
        let mut out: Vec<std::ffi::OsString> = set
            .iter()
            .filter(|(_, gone)| !gone)
            .map(|(n, _)| n.clone())
            .collect();
        for (n, _) in list(&self.host.join(p)) {
            if !set.iter().any(|(s, _)| *s == n) {
                out.push(n);
            }
        }
        out
    }

    fn read_at(&self, p: &Path, offset: u64, len: usize) -> Option<Vec<u8>> {
        use std::os::unix::fs::{FileExt, OpenOptionsExt};
        let (m, at) = self.entry(p)?;
        if !m.file_type().is_file() {
            return None;
        }
        let f = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(at)
            .ok()?;
        let mut buf = vec![0u8; len.min(m.len().saturating_sub(offset) as usize)];
        let mut got = 0;
        while got < buf.len() {
            match f.read_at(&mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        buf.truncate(got);
        Some(buf)
    }
}

/// How deep and how far [`nested_git`] looks: a repository vendored or
/// cloned inside the workspace sits a few levels down; a deeper one, or one
/// in a tree larger than this, is not found (its deletion is still listed).
const NESTED_GIT_DEPTH: usize = 6;
const NESTED_GIT_ENTRIES: usize = 50_000;

/// The first `.git` (directory or gitfile) below `dir` on the host, relative
/// to `dir` (its parent: the repository); links are not followed.
fn nested_git(dir: &Path) -> Option<PathBuf> {
    let mut queue = std::collections::VecDeque::from([(PathBuf::new(), 0usize)]);
    let mut seen = 0;
    while let Some((rel, depth)) = queue.pop_front() {
        let Ok(entries) = fs::read_dir(dir.join(&rel)) else {
            continue;
        };
        for e in entries.flatten() {
            seen += 1;
            if seen > NESTED_GIT_ENTRIES {
                return None;
            }
            let name = e.file_name();
            if name == ".git" {
                return Some(rel);
            }
            if depth + 1 < NESTED_GIT_DEPTH && e.file_type().is_ok_and(|t| t.is_dir()) {
                queue.push_back((rel.join(&name), depth + 1));
            }
        }
    }
    None
}

/// Writes a change set's full list to `at` (a new file, mode 0600, its
/// directory made 0700 if missing), synced.
fn write_list(at: &Path, data: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(dir) = at.parent() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(at)?;
    f.write_all(data)?;
    f.sync_all()
}

/// The contents of the regular file `at` (metadata `m`), if at most `max`
/// bytes; a link at `at` is not followed.
fn read_regular(m: &fs::Metadata, at: &Path, max: usize) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    if !m.file_type().is_file() || m.len() > max as u64 {
        return None;
    }
    let mut data = Vec::with_capacity(m.len() as usize);
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(at)
        .ok()?;
    f.take(max as u64 + 1).read_to_end(&mut data).ok()?;
    (data.len() <= max).then_some(data)
}

/// The return path of one run: every change of the upper layer is judged by the
/// change-set policy ([`airlock_policy::changes`]); when `apply` is asked, the
/// allowed ones are copied back, unless any change waits for a person (then
/// nothing is applied, so that what a person later approves is exactly what
/// was reviewed) or the set is over `[changes] max_files` / `max_bytes`.
/// Denied changes are never applied. A change set that was not applied (and
/// holds more than discarded caches) is kept in `ws.keep`, when named, for
/// `airlock changes RUN_ID` / `airlock apply RUN_ID`.
pub fn finish(upper: &Path, ws: &WorkspaceSpec, limits: &Limits, apply: bool) -> Finished {
    let Scanned {
        changes: all,
        unread,
    } = changes(upper, &ws.root);
    // A hole in the scan: nothing is applied (the set is kept, for a look).
    let (mut f, judged) = settle(
        all,
        upper,
        ws,
        limits,
        apply && unread.is_empty(),
        Approved::No,
    );
    if let Some((first, e)) = unread.first() {
        f.violations.push(fs_violation(
            format!(
                "not applied: {} of the change set could not be read, the first `{}`: {e}{}; none of this run's changes were applied",
                if unread.len() == 1 {
                    "1 entry".to_string()
                } else {
                    format!("{} entries", unread.len())
                },
                escape_path(first),
                if e.raw_os_error() == Some(libc::ENAMETOOLONG) {
                    " (a path longer than the kernel's PATH_MAX; make the tree shallower)"
                } else {
                    ""
                }
            ),
            serde_json::json!({ "unread": unread.len() }),
        ));
    }
    if let Some(dir) = &ws.keep {
        if !f.applied
            && judged
                .iter()
                .any(|(_, c)| c.disposition != Disposition::Discard)
        {
            match kept::save(dir, &ws.root, &judged, upper) {
                Ok(()) => f.summary.kept = true,
                Err(e) => f.violations.push(fs_violation(
                    format!(
                        "the change set could not be kept for a later apply ({}): {e}; rerun the command to get it again",
                        dir.display()
                    ),
                    serde_json::Value::Null,
                )),
            }
        }
    }
    f
}

/// Whether a person approved the change set being settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approved<'a> {
    No,
    /// Approved for the set whose SHA-256 (see [`kept::set_sha256`]) is this;
    /// held changes apply only if the set being settled hashes the same.
    Set {
        approved: &'a str,
        current: &'a str,
    },
}

/// The one return path, shared by a run's own apply and a later
/// `airlock apply RUN_ID`: judges `all` (whose added and modified entries are
/// read from `src`), reports, and when `apply` is asked and nothing is held
/// (or the held ones were approved as this exact set), applies the allowed
/// ones within the byte and file limits. Returns the judged list too.
pub fn settle(
    all: Vec<Change>,
    src: &Path,
    ws: &WorkspaceSpec,
    limits: &Limits,
    apply: bool,
    approved: Approved<'_>,
) -> (Finished, Vec<(Change, Classification)>) {
    let upper = src;
    let off = return_path_off();
    let view = SetView {
        set: src,
        host: &ws.root,
    };
    // Compiling the rules costs more than the rest of a run's empty set
    // (about 0.1 ms): only a set with changes needs them.
    let rules = (!all.is_empty() && !off).then(|| rules(ws, all.iter().map(|c| c.rel.as_path())));
    let judged: Vec<(Change, Classification)> = all
        .into_iter()
        .map(|c| {
            let class = match &rules {
                Some(rules) => rules.classify_with(&c.entry(), &view),
                None => Classification {
                    disposition: Disposition::Allow,
                    rule: "debug.return_path_off".into(),
                    reason: String::new(),
                    mode: Some(c.mode & 0o7777),
                },
            };
            (c, class)
        })
        .collect();
    let set_approved = match approved {
        Approved::No => false,
        Approved::Set { approved, current } => approved == current,
    };
    let mut f = Finished::default();
    let mut hasher = Sha256::new();
    // The full list, for the audit trail, when its records cannot list it all.
    let mut full: Option<Vec<u8>> =
        (ws.list.is_some() && judged.len() > AUDIT_LISTED).then(Vec::new);
    let mut denied = Vec::new();
    let mut held = Vec::new();
    for (c, class) in &judged {
        let s = &mut f.summary;
        s.total += 1;
        match c.kind {
            ChangeKind::Added => s.added += 1,
            ChangeKind::Modified => s.modified += 1,
            ChangeKind::Deleted => s.deleted += 1,
        }
        let line = c.digest_line(class.disposition);
        hasher.update(line.as_bytes());
        if let Some(full) = full.as_mut() {
            full.extend_from_slice(line.as_bytes());
        }
        match class.disposition {
            Disposition::Discard => {
                s.discarded += 1;
                continue;
            }
            Disposition::Deny => {
                s.denied += 1;
                denied.push(class);
            }
            Disposition::ApprovalRequired if !set_approved => {
                s.held += 1;
                held.push(class);
            }
            Disposition::Allow | Disposition::ApprovalRequired => {
                if c.kind != ChangeKind::Deleted {
                    s.write_entries += 1;
                    s.write_bytes += c.data;
                }
            }
        }
        if off {
            // The report as it was: every entry, names decoded lossily.
            let mut p = c.public(&ws.root, Some(class));
            p.path = ws.root.join(&c.rel).to_string_lossy().into_owned();
            f.changes.push(p);
        } else if f.changes.len() < LISTED {
            f.changes.push(c.public(&ws.root, Some(class)));
        }
    }
    f.summary.listed = f.changes.len() as u64;
    f.summary.sha256 = hex::encode(hasher.finalize());
    if let (Some(at), Some(full)) = (&ws.list, full) {
        if let Err(e) = write_list(at, &full) {
            // The record then names the rest only by its hash: say so.
            f.violations.push(fs_violation(format!(
                "the full list of this run's {} changes could not be kept for the audit trail at {}: {e}; its record lists the first {AUDIT_LISTED} and the hash of all",
                judged.len(),
                at.display()
            ), serde_json::Value::Null));
        }
    }
    let verb = if apply {
        "not applied"
    } else {
        "would be refused"
    };
    f.violations
        .extend(refusals(&denied, &format!("{verb} (denied)")));
    if !apply || judged.is_empty() {
        if !held.is_empty() {
            f.violations
                .extend(refusals(&held, "needs a person before it can be applied"));
        }
        return (f, judged);
    }
    if !held.is_empty() {
        f.violations.extend(refusals(&held, "held for approval"));
        let later = if ws.keep.is_some() {
            "; the change set is kept: a person can review it with `airlock changes RUN_ID` and approve its apply (`airlock approvals approve ID`, then `airlock apply RUN_ID --approval ID`)"
        } else {
            ""
        };
        f.violations.push(fs_violation(
            format!(
                "not applied: {} change(s) need a person (approval_required), so none of this run's changes were applied{later}; a person can also allow them with patterns in [changes] allow of the policy file (which no run can write)",
                held.len()
            ),
            serde_json::json!({ "held": held.len() }),
        ));
        return (f, judged);
    }
    let mut max_files = ws
        .changes
        .max_files
        .unwrap_or_else(|| overlay_files(limits));
    let mut max_bytes = ws
        .changes
        .max_bytes
        .unwrap_or_else(|| overlay_bytes(limits));
    if off {
        (max_files, max_bytes) = (u64::MAX, u64::MAX);
    }
    if f.summary.write_entries > max_files || f.summary.write_bytes > max_bytes {
        f.violations.push(fs_violation(
            format!(
                "not applied: the change set writes {} entries and {} bytes, over the limit of {} entries and {} bytes ([changes] max_files / max_bytes; the default is the overlay's own cap)",
                f.summary.write_entries, f.summary.write_bytes, max_files, max_bytes
            ),
            serde_json::json!({ "entries": f.summary.write_entries, "bytes": f.summary.write_bytes }),
        ));
        return (f, judged);
    }
    let allowed: Vec<(&Change, Option<u32>)> = judged
        .iter()
        .filter(|(_, class)| match class.disposition {
            Disposition::Allow => true,
            Disposition::ApprovalRequired => set_approved,
            Disposition::Deny | Disposition::Discard => false,
        })
        .map(|(c, class)| {
            // An approved held change gets the mode an allowed one would.
            let mode = class.mode.or_else(|| {
                (c.kind != ChangeKind::Deleted && c.file_type != EntryType::Symlink)
                    .then(|| airlock_policy::changes::normal_mode(&c.entry()))
            });
            (c, mode)
        })
        .collect();
    match apply_changes(&allowed, upper, &ws.root, max_bytes, off) {
        Ok((errors, written)) => {
            f.applied = true;
            f.summary.applied_bytes = written;
            f.violations.extend(errors);
        }
        Err(e) => f.violations.push(fs_violation(
            format!("apply failed: {e}"),
            serde_json::Value::Null,
        )),
    }
    (f, judged)
}

fn fs_violation(detail: String, data: serde_json::Value) -> Violation {
    Violation {
        kind: crate::ViolationKind::Filesystem,
        detail,
        data,
    }
}

/// One violation per refused change, the first [`REFUSALS_LISTED`], then "… and N more".
fn refusals(list: &[&Classification], what: &str) -> Vec<Violation> {
    let mut out: Vec<Violation> = list
        .iter()
        .take(REFUSALS_LISTED)
        .map(|c| {
            fs_violation(
                format!("{what}: {}", c.reason),
                serde_json::json!({ "rule": c.rule, "disposition": c.disposition.as_str() }),
            )
        })
        .collect();
    if list.len() > REFUSALS_LISTED {
        out.push(fs_violation(
            format!("{what}: … and {} more", list.len() - REFUSALS_LISTED),
            serde_json::json!({ "more": list.len() - REFUSALS_LISTED }),
        ));
    }
    out
}

/// Copies allowed changes from `upper` into the workspace at `root`: deletions
/// deepest first, then additions and modifications parents first. Returns the
/// entries that could not be applied and the bytes written.
fn apply_changes(
    changes: &[(&Change, Option<u32>)],
    upper: &Path,
    root: &Path,
    max_bytes: u64,
    dense: bool,
) -> io::Result<(Vec<Violation>, u64)> {
    let root_fd = sys::open(root, libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0)?;
    let (uid, gid) = crate::sys::owner(root).unwrap_or((0, 0));
    let mut failed = Vec::new();
    let mut deletes: Vec<&(&Change, Option<u32>)> = changes
        .iter()
        .filter(|(c, _)| c.kind == ChangeKind::Deleted)
        .collect();
    deletes.sort_by_key(|(c, _)| std::cmp::Reverse(c.rel.components().count()));
    let writes = changes
        .iter()
        .filter(|(c, _)| c.kind != ChangeKind::Deleted);
    let mut budget = Budget {
        left: max_bytes,
        written: 0,
        dense,
    };
    // Changes come parents first and siblings together: the directory fd of
    // the last one is reused (walking from the root for each of 100k files
    // costs three opens apiece). A deletion may remove a directory, so the
    // cache is dropped after each.
    let mut parent: Option<(PathBuf, OwnedFd)> = None;
    for (c, mode) in deletes.into_iter().chain(writes) {
        let parent_rel = c.rel.parent().unwrap_or(Path::new(""));
        if parent.as_ref().is_none_or(|(p, _)| p != parent_rel) {
            parent = match walk(
                root_fd.as_raw_fd(),
                parent_rel,
                libc::O_RDONLY | libc::O_DIRECTORY,
            ) {
                Ok(fd) => Some((parent_rel.to_path_buf(), fd)),
                Err(e) => {
                    failed.push(format!("{}: {e}", escape_path(&c.rel)));
                    continue;
                }
            };
        }
        let Some((_, dir)) = &parent else { continue };
        if let Err(e) = apply_one(c, *mode, upper, dir.as_raw_fd(), uid, gid, &mut budget) {
            failed.push(format!("{}: {e}", escape_path(&c.rel)));
        }
        if c.kind == ChangeKind::Deleted || c.file_type == EntryType::Dir {
            parent = None;
        }
    }
    let n = failed.len();
    let mut out: Vec<Violation> = failed
        .into_iter()
        .take(REFUSALS_LISTED)
        .map(|d| fs_violation(format!("not applied: {d}"), serde_json::Value::Null))
        .collect();
    if n > REFUSALS_LISTED {
        out.push(fs_violation(
            format!("not applied: … and {} more", n - REFUSALS_LISTED),
            serde_json::Value::Null,
        ));
    }
    Ok((out, budget.written))
}

/// Bytes an apply may still write.
pub(crate) struct Budget {
    pub(crate) left: u64,
    pub(crate) written: u64,
    /// Debug switch only: copy holes as zeros and use the old long temporary
    /// names (see `RETURN_PATH_OFF`).
    pub(crate) dense: bool,
}

/// Applies one change in `p`, its parent directory, opened from the root with
/// `O_NOFOLLOW` on every component (a symlinked directory is refused).
fn apply_one(
    c: &Change,
    mode: Option<u32>,
    upper: &Path,
    p: RawFd,
    uid: u32,
    gid: u32,
    budget: &mut Budget,
) -> io::Result<()> {
    let name = c
        .rel
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty path"))?;
    let name_c = CString::new(name.as_bytes())?;
    match c.kind {
        ChangeKind::Deleted => remove_at(p, &name_c),
        ChangeKind::Added | ChangeKind::Modified => {
            let src = upper.join(&c.rel);
            let m = fs::symlink_metadata(&src)?;
            if EntryType::from_mode(m.mode()) != c.file_type {
                return Err(io::Error::other("changed type since the scan"));
            }
            // The classifier's normalised mode; never more than the upper layer's bits.
            let mode = mode.unwrap_or(0o644) & m.permissions().mode() & 0o7777;
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
                // The mode as reported, not as the umask left it (mkdirat's
                // 0775 came out 0755), also for a directory that was there;
                // set through the directory itself, never a link.
                let dir = sys::openat(
                    p,
                    &name_c,
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
                    0,
                )?;
                // SAFETY: fchown/fchmod on an fd we own.
                unsafe {
                    libc::fchown(dir.as_raw_fd(), uid, gid);
                    libc::fchmod(dir.as_raw_fd(), mode);
                }
                Ok(())
            } else if m.file_type().is_symlink() {
                let target = fs::read_link(&src)?;
                if Some(&target) != c.target.as_ref() {
                    return Err(io::Error::other("symlink target changed since the scan"));
                }
                let tmp = tmp_name(name, budget.dense);
                let t = sys::cpath(&target)?;
                // SAFETY: live C strings; p is an open directory fd.
                sys::cvt(unsafe { libc::symlinkat(t.as_ptr(), p, tmp.as_ptr()) })?;
                // SAFETY: as above.
                unsafe { libc::fchownat(p, tmp.as_ptr(), uid, gid, libc::AT_SYMLINK_NOFOLLOW) };
                rename_into(p, &tmp, &name_c)
            } else if m.is_file() {
                let tmp = tmp_name(name, budget.dense);
                let input = fs::File::from(sys::open(&src, libc::O_RDONLY | libc::O_NOFOLLOW, 0)?);
                let out = sys::openat(
                    p,
                    &tmp,
                    libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
                    0o600,
                )?;
                let out = fs::File::from(out);
                let copied = if m.len() == 0 {
                    Ok(())
                } else {
                    copy_sparse(&input, &out, m.len(), budget)
                };
                let copied = copied.map(|_| {
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

/// Copies `size` bytes keeping holes: only the data segments (SEEK_DATA /
/// SEEK_HOLE) are read, and blocks of zeros inside them are skipped too, so a
/// sparse file costs the host no more than its data. Stops at the budget.
pub(crate) fn copy_sparse(
    input: &fs::File,
    out: &fs::File,
    size: u64,
    budget: &mut Budget,
) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let fd = input.as_raw_fd();
    let end = i64::try_from(size).map_err(|_| io::Error::other("file too large"))?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut off: i64 = 0;
    while off < end {
        if budget.dense {
            let mut pos = 0i64;
            while pos < end {
                let n = input.read_at(&mut buf, pos as u64)?;
                if n == 0 {
                    break;
                }
                out.write_all_at(&buf[..n], pos as u64)?;
                budget.written += n as u64;
                pos += n as i64;
            }
            break;
        }
        // SAFETY: lseek on an fd we own; it only moves the file offset.
        let data = unsafe { libc::lseek(fd, off, libc::SEEK_DATA) };
        let data = if data < 0 {
            match sys::last_errno() {
                libc::ENXIO => break, // only a hole is left
                _ => off,             // SEEK_DATA unsupported: treat all as data
            }
        } else {
            data
        };
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(fd, data, libc::SEEK_HOLE) };
        let hole = if hole < 0 { end } else { hole.min(end) };
        let mut pos = data;
        while pos < hole {
            let want = ((hole - pos) as usize).min(buf.len());
            let n = input.read_at(&mut buf[..want], pos as u64)?;
            if n == 0 {
                break;
            }
            if budget.dense || buf[..n].iter().any(|b| *b != 0) {
                if n as u64 > budget.left {
                    return Err(io::Error::other(
                        "the apply's byte budget ([changes] max_bytes) is spent",
                    ));
                }
                out.write_all_at(&buf[..n], pos as u64)?;
                budget.left -= n as u64;
                budget.written += n as u64;
            }
            pos += n as i64;
        }
        off = hole.max(data + 1);
    }
    out.set_len(size)
}

/// A temporary name in the target directory: short (a 255-byte name still
/// applies), unique in this process, and created with O_EXCL.
fn tmp_name(name: &std::ffi::OsStr, old_style: bool) -> CString {
    use std::sync::atomic::{AtomicU64, Ordering};
    if old_style {
        let mut v = b".airlock-apply-".to_vec();
        v.extend(name.as_bytes().iter().filter(|b| **b != 0));
        return CString::new(v).unwrap_or_else(|_| CString::from(c".airlock-apply"));
    }
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    CString::new(format!(".airlock-apply.{}.{n}", std::process::id()))
        .unwrap_or_else(|_| CString::from(c".airlock-apply"))
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

/// True for an overlayfs whiteout (a 0/0 character device).
pub fn is_whiteout(m: &std::fs::Metadata) -> bool {
    m.file_type().is_char_device() && m.rdev() == 0
}
