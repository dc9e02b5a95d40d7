//! The `python` preset: the interpreters a workspace venv or pyenv resolves to,
//! read-only, and `. .venv/bin/activate`.
//!
//! A venv's `bin/python` is a symlink to the interpreter it was made from
//! (`pyvenv.cfg` names its `home`). When that lives in the system directories
//! every sandbox sees it already; when it lives under a home directory (pyenv's
//! `~/.pyenv/versions/3.11.7`) that prefix is shown read-only, so the venv's
//! interpreter, its scripts (`.venv/bin/pytest`) and its site-packages in the
//! workspace all work.

use super::{Exposure, Host};
use std::path::{Path, PathBuf};

/// Directories directly under `root` that are venvs (hold a `pyvenv.cfg`).
pub fn workspace_venvs(root: &Path) -> impl Iterator<Item = PathBuf> {
    std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("pyvenv.cfg").is_file())
}

/// The `home = …` of a venv's `pyvenv.cfg`: the bin directory it was made from.
fn venv_home(venv: &Path) -> Option<PathBuf> {
    let cfg = airlock_sandbox::native::interp::read_small_file(&venv.join("pyvenv.cfg"))?;
    cfg.lines()
        .find_map(|line| {
            let (k, v) = line.split_once('=')?;
            (k.trim() == "home").then(|| PathBuf::from(v.trim()))
        })
        // A relative home would be read against airlock's own cwd.
        .filter(|h| h.is_absolute())
}

/// The install prefix to show for a venv whose `pyvenv.cfg` says `home`.
///
/// The workspace writes that file, so `home` is only a hint: it must hold a
/// `python3` (or `python`) that resolves to `<prefix>/bin/…` of a real Python
/// installation (`<prefix>/lib/python3.*`) outside the system directories,
/// and only that prefix is shown. uv's `~/.local/bin/python3`, a link into
/// `~/.local/share/uv/python/cpython-…`, shows that install, never `~/.local`.
fn venv_interpreter_prefix(home: &Path) -> Option<PathBuf> {
    let py = ["python3", "python"].into_iter().find_map(|name| {
        airlock_sandbox::native::interp::installation(&home.join(name), "python3")
    })?;
    if airlock_policy::paths::system_program(&py.bin) {
        return None;
    }
    Some(py.prefix)
}

pub fn exposure(root: &Path, host: &Host) -> Exposure {
    let mut e = Exposure::default();
    for venv in workspace_venvs(root) {
        if let Some(prefix) = venv_home(&venv).and_then(|h| venv_interpreter_prefix(&h)) {
            e.read_if_dir(&prefix);
        }
    }
    if let Some(pyenv) = host.dir("PYENV_ROOT", ".pyenv") {
        e.read_if_dir(&pyenv.join("versions"));
    }
    e.set("PIP_DISABLE_PIP_VERSION_CHECK", "1");
    e.allow = vec![
        vec!["python|python3"],
        vec!["pytest"],
        vec!["pip|pip3", "list|show|freeze|check"],
        // Only a venv's activate script: any other `.`/`source` stays unknown.
        vec![".|source"],
    ];
    e
}
