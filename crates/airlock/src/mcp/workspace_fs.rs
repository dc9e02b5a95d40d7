//! The MCP file tools: read, write and list inside the workspace root only.
//!
//! Every path is opened with `openat2(RESOLVE_BENEATH)` relative to a handle on
//! the root, so the kernel itself refuses `..`, absolute paths and symlinks
//! that lead out (checked at open time, so a symlink swapped in after a check
//! cannot win a race). Writes also refuse every symlink and the policy's
//! protected paths, and respect the workspace mode.

use airlock_policy::{Policy, WorkspaceMode};
use rustix::fs::{Mode, OFlags, ResolveFlags};
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

fn io_err(path: &str, e: rustix::io::Errno) -> FileError {
    match e {
        rustix::io::Errno::XDEV => err(
            "outside_workspace",
            format!("{path}: leaves the workspace (via `..`, an absolute path or a symlink)"),
        ),
        rustix::io::Errno::LOOP => err(
            "symlink_refused",
            format!("{path}: a symlink is in the way; file tools do not write through symlinks"),
        ),
        rustix::io::Errno::NOENT => err("not_found", format!("{path}: no such file or directory")),
        rustix::io::Errno::ISDIR => err("is_directory", format!("{path}: is a directory")),
        rustix::io::Errno::NOTDIR => err(
            "not_a_directory",
            format!("{path}: a component is not a directory"),
        ),
        rustix::io::Errno::ACCESS | rustix::io::Errno::PERM => {
            err("permission_denied", format!("{path}: permission denied"))
        }
        other => err("io_error", format!("{path}: {other}")),
    }
}

/// A path relative to the workspace root, from what the model sent: relative,
/// or absolute under the root. Lexical only; the kernel checks the rest.
pub fn relative_path(root: &Path, requested: &str) -> Result<PathBuf, FileError> {
    if requested.contains('\0') {
        return Err(err("bad_path", "path contains a NUL byte"));
    }
    if requested.len() > 4096 {
        return Err(err("bad_path", "path is longer than 4096 bytes"));
    }
    let p = Path::new(requested);
    let rel = if p.is_absolute() {
        p.strip_prefix(root)
            .map_err(|_| {
                err(
                    "outside_workspace",
                    format!("{requested}: is not under the workspace {}", root.display()),
                )
            })?
            .to_path_buf()
    } else {
        p.to_path_buf()
    };
    let mut depth: i64 = 0;
    for c in rel.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return Err(err(
                "outside_workspace",
                format!("{requested}: leaves the workspace"),
            ));
        }
    }
    Ok(if rel.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        rel
    })
}

fn open_root(policy: &Policy) -> Result<OwnedFd, FileError> {
    rustix::fs::open(
        &policy.workspace.root,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io_err(&policy.workspace.root.display().to_string(), e))
}

fn beneath(
    root: &OwnedFd,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
    strict: bool,
) -> Result<OwnedFd, FileError> {
    let mut resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    if strict {
        resolve |= ResolveFlags::NO_SYMLINKS;
    }
    rustix::fs::openat2(root, rel, flags | OFlags::CLOEXEC, mode, resolve)
        .map_err(|e| io_err(&rel.display().to_string(), e))
}

pub fn read_file(policy: &Policy, path: &str, caps: &FileCaps) -> Result<Value, FileError> {
    let rel = relative_path(&policy.workspace.root, path)?;
    let root = open_root(policy)?;
    let fd = beneath(
        &root,
        &rel,
        OFlags::RDONLY | OFlags::NOCTTY | OFlags::NONBLOCK,
        Mode::empty(),
        false,
    )?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| io_err(path, e))?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(err("not_a_file", format!("{path}: not a regular file")));
    }
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
        "content": String::from_utf8_lossy(&buf),
    }))
}

pub fn write_file(
    policy: &Policy,
    path: &str,
    content: &str,
    caps: &FileCaps,
) -> Result<Value, FileError> {
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
    let rel = relative_path(&policy.workspace.root, path)?;
    if rel == Path::new(".") {
        return Err(err("is_directory", "cannot write the workspace root"));
    }
    let normal: PathBuf = rel
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    if let Some(p) = policy
        .workspace
        .protect
        .iter()
        .find(|p| normal.starts_with(p))
    {
        return Err(err(
            "protected_path",
            format!("{path}: {} is protected by the policy", p.display()),
        ));
    }
    let root = open_root(policy)?;
    let fd = beneath(
        &root,
        &rel,
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::NOCTTY,
        Mode::from_raw_mode(0o644),
        true,
    )?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| io_err(path, e))?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(err("not_a_file", format!("{path}: not a regular file")));
    }
    let mut file = std::fs::File::from(fd);
    file.write_all(content.as_bytes())
        .map_err(|e| err("io_error", format!("{path}: {e}")))?;
    Ok(json!({ "path": rel.display().to_string(), "bytes_written": content.len() }))
}

pub fn list_files(
    policy: &Policy,
    path: &str,
    recursive: bool,
    caps: &FileCaps,
) -> Result<Value, FileError> {
    let rel = relative_path(&policy.workspace.root, path)?;
    let root = open_root(policy)?;
    let dir = beneath(
        &root,
        &rel,
        OFlags::RDONLY | OFlags::DIRECTORY,
        Mode::empty(),
        false,
    )?;
    let mut entries = Vec::new();
    let mut truncated = false;
    let max_depth = if recursive { caps.list_depth } else { 1 };
    walk(
        &dir,
        &PathBuf::new(),
        1,
        max_depth,
        caps.list_entries,
        &mut entries,
        &mut truncated,
    )?;
    entries.sort_by(|a: &Value, b: &Value| a["path"].as_str().cmp(&b["path"].as_str()));
    Ok(json!({ "path": rel.display().to_string(), "entries": entries, "truncated": truncated }))
}

fn walk(
    dir: &OwnedFd,
    prefix: &Path,
    depth: usize,
    max_depth: usize,
    cap: usize,
    out: &mut Vec<Value>,
    truncated: &mut bool,
) -> Result<(), FileError> {
    let listing =
        rustix::fs::Dir::read_from(dir).map_err(|e| io_err(&prefix.display().to_string(), e))?;
    for entry in listing {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "." || name == ".." {
            continue;
        }
        if out.len() >= cap {
            *truncated = true;
            return Ok(());
        }
        let stat = rustix::fs::statat(
            dir,
            entry.file_name(),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
        .ok();
        let kind = match stat.map(|s| rustix::fs::FileType::from_raw_mode(s.st_mode)) {
            Some(rustix::fs::FileType::RegularFile) => "file",
            Some(rustix::fs::FileType::Directory) => "dir",
            Some(rustix::fs::FileType::Symlink) => "symlink",
            _ => "other",
        };
        let path = prefix.join(&name);
        out.push(json!({
            "path": path.display().to_string(),
            "type": kind,
            "size": stat.map(|s| s.st_size.max(0) as u64).unwrap_or(0),
        }));
        // Never descend through a symlink: it may lead out of the workspace.
        if kind == "dir" && depth < max_depth {
            let child = rustix::fs::openat2(
                dir,
                entry.file_name(),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
            );
            if let Ok(child) = child {
                walk(&child, &path, depth + 1, max_depth, cap, out, truncated)?;
                if *truncated {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}
