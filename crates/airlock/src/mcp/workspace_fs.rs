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
            read_file(&policy, "a.txt", &caps).unwrap()["content"],
            "hello"
        );
        assert_eq!(
            read_file(&policy, "inner-link", &caps).unwrap()["content"],
            "hello"
        );
        let abs = policy.workspace.root.join("a.txt");
        assert_eq!(
            read_file(&policy, abs.to_str().unwrap(), &caps).unwrap()["content"],
            "hello"
        );
        for bad in [
            "../outside/secret.txt",
            "secret-link",
            "link-out/secret.txt",
            "sub/../../outside/secret.txt",
        ] {
            let e = read_file(&policy, bad, &caps).unwrap_err();
            assert_eq!(e.code, "outside_workspace", "{bad}: {e}");
        }
        let e =
            read_file(&policy, outside.join("secret.txt").to_str().unwrap(), &caps).unwrap_err();
        assert_eq!(e.code, "outside_workspace");
        let e = read_file(&policy, "/proc/self/environ", &caps).unwrap_err();
        assert_eq!(e.code, "outside_workspace");
        let small = FileCaps {
            read_bytes: 100,
            ..FileCaps::default()
        };
        let big = read_file(&policy, "sub/b.txt", &small).unwrap();
        assert_eq!(big["truncated"], true);
        assert_eq!(big["size"], 5000);
        assert_eq!(big["content"].as_str().unwrap().len(), 100);
        assert_eq!(
            read_file(&policy, "sub", &caps).unwrap_err().code,
            "not_a_file"
        );
    }

    #[test]
    fn writes_never_leave_the_root_or_touch_protected_paths() {
        let (_d, mut policy, outside) = setup();
        let caps = FileCaps::default();
        write_file(&policy, "sub/new.txt", "data", &caps).unwrap();
        assert_eq!(
            std::fs::read_to_string(policy.workspace.root.join("sub/new.txt")).unwrap(),
            "data"
        );
        for bad in ["link-out/pwn.txt", "../outside/pwn.txt", "secret-link"] {
            let e = write_file(&policy, bad, "pwned", &caps).unwrap_err();
            assert!(
                ["outside_workspace", "symlink_refused"].contains(&e.code),
                "{bad}: {e}"
            );
        }
        // Writing through an in-root symlink is refused too (it could be swapped).
        assert_eq!(
            write_file(&policy, "inner-link", "x", &caps)
                .unwrap_err()
                .code,
            "symlink_refused"
        );
        assert_eq!(
            std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
            "CANARY-SECRET"
        );
        assert!(!outside.join("pwn.txt").exists());
        let e = write_file(&policy, ".git/hooks/pre-commit", "evil", &caps).unwrap_err();
        assert_eq!(e.code, "protected_path");
        assert!(!policy.workspace.root.join(".git/hooks/pre-commit").exists());
        let e =
            write_file(&policy, "big.txt", &"x".repeat(caps.write_bytes + 1), &caps).unwrap_err();
        assert_eq!(e.code, "too_large");
        policy.workspace.mode = WorkspaceMode::Ro;
        assert_eq!(
            write_file(&policy, "c.txt", "x", &caps).unwrap_err().code,
            "read_only_workspace"
        );
        policy.workspace.mode = WorkspaceMode::Overlay;
        policy.workspace.apply = ApplyMode::Manual;
        assert_eq!(
            write_file(&policy, "c.txt", "x", &caps).unwrap_err().code,
            "read_only_workspace"
        );
        assert!(!policy.workspace.root.join("c.txt").exists());
    }

    #[test]
    fn listing_is_capped_and_does_not_follow_symlinks() {
        let (_d, policy, _outside) = setup();
        let all = list_files(&policy, ".", true, &FileCaps::default()).unwrap();
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
            &policy,
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
            list_files(&policy, "link-out", false, &FileCaps::default())
                .unwrap_err()
                .code,
            "outside_workspace"
        );
    }
}
