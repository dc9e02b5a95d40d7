//! The MCP file tools: read, write and list inside the workspace root only,
//! under the same path rules as the sandbox.
//!
//! A path is resolved exactly once, by the kernel: `..` is refused outright,
//! the path is opened with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`
//! relative to a handle on the root (so the path checked is the path opened;
//! a symlink swapped in after a check cannot win a race), and the opened fd's
//! type is checked with `fstat`. Nothing but regular files is read or written,
//! and nothing blocks on the way: a FIFO, a device or a socket is looked at
//! through an `O_PATH` handle first and refused, and the real open carries
//! `O_NONBLOCK | O_NOFOLLOW | O_NOCTTY`.
//!
//! The rules, in order (see docs/interfaces.md):
//! * `filesystem.hide`: never read, written or listed (also through a hard
//!   link: the opened inode is compared with the hidden ones);
//! * airlock's own files (the state directory, the tokens file): never read,
//!   written or listed; the active policy file (and `airlock.toml` at the
//!   root, which the next run would pick up): never written;
//! * writes need a writable workspace (`rw`, or overlay with `apply = "auto"`)
//!   or a `filesystem.write` entry, and are refused under `filesystem.read`
//!   entries and `workspace.protect`;
//! * the change-set policy (`airlock_policy::classify`, the same rules as
//!   `--apply` and `rw`): host-executable metadata is refused as
//!   `approval_required`, naming the rule; what it denies is `change_denied`.

use airlock_policy::{Policy, WorkspaceMode};
use rustix::fs::{FileType, Mode, OFlags, ResolveFlags, Stat};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

/// Caps on what one call may move.
#[derive(Debug, Clone)]
pub struct FileCaps {
    pub read_bytes: u64,
    pub write_bytes: usize,
    pub list_entries: usize,
    pub list_depth: usize,
}

impl Default for FileCaps {
    fn default() -> Self {
        FileCaps {
            read_bytes: 256 << 10,
            write_bytes: 1 << 20,
            list_entries: 1000,
            list_depth: 8,
        }
    }
}

/// Why a file tool refused; becomes an `isError` tool result.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct FileError {
    pub code: &'static str,
    pub message: String,
}

fn err(code: &'static str, message: impl Into<String>) -> FileError {
    FileError {
        code,
        message: message.into(),
    }
}

/// What a file tool works under: the caller's policy and airlock's own files.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    pub policy: &'a Policy,
    /// airlock's own files and folders (`"state directory"`, `"tokens file"`,
    /// `"policy file"`) with their absolute paths.
    pub own: &'a [(&'static str, PathBuf)],
}

impl<'a> Ctx<'a> {
    pub fn new(policy: &'a Policy, own: &'a [(&'static str, PathBuf)]) -> Ctx<'a> {
        Ctx { policy, own }
    }
}

/// The paths airlock itself lives by, for [`Ctx::own`]: the state directory,
/// the tokens file (if any), the audit signing key and checkpoint file (if
/// set) and the policy's own file (if it came from one),
/// each as given and as resolved.
pub fn own_files(
    policy: &Policy,
    state_dir: &Path,
    tokens: Option<&Path>,
) -> Vec<(&'static str, PathBuf)> {
    let mut out = Vec::new();
    let mut add = |what: &'static str, p: &Path| {
        let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let real = real_path(&abs);
        if real != abs {
            out.push((what, real));
        }
        out.push((what, abs));
    };
    add("state directory", state_dir);
    if let Some(t) = tokens {
        add("tokens file", t);
    }
    for (what, p) in airlock_core::ledger::audit_files_from_env() {
        add(what, &p);
    }
    let source = Path::new(&policy.source);
    if source.is_absolute() || source.exists() {
        add("policy file", source);
    }
    out
}

/// `p` with symlinks resolved as far as it exists (its parent, for a file
/// that does not exist yet).
fn real_path(p: &Path) -> PathBuf {
    if let Ok(r) = std::fs::canonicalize(p) {
        return r;
    }
    match (p.parent(), p.file_name()) {
        (Some(parent), Some(name)) => real_path(parent).join(name),
        _ => p.to_path_buf(),
    }
}

fn io_err(path: &str, e: rustix::io::Errno) -> FileError {
    match e {
        rustix::io::Errno::XDEV => err(
            "outside_workspace",
            format!("{path}: leaves the workspace (via an absolute path or a symlink)"),
        ),
        rustix::io::Errno::LOOP => err(
            "symlink_refused",
            format!("{path}: a symlink is in the way; file tools do not follow symlinks (name the file itself)"),
        ),
        rustix::io::Errno::NOENT => err("not_found", format!("{path}: no such file or directory")),
        rustix::io::Errno::ISDIR => err("is_directory", format!("{path}: is a directory")),
        rustix::io::Errno::NOTDIR => err(
            "not_a_directory",
            format!("{path}: a component is not a directory"),
        ),
        rustix::io::Errno::NXIO => err(
            "not_a_file",
            format!("{path}: a FIFO or device with nobody at the other end; file tools read and write regular files only"),
        ),
        rustix::io::Errno::ACCESS | rustix::io::Errno::PERM => {
            err("permission_denied", format!("{path}: permission denied"))
        }
        other => err("io_error", format!("{path}: {other}")),
    }
}

/// A path relative to the workspace root, from what the model sent: relative,
/// or absolute under the root. A `..` component is refused whatever it would
/// resolve to: the path that is checked must be the path that is opened.
pub fn relative_path(root: &Path, requested: &str) -> Result<PathBuf, FileError> {
    if requested.contains('\0') {
        return Err(err("bad_path", "path contains a NUL byte"));
    }
    if requested.len() > 4096 {
        return Err(err("bad_path", "path is longer than 4096 bytes"));
    }
    let p = Path::new(requested);
    let rest = if p.is_absolute() {
        p.strip_prefix(root).map_err(|_| {
            err(
                "outside_workspace",
                format!("{requested}: is not under the workspace {}", root.display()),
            )
        })?
    } else {
        p
    };
    let mut rel = PathBuf::new();
    for c in rest.components() {
        match c {
            Component::Normal(n) => rel.push(n),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(err(
                    "bad_path",
                    format!("{requested}: `..` is refused in file tool paths; name the file from the workspace root"),
                ))
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(err(
                    "outside_workspace",
                    format!("{requested}: leaves the workspace"),
                ))
            }
        }
    }
    Ok(if rel.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        rel
    })
}

