//! Finding the interpreter `python3` (or `node`, `go`) on the caller's PATH
//! resolves to, so that the same one works inside the sandbox even when it lives
//! under a home directory (pyenv's `~/.pyenv/versions/X`): only that prefix is
//! made visible, read-only.
//!
//! Version managers' shims (pyenv, nodenv, goenv) are shell scripts that need the
//! manager itself, so a shim is followed to its version the way the manager does
//! it, without running anything: `$PYENV_VERSION` (or the like), then
//! `.python-version` (`.node-version`, `.go-version`) from the cwd upwards, then
//! `<root>/version`.
//!
//! The cwd is usually the workspace, whose files the sandboxed command may have
//! written: a version file there may only pick one of the manager's own
//! installs (a plain name under `<root>/versions`), never a path, so it cannot
//! widen what the sandbox sees.

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

/// The version file a manager's shim for `program` reads.
fn version_file(program: &str) -> Option<&'static str> {
    if program == "python" || program.starts_with("python3") {
        Some(".python-version")
    } else if program == "node" {
        Some(".node-version")
    } else if program == "go" {
        Some(".go-version")
    } else {
        None
    }
}

/// Whether `prefix` is an installation of `program` (what its runtime needs
/// beside `bin/`), so that a lone executable in some `bin` never has its whole
/// parent directory shown.
fn is_installation(prefix: &Path, program: &str) -> bool {
    let dir = |rel: &str| prefix.join(rel).is_dir();
    if program == "python" || program.starts_with("python3") {
        std::fs::read_dir(prefix.join("lib"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("python3") && e.path().is_dir())
    } else if program == "node" {
        dir("lib/node_modules") || dir("include/node")
    } else if program == "go" {
        dir("pkg/tool") || dir("src/runtime")
    } else {
        false
    }
}

/// Resolves `program` (e.g. `python3`) on `path_var` as seen from `cwd`;
/// `env_version` is the manager's version variable (`$PYENV_VERSION`), if set.
/// `None` when it is not found, lives in the system directories, or is not
/// an installation of `program` (a `bin` inside its prefix).
pub fn resolve(
    program: &str,
    path_var: &str,
    cwd: &Path,
    env_version: Option<&str>,
) -> Option<Interpreter> {
    // A relative entry would be read against airlock's own cwd, the workspace.
    for dir in path_var.split(':').filter(|d| d.starts_with('/')) {
        let dir = Path::new(dir);
        let candidate = dir.join(program);
        if !is_executable(&candidate) {
            continue;
        }
        if dir.file_name().is_some_and(|n| n == "shims") {
            let root = dir.parent()?;
            if root.join("versions").is_dir() {
                return manager_version_prefix(root, program, cwd, env_version);
            }
            // Some other shim directory (pyenv-virtualenv's): keep looking.
            continue;
        }
        let real = std::fs::canonicalize(&candidate).ok()?;
        if SYSTEM_PREFIXES.iter().any(|p| real.starts_with(p)) {
            return None;
        }
        return installation_of(&real, program);
    }
    None
}

/// The installation the executable `exe` (an executable regular file once
/// links are followed) belongs to: resolved, `<prefix>/bin/<exe>` with
/// `prefix` an installation of `program`.
pub fn installation(exe: &Path, program: &str) -> Option<Interpreter> {
    if !is_executable(exe) {
        return None;
    }
    installation_of(&std::fs::canonicalize(exe).ok()?, program)
}

/// [`installation`] of an already resolved path.
fn installation_of(real: &Path, program: &str) -> Option<Interpreter> {
    let bin = real.parent()?;
    if bin.file_name()? != "bin" {
        return None;
    }
    let prefix = bin.parent()?;
    if prefix.parent().is_none() || !is_installation(prefix, program) {
        return None;
    }
    Some(Interpreter {
        prefix: prefix.to_path_buf(),
        bin: bin.to_path_buf(),
    })
}

/// The start of a small regular file the workspace may hold (a version file,
/// `pyvenv.cfg`): never a FIFO that would block or a device that never ends.
pub fn read_small_file(p: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(p)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut buf = Vec::new();
    f.take(64 * 1024).read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// A version name a manager can only find under its `versions` dir: one path
/// component, never `.`/`..` or a path (pyenv skips those itself).
fn plain_version(v: &str) -> bool {
    !v.is_empty() && v != "." && v != ".." && !v.contains('/') && !v.contains('\0')
}

/// The versions a version file lists: the first word of each line, comments
/// and blank lines skipped, as pyenv reads them.
fn file_versions(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| !w.starts_with('#'))
        .map(str::to_string)
        .collect()
}

fn manager_version_prefix(
    root: &Path,
    program: &str,
    cwd: &Path,
    env_version: Option<&str>,
) -> Option<Interpreter> {
    let file = version_file(program)?;
    let versions: Vec<String> = match env_version.filter(|v| !v.trim().is_empty()) {
        // `PYENV_VERSION=3.11:3.12`
        Some(v) => v.split(':').map(|s| s.trim().to_string()).collect(),
        None => cwd
            .ancestors()
            .find_map(|d| read_small_file(&d.join(file)))
            .or_else(|| read_small_file(&root.join("version")))
            .map(|t| file_versions(&t))?,
    };
    let versions_dir = std::fs::canonicalize(root.join("versions")).ok()?;
    // Several versions: the first one that has the program wins, as in pyenv.
    for v in versions {
        if v == "system" {
            return None;
        }
        if !plain_version(&v) {
            continue;
        }
        let Ok(prefix) = std::fs::canonicalize(versions_dir.join(&v)) else {
            continue;
        };
        // The install itself may be a link (pyenv-virtualenv's envs), but it
        // must stay inside the manager's own tree.
        if prefix == versions_dir || !prefix.starts_with(&versions_dir) {
            continue;
        }
        let bin = prefix.join("bin");
        if is_executable(&bin.join(program)) {
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

    fn exe(p: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A manager root with shims and one genuine version, a victim directory
    /// that looks like an install outside it, and a workspace.
    fn manager(t: &Path, name: &str, program: &str) -> (PathBuf, PathBuf, PathBuf) {
        let root = t.join(name);
        exe(&root.join("shims").join(program));
        exe(&root.join("versions/1.0/bin").join(program));
        std::fs::create_dir_all(root.join("versions/1.0/lib/python3.11")).unwrap();
        let victim = t.join("victim/.local");
        exe(&victim.join("bin").join(program));
        std::fs::create_dir_all(victim.join("lib/python3.11")).unwrap();
        std::fs::create_dir_all(victim.join("share/secrets")).unwrap();
        let ws = t.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        (root, victim, ws)
    }

    #[test]
    fn a_workspace_version_file_cannot_name_a_directory_outside_the_manager() {
        let t = tempfile::tempdir().unwrap();
        let t = t.path().canonicalize().unwrap();
        let (root, victim, ws) = manager(&t, ".pyenv", "python3");
        let path = format!("{}:/usr/bin", root.join("shims").display());
        let rel = format!("../../{}", victim.strip_prefix("/").unwrap().display());
        std::os::unix::fs::symlink(&victim, root.join("versions/linked")).unwrap();
        for bad in [
            victim.display().to_string(),
            rel,
            "..".into(),
            ".".into(),
            "1.0/../../victim/.local".into(),
            "linked".into(),
        ] {
            std::fs::write(ws.join(".python-version"), format!("{bad}\n")).unwrap();
            assert_eq!(
                resolve("python3", &path, &ws, None),
                None,
                "version {bad:?}"
            );
            assert_eq!(resolve("python3", &path, &t, Some(&bad)), None, "{bad:?}");
        }
        // A bad entry is skipped, a later good one still wins, as in pyenv.
        let text = format!("# pinned\n{} extra\n1.0\n", victim.display());
        std::fs::write(ws.join(".python-version"), text).unwrap();
        let got = resolve("python3", &path, &ws, None).unwrap();
        assert_eq!(got.prefix, root.join("versions/1.0"));
        let got = resolve("python3", &path, &t, Some("nope:1.0")).unwrap();
        assert_eq!(got.prefix, root.join("versions/1.0"));
        std::fs::write(ws.join(".python-version"), "system\n1.0\n").unwrap();
        assert_eq!(resolve("python3", &path, &ws, None), None);
    }

    #[test]
    fn a_version_file_that_never_ends_or_blocks_is_not_read() {
        let t = tempfile::tempdir().unwrap();
        let t = t.path().canonicalize().unwrap();
        let (root, _, ws) = manager(&t, ".pyenv", "python3");
        std::fs::write(root.join("version"), "1.0\n").unwrap();
        let path = format!("{}:/usr/bin", root.join("shims").display());
        let want = Some(root.join("versions/1.0"));
        // Skipped as if absent: pyenv's own version file is read instead.
        std::os::unix::fs::symlink("/dev/zero", ws.join(".python-version")).unwrap();
        assert_eq!(resolve("python3", &path, &ws, None).map(|i| i.prefix), want);
        std::fs::remove_file(ws.join(".python-version")).unwrap();
        let fifo = std::ffi::CString::new(ws.join(".python-version").to_str().unwrap()).unwrap();
        // SAFETY: fifo is a live C string.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        assert_eq!(resolve("python3", &path, &ws, None).map(|i| i.prefix), want);
    }

    #[test]
    fn node_and_go_shims_read_their_own_version_files_only() {
        for (mgr, program, file) in [
            (".nodenv", "node", ".node-version"),
            (".goenv", "go", ".go-version"),
        ] {
            let t = tempfile::tempdir().unwrap();
            let t = t.path().canonicalize().unwrap();
            let (root, victim, ws) = manager(&t, mgr, program);
            let path = format!("{}:/usr/bin", root.join("shims").display());
            // Another manager's file means nothing to this one.
            std::fs::write(ws.join(".python-version"), "1.0\n").unwrap();
            assert_eq!(resolve(program, &path, &ws, None), None, "{program}");
            std::fs::write(ws.join(file), format!("{}\n", victim.display())).unwrap();
            assert_eq!(resolve(program, &path, &ws, None), None, "{program}");
            std::fs::write(ws.join(file), "1.0\n").unwrap();
            let got = resolve(program, &path, &ws, None).unwrap();
            assert_eq!(got.prefix, root.join("versions/1.0"), "{program}");
        }
    }

    #[test]
    fn only_an_installation_has_its_prefix_shown() {
        let t = tempfile::tempdir().unwrap();
        let t = t.path().canonicalize().unwrap();
        // A lone executable in a home's bin: the home is not an installation.
        exe(&t.join("home/bin/python3"));
        let path = format!("{}:/usr/bin", t.join("home/bin").display());
        assert_eq!(resolve("python3", &path, &t, None), None);
        // uv's link into its managed install shows that install only.
        let install = t.join("home/.local/share/uv/python/cpython-3.12/");
        exe(&install.join("bin/python3.12"));
        std::fs::create_dir_all(install.join("lib/python3.12")).unwrap();
        std::fs::create_dir_all(t.join("home/.local/bin")).unwrap();
        std::os::unix::fs::symlink(
            install.join("bin/python3.12"),
            t.join("home/.local/bin/python3"),
        )
        .unwrap();
        let path = format!("{}:/usr/bin", t.join("home/.local/bin").display());
        let got = resolve("python3", &path, &t, None).unwrap();
        assert_eq!(got.prefix, install.canonicalize().unwrap());
    }
}
