//! Finding the interpreter `python3` on the caller's PATH resolves to, so that the
//! same one works inside the sandbox even when it lives under a home directory
//! (pyenv's `~/.pyenv/versions/X`): only that prefix is made visible, read-only.
//!
//! pyenv's shims are shell scripts that need pyenv itself, so a shim is followed
//! to its version the way pyenv does it, without running anything:
//! `$PYENV_VERSION`, then `.python-version` from the cwd upwards, then
//! `$PYENV_ROOT/version`.

use std::path::{Path, PathBuf};

/// A resolved interpreter: its install prefix and the `bin` dir to put on PATH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpreter {
    pub prefix: PathBuf,
    pub bin: PathBuf,
}

/// Directories every sandbox sees anyway: an interpreter under them needs nothing.
const SYSTEM_PREFIXES: &[&str] = &["/usr", "/bin", "/sbin", "/lib"];

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Resolves `program` (e.g. `python3`) on `path_var` as seen from `cwd`.
/// `None` when it is not found or lives in the system directories.
pub fn resolve(
    program: &str,
    path_var: &str,
    cwd: &Path,
    pyenv_version: Option<&str>,
) -> Option<Interpreter> {
    for dir in path_var.split(':').filter(|d| !d.is_empty()) {
        let dir = Path::new(dir);
        let candidate = dir.join(program);
        if !is_executable(&candidate) {
            continue;
        }
        if dir.file_name().is_some_and(|n| n == "shims") {
            let root = dir.parent()?;
            if root.join("versions").is_dir() {
                return pyenv_version_prefix(root, program, cwd, pyenv_version);
            }
            // Some other shim directory (pyenv-virtualenv's): keep looking.
            continue;
        }
        let real = std::fs::canonicalize(&candidate).ok()?;
        if SYSTEM_PREFIXES.iter().any(|p| real.starts_with(p)) {
            return None;
        }
        let bin = real.parent()?.to_path_buf();
        let prefix = bin.parent()?.to_path_buf();
        return Some(Interpreter { prefix, bin });
    }
    None
}

fn pyenv_version_prefix(
    root: &Path,
    program: &str,
    cwd: &Path,
    env_version: Option<&str>,
) -> Option<Interpreter> {
    let version = env_version
        .filter(|v| !v.trim().is_empty())
        .map(str::to_string)
        .or_else(|| {
            cwd.ancestors()
                .find_map(|d| std::fs::read_to_string(d.join(".python-version")).ok())
        })
        .or_else(|| std::fs::read_to_string(root.join("version")).ok())?;
    // A version file may list several versions; the first one that has the
    // program wins, as in pyenv.
    for v in version.split_whitespace() {
        if v == "system" {
            return None;
        }
        if v.contains('/') && v.split('/').any(|c| c == "..") {
            continue;
        }
        let prefix = root.join("versions").join(v);
        let bin = prefix.join("bin");
        if is_executable(&bin.join(program)) {
            let prefix = std::fs::canonicalize(&prefix).ok()?;
            let bin = prefix.join("bin");
            return Some(Interpreter { prefix, bin });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pyenv_shim_resolves_to_the_version_prefix() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join(".pyenv");
        std::fs::create_dir_all(root.join("shims")).unwrap();
        std::fs::create_dir_all(root.join("versions/3.9.1/bin")).unwrap();
        for p in [
            root.join("shims/python3"),
            root.join("versions/3.9.1/bin/python3"),
        ] {
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(root.join("version"), "3.9.1\n").unwrap();
        let path = format!("{}:/usr/bin", root.join("shims").display());
        let got = resolve("python3", &path, t.path(), None).unwrap();
        assert_eq!(
            got.prefix,
            std::fs::canonicalize(root.join("versions/3.9.1")).unwrap()
        );
        assert!(resolve("python3", &path, t.path(), Some("system")).is_none());
        assert!(resolve("python3", "/usr/bin", t.path(), None).is_none());
    }
}