fn sha256_bytes(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What a tool is about to do with a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    List,
    Write,
}

fn under(abs: &Path, entry: &Path) -> bool {
    abs.starts_with(entry) || abs.starts_with(real_path(entry))
}

/// The hidden path `abs` falls under, if any.
fn hidden_by<'p>(policy: &'p Policy, abs: &Path) -> Option<&'p Path> {
    policy
        .filesystem
        .hide
        .iter()
        .find(|h| under(abs, h))
        .map(PathBuf::as_path)
}

/// Whether a tool may `access` the workspace path `rel` at all (before
/// anything is opened). `shown` is the path as the caller gave it.
pub fn check_path(ctx: &Ctx<'_>, rel: &Path, access: Access, shown: &str) -> Result<(), FileError> {
    check_path_with(ctx, rel, access, shown, None)
}

/// [`check_path`], with the bytes a write would put at `rel` (for the rules
/// that compare a file with the host's: a `package.json`'s hook keys).
fn check_path_with(
    ctx: &Ctx<'_>,
    rel: &Path,
    access: Access,
    shown: &str,
    content: Option<&[u8]>,
) -> Result<(), FileError> {
    let policy = ctx.policy;
    let abs = if rel == Path::new(".") {
        policy.workspace.root.clone()
    } else {
        policy.workspace.root.join(rel)
    };
    for (what, p) in ctx.own {
        let secret = *what != "policy file";
        if abs.starts_with(p) && (secret || access == Access::Write) {
            return Err(err(
                "airlock_file",
                format!(
                    "{shown}: is airlock's own {what}; no tool may {} it",
                    verb(access)
                ),
            ));
        }
    }
    if let Some(h) = hidden_by(policy, &abs) {
        return Err(err(
            "hidden",
            format!(
                "{shown}: is hidden by the policy (filesystem.hide {}); file tools never read, write or list it, as commands in the sandbox cannot",
                h.display()
            ),
        ));
    }
    if access != Access::Write {
        return Ok(());
    }
    if rel == Path::new("airlock.toml") {
        return Err(err(
            "airlock_file",
            format!("{shown}: airlock.toml at the workspace root is the policy the next run would pick up; no tool may write it"),
        ));
    }
    let write_entry = policy.filesystem.write.iter().find(|w| under(&abs, w));
    let read_entry = policy
        .filesystem
        .read
        .iter()
        .filter(|r| under(&abs, r))
        .max_by_key(|r| r.components().count());
    if let Some(r) = read_entry {
        if write_entry.is_none_or(|w| w.components().count() < r.components().count()) {
            return Err(err(
                "read_only_path",
                format!(
                    "{shown}: is read-only by the policy (filesystem.read {})",
                    r.display()
                ),
            ));
        }
    }
    if write_entry.is_none() {
        match (policy.workspace.mode, policy.workspace.apply) {
            (WorkspaceMode::Rw, _) | (WorkspaceMode::Overlay, airlock_policy::model::ApplyMode::Auto) => {}
            (WorkspaceMode::Ro, _) => {
                return Err(err("read_only_workspace", "the policy makes the workspace read-only (workspace.mode = \"ro\")"))
            }
            (WorkspaceMode::Overlay, _) => {
                return Err(err(
                    "read_only_workspace",
                    "the policy keeps the workspace unchanged (overlay mode, manual apply); write_file only works with workspace.mode = \"rw\" or apply = \"auto\"",
                ))
            }
        }
    }
    if let Some(p) = policy.workspace.protect.iter().find(|p| rel.starts_with(p)) {
        return Err(err(
            "protected_path",
            format!(
                "{shown}: {} is protected by the policy (workspace.protect)",
                p.display()
            ),
        ));
    }
    change_verdict(ctx, rel, &abs, shown, content)
}

/// The change-set policy's verdict on writing `rel` (the same classifier that
/// judges `--apply` and `rw` changes: one rule set for every way back).
fn change_verdict(
    ctx: &Ctx<'_>,
    rel: &Path,
    abs: &Path,
    shown: &str,
    content: Option<&[u8]>,
) -> Result<(), FileError> {
    use airlock_policy::changes::{ChangeKind, Context, Entry, EntryType};
    use airlock_policy::Disposition;
    let policy = ctx.policy;
    let host = rustix::fs::lstat(abs).ok();
    let owned: Vec<PathBuf> = ctx.own.iter().map(|(_, p)| p.clone()).collect();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let context = Context::new(&policy.workspace.root, &owned, &policy.workspace.protect)
        .with_home(home.as_deref())
        .with_host_config()
        .with_envrc_below([rel]);
    let entry = Entry {
        rel,
        kind: if host.is_some() {
            ChangeKind::Modified
        } else {
            ChangeKind::Added
        },
        file_type: EntryType::File,
        mode: 0o644,
        host_mode: host.map(|st| st.st_mode & 0o7777),
        host_type: host.map(|st| EntryType::from_mode(st.st_mode)),
        symlink_target: None,
    };
    let rules = airlock_policy::changes::Rules::new(&policy.changes, context);
    let verdict = rules.classify_with(
        &entry,
        &HostView {
            root: &policy.workspace.root,
            written: rel,
            content,
        },
    );
    match verdict.disposition {
        Disposition::Allow | Disposition::Discard => Ok(()),
        Disposition::ApprovalRequired => Err(err(
            "approval_required",
            format!(
                "{shown}: needs a person's approval (rule {}): {}; file tools never write it silently. Ask the user to make this change",
                verdict.rule, verdict.reason
            ),
        )),
        Disposition::Deny => Err(err(
            "change_denied",
            format!("{shown}: denied by the change-set policy (rule {}): {}", verdict.rule, verdict.reason),
        )),
    }
}

/// The host workspace with the file being written in it, for the change-set
/// rules that look beyond one entry (a directory made to look like a git
/// repository). The written file's content is offered only for a
/// `package.json`, whose hook keys are compared with the host's: a
/// `.git/index` written by a tool needs a person.
struct HostView<'a> {
    root: &'a Path,
    written: &'a Path,
    content: Option<&'a [u8]>,
}

impl airlock_policy::changes::View for HostView<'_> {
    fn link(&self, p: &Path) -> Option<PathBuf> {
        std::fs::read_link(self.root.join(p)).ok()
    }

    fn exists(&self, p: &Path) -> bool {
        p == self.written || rustix::fs::lstat(self.root.join(p)).is_ok()
    }

    fn read(&self, p: &Path, max: usize) -> Option<Vec<u8>> {
        let content = self.content.filter(|c| c.len() <= max)?;
        (p == self.written && p.file_name().is_some_and(|n| n == "package.json"))
            .then(|| content.to_vec())
    }

    fn read_host(&self, p: &Path, max: usize) -> Option<Vec<u8>> {
        // As write_file reaches it: below the root, through no symlink.
        let root = rustix::fs::open(
            self.root,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        let fd = beneath(
            &root,
            p,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
            "",
        )
        .ok()?;
        if FileType::from_raw_mode(rustix::fs::fstat(&fd).ok()?.st_mode) != FileType::RegularFile {
            return None;
        }
        let mut data = Vec::new();
        std::fs::File::from(fd)
            .take(max as u64 + 1)
            .read_to_end(&mut data)
            .ok()?;
        (data.len() <= max).then_some(data)
    }
}

fn verb(access: Access) -> &'static str {
    match access {
        Access::Read => "read",
        Access::List => "list",
        Access::Write => "write",
    }
}

/// The opened inode is a hidden path or one of airlock's files under another
/// name (a hard link, a bind mount).
fn check_inode(ctx: &Ctx<'_>, st: &Stat, access: Access, shown: &str) -> Result<(), FileError> {
    let same = |p: &Path| {
        rustix::fs::lstat(p).is_ok_and(|s| s.st_dev == st.st_dev && s.st_ino == st.st_ino)
    };
    if ctx.policy.filesystem.hide.iter().any(|h| same(h)) {
        return Err(err(
            "hidden",
            format!("{shown}: is the same file as a path hidden by the policy (filesystem.hide)"),
        ));
    }
    for (what, p) in ctx.own {
        if (*what != "policy file" || access == Access::Write) && same(p) {
            return Err(err(
                "airlock_file",
                format!(
                    "{shown}: is airlock's own {what} under another name; no tool may {} it",
                    verb(access)
                ),
            ));
        }
    }
    Ok(())
}

fn kind_name(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symlink",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "of an unknown type",
    }
}

fn require_regular(st: &Stat, shown: &str) -> Result<(), FileError> {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => Ok(()),
        FileType::Symlink => Err(err(
            "symlink_refused",
            format!(
                "{shown}: is a symlink; file tools do not follow symlinks (name the file itself)"
            ),
        )),
        FileType::Directory => Err(err("is_directory", format!("{shown}: is a directory"))),
        t => Err(err(
            "not_a_file",
            format!(
                "{shown}: is {}; file tools read and write regular files only",
                kind_name(t)
            ),
        )),
    }
}

fn open_root(policy: &Policy) -> Result<OwnedFd, FileError> {
    rustix::fs::open(
        &policy.workspace.root,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io_err(&policy.workspace.root.display().to_string(), e))
}

/// `openat2` below `dir`, never through a symlink or out of the root.
fn beneath(
    dir: &OwnedFd,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
    shown: &str,
) -> Result<OwnedFd, FileError> {
    // RESOLVE_NO_SYMLINKS refuses a symlink anywhere (ELOOP). O_NOFOLLOW is
    // added for files only: with O_PATH it hands back the link itself, which
    // fstat then names; with O_DIRECTORY it would turn ELOOP into ENOTDIR.
    let nofollow = if flags.contains(OFlags::DIRECTORY) {
        OFlags::empty()
    } else {
        OFlags::NOFOLLOW
    };
    // openat2 refuses a mode where nothing is created (EINVAL).
    let mode = if flags.contains(OFlags::CREATE) {
        mode
    } else {
        Mode::empty()
    };
    rustix::fs::openat2(
        dir,
        rel,
        flags | OFlags::CLOEXEC | nofollow,
        mode,
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )
    .map_err(|e| io_err(shown, e))
}

/// Look at what `rel` is without opening it for I/O (an `O_PATH` handle has no
/// side effects, even on a FIFO or a device).
fn peek(dir: &OwnedFd, rel: &Path, shown: &str) -> Result<Stat, FileError> {
    let fd = beneath(dir, rel, OFlags::PATH, Mode::empty(), shown)?;
    rustix::fs::fstat(&fd).map_err(|e| io_err(shown, e))
}

/// The opened fd is the inode that was looked at.
fn same_inode(a: &Stat, b: &Stat, shown: &str) -> Result<(), FileError> {
    if a.st_dev != b.st_dev || a.st_ino != b.st_ino {
        return Err(err(
            "changed_underneath",
            format!("{shown}: was replaced while being opened; try again"),
        ));
    }
    Ok(())
}

pub fn read_file(ctx: &Ctx<'_>, path: &str, caps: &FileCaps) -> Result<Value, FileError> {
    let rel = relative_path(&ctx.policy.workspace.root, path)?;
    check_path(ctx, &rel, Access::Read, path)?;
    let root = open_root(ctx.policy)?;
    let looked = peek(&root, &rel, path)?;
    require_regular(&looked, path)?;
    let fd = beneath(
        &root,
        &rel,
        OFlags::RDONLY | OFlags::NOCTTY | OFlags::NONBLOCK,
        Mode::empty(),
        path,
    )?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| io_err(path, e))?;
    require_regular(&stat, path)?;
    same_inode(&looked, &stat, path)?;
    check_inode(ctx, &stat, Access::Read, path)?;
    let size = stat.st_size.max(0) as u64;
    let mut buf = Vec::new();
    std::fs::File::from(fd)
        .take(caps.read_bytes)
        .read_to_end(&mut buf)
        .map_err(|e| err("io_error", format!("{path}: {e}")))?;
    let truncated = size > buf.len() as u64;
    Ok(json!({
        "path": rel.display().to_string(),
        "size": size,
        "truncated": truncated,
        "sha256": sha256_bytes(&buf),
        "content": String::from_utf8_lossy(&buf),
    }))
}

pub fn write_file(
    ctx: &Ctx<'_>,
    path: &str,
    content: &str,
    caps: &FileCaps,
) -> Result<Value, FileError> {
    if content.len() > caps.write_bytes {
        return Err(err(
            "too_large",
            format!(
                "content is {} bytes; the limit is {}",
                content.len(),
                caps.write_bytes
            ),
        ));
    }
    let rel = relative_path(&ctx.policy.workspace.root, path)?;
    if rel == Path::new(".") {
        return Err(err("is_directory", "cannot write the workspace root"));
    }
    check_path_with(ctx, &rel, Access::Write, path, Some(content.as_bytes()))?;
    let root = open_root(ctx.policy)?;
    let parent = rel
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = Path::new(rel.file_name().unwrap_or_default());
    let dir = beneath(
        &root,
        parent,
        OFlags::PATH | OFlags::DIRECTORY,
        Mode::empty(),
        path,
    )?;
    // What is there now: a regular file with one name, or nothing. Looked at
    // through O_PATH, so that a FIFO or a device is refused without opening it.
    let existing = match peek(&dir, name, path) {
        Ok(st) => {
            require_regular(&st, path)?;
            check_inode(ctx, &st, Access::Write, path)?;
            if st.st_nlink > 1 {
                return Err(err(
                    "hard_linked",
                    format!(
                        "{path}: has {} names (hard links); writing it would change the others too",
                        st.st_nlink
                    ),
                ));
            }
            Some(st)
        }
        Err(e) if e.code == "not_found" => None,
        Err(e) => return Err(e),
    };
    let flags = OFlags::WRONLY
        | OFlags::NONBLOCK
        | OFlags::NOCTTY
        | if existing.is_none() {
            OFlags::CREATE | OFlags::EXCL
        } else {
            OFlags::empty()
        };
    let fd = beneath(&dir, name, flags, Mode::from_raw_mode(0o644), path)?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| io_err(path, e))?;
    require_regular(&stat, path)?;
    if let Some(before) = &existing {
        same_inode(before, &stat, path)?;
    }
    check_inode(ctx, &stat, Access::Write, path)?;
    // Truncated only now that the file is known to be the one checked.
    rustix::fs::ftruncate(&fd, 0).map_err(|e| io_err(path, e))?;
    let mut file = std::fs::File::from(fd);
    file.write_all(content.as_bytes())
        .map_err(|e| err("io_error", format!("{path}: {e}")))?;
    Ok(json!({
        "path": rel.display().to_string(),
        "bytes_written": content.len(),
        "created": existing.is_none(),
    }))
}

pub fn list_files(
    ctx: &Ctx<'_>,
    path: &str,
    recursive: bool,
    caps: &FileCaps,
) -> Result<Value, FileError> {
    let rel = relative_path(&ctx.policy.workspace.root, path)?;
    check_path(ctx, &rel, Access::List, path)?;
    let root = open_root(ctx.policy)?;
    let dir = beneath(
        &root,
        &rel,
        OFlags::RDONLY | OFlags::DIRECTORY,
        Mode::empty(),
        path,
    )?;
    let st = rustix::fs::fstat(&dir).map_err(|e| io_err(path, e))?;
    check_inode(ctx, &st, Access::List, path)?;
    let mut entries = Vec::new();
    let mut truncated = false;
    let max_depth = if recursive { caps.list_depth } else { 1 };
    let base = if rel == Path::new(".") {
        PathBuf::new()
    } else {
        rel.clone()
    };
    let mut walker = Walk {
        ctx,
        max_depth,
        cap: caps.list_entries,
        out: &mut entries,
        truncated: &mut truncated,
    };
    walker.walk(&dir, &base, 1)?;
    entries.sort_by(|a: &Value, b: &Value| a["path"].as_str().cmp(&b["path"].as_str()));
    Ok(json!({ "path": rel.display().to_string(), "entries": entries, "truncated": truncated }))
}

struct Walk<'c, 'o> {
    ctx: &'c Ctx<'c>,
    max_depth: usize,
    cap: usize,
    out: &'o mut Vec<Value>,
    truncated: &'o mut bool,
}

impl Walk<'_, '_> {
    /// `rel`: the folder's path from the workspace root.
    fn walk(&mut self, dir: &OwnedFd, rel: &Path, depth: usize) -> Result<(), FileError> {
        let listing =
            rustix::fs::Dir::read_from(dir).map_err(|e| io_err(&rel.display().to_string(), e))?;
        for entry in listing {
            let Ok(entry) = entry else { continue };
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "." || name == ".." {
                continue;
            }
            let path = rel.join(&name);
            // Hidden paths and airlock's own files are not there, for a file
            // tool as for a command in the sandbox: not even their names.
            if check_path(self.ctx, &path, Access::List, "").is_err() {
                continue;
            }
            let stat = rustix::fs::statat(
                dir,
                entry.file_name(),
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            )
            .ok();
            if let Some(st) = &stat {
                if check_inode(self.ctx, st, Access::List, "").is_err() {
                    continue;
                }
            }
            if self.out.len() >= self.cap {
                *self.truncated = true;
                return Ok(());
            }
            let kind = match stat.map(|s| FileType::from_raw_mode(s.st_mode)) {
                Some(FileType::RegularFile) => "file",
                Some(FileType::Directory) => "dir",
                Some(FileType::Symlink) => "symlink",
                _ => "other",
            };
            self.out.push(json!({
                "path": path.display().to_string(),
                "type": kind,
                "size": stat.map(|s| s.st_size.max(0) as u64).unwrap_or(0),
            }));
            // Never descend through a symlink: it may lead out of the workspace.
            if kind == "dir" && depth < self.max_depth {
                let child = rustix::fs::openat2(
                    dir,
                    entry.file_name(),
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                    ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
                );
                if let Ok(child) = child {
                    self.walk(&child, &path, depth + 1)?;
                    if *self.truncated {
                        return Ok(());
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_policy::model::ApplyMode;

    fn setup() -> (tempfile::TempDir, Policy, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "CANARY-SECRET").unwrap();
        std::fs::write(root.join("a.txt"), "hello").unwrap();
        std::fs::write(root.join("sub/b.txt"), "x".repeat(5000)).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link-out")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("secret-link")).unwrap();
        std::os::unix::fs::symlink("a.txt", root.join("inner-link")).unwrap();
        let mut policy = airlock_policy::load::builtin_default(&root);
        policy.workspace.root = std::fs::canonicalize(&root).unwrap();
        policy.workspace.mode = WorkspaceMode::Rw;
        policy.workspace.protect = vec![PathBuf::from(".git/hooks")];
        (dir, policy, outside)
    }

    #[test]
    fn reads_inside_and_refuses_every_way_out() {
        let (_d, policy, outside) = setup();
        let caps = FileCaps::default();
        assert_eq!(
            read_file(&Ctx::new(&policy, &[]), "a.txt", &caps).unwrap()["content"],
            "hello"
        );
        // Even a symlink that stays inside is refused: the path checked must be
        // the path opened.
        assert_eq!(
            read_file(&Ctx::new(&policy, &[]), "inner-link", &caps)
                .unwrap_err()
                .code,
            "symlink_refused"
        );
        let abs = policy.workspace.root.join("a.txt");
        assert_eq!(
            read_file(&Ctx::new(&policy, &[]), abs.to_str().unwrap(), &caps).unwrap()["content"],
            "hello"
        );
        for bad in [
            "../outside/secret.txt",
            "secret-link",
            "link-out/secret.txt",
            "sub/../../outside/secret.txt",
            "sub/../a.txt",
        ] {
            let e = read_file(&Ctx::new(&policy, &[]), bad, &caps).unwrap_err();
            assert!(
                ["outside_workspace", "symlink_refused", "bad_path"].contains(&e.code),
                "{bad}: {e}"
            );
        }
        let e = read_file(
            &Ctx::new(&policy, &[]),
            outside.join("secret.txt").to_str().unwrap(),
            &caps,
        )
        .unwrap_err();
        assert_eq!(e.code, "outside_workspace");
        let e = read_file(&Ctx::new(&policy, &[]), "/proc/self/environ", &caps).unwrap_err();
        assert_eq!(e.code, "outside_workspace");
        let small = FileCaps {
            read_bytes: 100,
            ..FileCaps::default()
        };
        let big = read_file(&Ctx::new(&policy, &[]), "sub/b.txt", &small).unwrap();
        assert_eq!(big["truncated"], true);
        assert_eq!(big["size"], 5000);
        assert_eq!(big["content"].as_str().unwrap().len(), 100);
        assert_eq!(
            read_file(&Ctx::new(&policy, &[]), "sub", &caps)
                .unwrap_err()
                .code,
            "is_directory"
        );
    }

    #[test]
    fn writes_never_leave_the_root_or_touch_protected_paths() {
        let (_d, mut policy, outside) = setup();
        let caps = FileCaps::default();
        write_file(&Ctx::new(&policy, &[]), "sub/new.txt", "data", &caps).unwrap();
        assert_eq!(
            std::fs::read_to_string(policy.workspace.root.join("sub/new.txt")).unwrap(),
            "data"
        );
        // An existing file is replaced in place.
        let again = write_file(&Ctx::new(&policy, &[]), "sub/new.txt", "new", &caps).unwrap();
        assert_eq!(again["created"], false);
        assert_eq!(
            std::fs::read_to_string(policy.workspace.root.join("sub/new.txt")).unwrap(),
            "new"
        );
        // Files that together make a directory look like a git repository
        // (whose config host git obeys inside it) need a person.
        for d in ["sub/objects", "sub/refs"] {
            std::fs::create_dir(policy.workspace.root.join(d)).unwrap();
        }
        let e = write_file(
            &Ctx::new(&policy, &[]),
            "sub/HEAD",
            "ref: refs/heads/x\n",
            &caps,
        )
        .unwrap_err();
        assert_eq!(e.code, "approval_required", "{e}");
        assert!(!policy.workspace.root.join("sub/HEAD").exists());
        for bad in ["link-out/pwn.txt", "../outside/pwn.txt", "secret-link"] {
            let e = write_file(&Ctx::new(&policy, &[]), bad, "pwned", &caps).unwrap_err();
            assert!(
                ["outside_workspace", "symlink_refused", "bad_path"].contains(&e.code),
                "{bad}: {e}"
            );
        }
        // Writing through an in-root symlink is refused too (it could be swapped).
        assert_eq!(
            write_file(&Ctx::new(&policy, &[]), "inner-link", "x", &caps)
                .unwrap_err()
                .code,
            "symlink_refused"
        );
        assert_eq!(
            std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
            "CANARY-SECRET"
        );
        assert!(!outside.join("pwn.txt").exists());
        let e = write_file(
            &Ctx::new(&policy, &[]),
            ".git/hooks/pre-commit",
            "evil",
            &caps,
        )
        .unwrap_err();
        assert_eq!(e.code, "protected_path");
        assert!(!policy.workspace.root.join(".git/hooks/pre-commit").exists());
        let e = write_file(
            &Ctx::new(&policy, &[]),
            "big.txt",
            &"x".repeat(caps.write_bytes + 1),
            &caps,
        )
        .unwrap_err();
        assert_eq!(e.code, "too_large");
        policy.workspace.mode = WorkspaceMode::Ro;
        assert_eq!(
            write_file(&Ctx::new(&policy, &[]), "c.txt", "x", &caps)
                .unwrap_err()
                .code,
            "read_only_workspace"
        );
        policy.workspace.mode = WorkspaceMode::Overlay;
        policy.workspace.apply = ApplyMode::Manual;
        assert_eq!(
            write_file(&Ctx::new(&policy, &[]), "c.txt", "x", &caps)
                .unwrap_err()
                .code,
            "read_only_workspace"
        );
        assert!(!policy.workspace.root.join("c.txt").exists());
    }

    #[test]
    fn listing_is_capped_and_does_not_follow_symlinks() {
        let (_d, policy, _outside) = setup();
        let all = list_files(&Ctx::new(&policy, &[]), ".", true, &FileCaps::default()).unwrap();
        let paths: Vec<&str> = all["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap())
            .collect();
        assert!(paths.contains(&"sub/b.txt"), "{paths:?}");
        assert!(paths.contains(&"link-out"), "{paths:?}");
        assert!(!paths.iter().any(|p| p.contains("secret.txt")), "{paths:?}");
        let capped = list_files(
            &Ctx::new(&policy, &[]),
            ".",
            true,
            &FileCaps {
                list_entries: 2,
                ..FileCaps::default()
            },
        )
        .unwrap();
        assert_eq!(capped["entries"].as_array().unwrap().len(), 2);
        assert_eq!(capped["truncated"], true);
        assert_eq!(
            list_files(
                &Ctx::new(&policy, &[]),
                "link-out",
                false,
                &FileCaps::default()
            )
            .unwrap_err()
            .code,
            "symlink_refused"
        );
    }

    #[test]
    fn hidden_paths_are_never_read_written_or_listed() {
        let (_d, mut policy, _outside) = setup();
        let root = policy.workspace.root.clone();
        std::fs::write(root.join(".env"), "HIDDEN-SECRET").unwrap();
        std::fs::create_dir(root.join("private")).unwrap();
        std::fs::write(root.join("private/key"), "HIDDEN-KEY").unwrap();
        std::fs::hard_link(root.join(".env"), root.join("env-copy")).unwrap();
        policy.filesystem.hide = vec![root.join(".env"), root.join("private")];
        let ctx = Ctx::new(&policy, &[]);
        let caps = FileCaps::default();
        for p in [".env", "./.env", "private/key", "env-copy"] {
            let e = read_file(&ctx, p, &caps).unwrap_err();
            assert_eq!(e.code, "hidden", "{p}: {e}");
            assert!(!e.message.contains("HIDDEN-"), "{e}");
        }
        for p in [".env", "private/new", "env-copy"] {
            let e = write_file(&ctx, p, "overwritten", &caps).unwrap_err();
            assert!(["hidden", "hard_linked"].contains(&e.code), "{p}: {e}");
        }
        assert_eq!(
            std::fs::read_to_string(root.join(".env")).unwrap(),
            "HIDDEN-SECRET"
        );
        assert!(!root.join("private/new").exists());
        assert_eq!(
            list_files(&ctx, "private", false, &caps).unwrap_err().code,
            "hidden"
        );
        let all = list_files(&ctx, ".", true, &caps).unwrap().to_string();
        assert!(
            !all.contains(".env") && !all.contains("private") && !all.contains("env-copy"),
            "{all}"
        );
    }

    /// Files the repository's own config runs (`core.hooksPath`, a filter's
    /// script) are plain paths, held because the host's config names them.
    #[test]
    fn files_the_host_git_config_runs_need_a_person() {
        let (_d, policy, _outside) = setup();
        let root = policy.workspace.root.clone();
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\thooksPath = .hooks\n[filter \"s\"]\n\tclean = ./scripts/clean.sh\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join(".hooks")).unwrap();
        std::fs::create_dir_all(root.join("scripts")).unwrap();
        let ctx = Ctx::new(&policy, &[]);
        let caps = FileCaps::default();
        for p in [".hooks/pre-commit", "scripts/clean.sh"] {
            let e = write_file(&ctx, p, "#!/bin/sh\ntouch /tmp/pwned\n", &caps).unwrap_err();
            assert_eq!(e.code, "approval_required", "{p}: {e}");
            assert!(!root.join(p).exists(), "{p}");
        }
        write_file(&ctx, "scripts/other.sh", "echo\n", &caps).unwrap();
    }

    #[test]
    fn airlock_files_and_host_executable_metadata_are_not_written() {
        let (d, mut policy, _outside) = setup();
        let root = policy.workspace.root.clone();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::write(root.join("policy.toml"), "[workspace]\n").unwrap();
        std::fs::create_dir_all(root.join("state/audit")).unwrap();
        std::fs::write(root.join("state/audit/log"), "AUDIT").unwrap();
        let mut p2 = policy.clone();
        p2.source = root.join("policy.toml").display().to_string();
        policy.workspace.protect = vec![];
        p2.workspace.protect = vec![];
        let own = own_files(
            &p2,
            &root.join("state"),
            Some(&d.path().join("tokens.toml")),
        );
        let ctx = Ctx::new(&p2, &own);
        let caps = FileCaps::default();
        for (p, code) in [
            ("policy.toml", "airlock_file"),
            ("airlock.toml", "airlock_file"),
            ("state/audit/log", "airlock_file"),
            (".git/objects/../config", "bad_path"),
            (".git/objects/../hooks/pre-commit", "bad_path"),
            (".git/config", "approval_required"),
            (".git/hooks/pre-commit", "approval_required"),
            ("sub/.git", "approval_required"),
            (".mcp.json", "approval_required"),
        ] {
            let e =
                write_file(&ctx, p, "[core]\n\tfsmonitor = touch /tmp/pwned\n", &caps).unwrap_err();
            assert_eq!(e.code, code, "{p}: {e}");
        }
        assert_eq!(
            std::fs::read_to_string(root.join("policy.toml")).unwrap(),
            "[workspace]\n"
        );
        assert!(!root.join(".git/config").exists() && !root.join("airlock.toml").exists());
        assert_eq!(
            read_file(&ctx, "state/audit/log", &caps).unwrap_err().code,
            "airlock_file"
        );
        assert!(read_file(&ctx, "policy.toml", &caps).is_ok());
        assert!(!list_files(&ctx, ".", false, &caps)
            .unwrap()
            .to_string()
            .contains("\"state\""));
        write_file(&ctx, ".git/objects/ab", "data", &caps).unwrap();
    }

    #[test]
    fn special_files_are_refused_at_once() {
        let (_d, mut policy, _outside) = setup();
        let root = policy.workspace.root.clone();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o666),
            0,
        )
        .unwrap();
        policy.workspace.protect = vec![];
        let ctx = Ctx::new(&policy, &[]);
        let t = std::time::Instant::now();
        assert_eq!(
            write_file(&ctx, "fifo", "x", &FileCaps::default())
                .unwrap_err()
                .code,
            "not_a_file"
        );
        assert_eq!(
            read_file(&ctx, "fifo", &FileCaps::default())
                .unwrap_err()
                .code,
            "not_a_file"
        );
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn read_and_write_scopes() {
        let (_d, mut policy, _outside) = setup();
        let root = policy.workspace.root.clone();
        policy.filesystem.read = vec![root.join("sub")];
        let caps = FileCaps::default();
        let e = write_file(&Ctx::new(&policy, &[]), "sub/x.txt", "x", &caps).unwrap_err();
        assert_eq!(e.code, "read_only_path");
        policy.filesystem.write = vec![root.join("sub/deeper")];
        policy.workspace.mode = WorkspaceMode::Ro;
        write_file(&Ctx::new(&policy, &[]), "sub/deeper/x.txt", "x", &caps).unwrap();
        let e = write_file(&Ctx::new(&policy, &[]), "y.txt", "x", &caps).unwrap_err();
        assert_eq!(e.code, "read_only_workspace");
    }
}
