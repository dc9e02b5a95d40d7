//! Step 1, the workspace boundary: where a path really points, with `..` and
//! symlinks resolved on the real filesystem.

mod entry_cache;

use crate::load::is_normal_absolute;
use crate::shell::Access;
use entry_cache::{Entry, Stamp};
use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::path::{Component, Path, PathBuf};

/// What is left of `path` after `prefix`, as [`Path::strip_prefix`] gives it.
/// The gate's paths are nearly always normal absolute paths, and for those
/// comparing bytes at a `/` gives the same answer as comparing components,
/// for a fraction of the work.
fn strip_within<'p>(path: &'p Path, prefix: &Path) -> Option<&'p Path> {
    use std::os::unix::ffi::OsStrExt;
    if !(is_normal_absolute(path) && is_normal_absolute(prefix)) {
        return path.strip_prefix(prefix).ok();
    }
    let (p, q) = (path.as_os_str().as_bytes(), prefix.as_os_str().as_bytes());
    let rest = p.strip_prefix(q)?;
    let rest = match rest {
        [] => rest,
        // The root's own bytes end in the `/`.
        _ if q == b"/" => rest,
        [b'/', rest @ ..] => rest,
        _ => return None,
    };
    Some(Path::new(std::ffi::OsStr::from_bytes(rest)))
}

/// [`Path::starts_with`], by way of [`strip_within`].
fn within(path: &Path, prefix: &Path) -> bool {
    strip_within(path, prefix).is_some()
}

/// Paths that exist only inside the sandbox (its private `/tmp`, the minimal
/// `/dev`), so naming them never reaches the host.
fn sandbox_private(p: &Path) -> bool {
    // A normal path equals a device's path exactly when its bytes do.
    let device = |d: &&str| match is_normal_absolute(p) {
        true => p.as_os_str() == *d,
        false => p == Path::new(d),
    };
    within(p, Path::new("/tmp"))
        || within(p, Path::new(SANDBOX_HOME))
        || within(p, Path::new("/dev/fd"))
        || SANDBOX_DEVICES.iter().any(device)
}

/// The run's own home (airlock-sandbox's `SANDBOX_HOME`): an empty tmpfs made
/// for each run, like its `/tmp`.
pub const SANDBOX_HOME: &str = "/home/airlock";

/// The devices of the sandbox's minimal `/dev`.
const SANDBOX_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
];

/// For a path under `/tmp`, its first component there (`/tmp/build` for
/// `/tmp/build/ws`).
fn tmp_top(p: &Path) -> Option<PathBuf> {
    let rest = p.strip_prefix("/tmp").ok()?;
    let first = rest.components().next()?;
    Some(Path::new("/tmp").join(first))
}

/// A program's name without its version: `python3.11` and `python3` are `python`.
fn unversioned(name: &str) -> &str {
    name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
}

/// Program paths that name the sandbox's read-only system directories.
pub fn system_program(p: &Path) -> bool {
    ["/usr/", "/bin/", "/sbin/", "/lib/"]
        .iter()
        .any(|d| p.starts_with(d))
}

/// The real path of the workspace root, with the root's metadata (read now).
/// The last answer is kept: a server judges many requests against one root,
/// and realpath costs a readlink per component. It is re-checked cheaply: the
/// cached real path must still be a directory whose metadata matches the root's.
fn real_root(root: &Path) -> (PathBuf, Option<std::fs::Metadata>) {
    use std::os::unix::fs::MetadataExt;
    use std::sync::Mutex;
    static LAST: Mutex<Option<(PathBuf, PathBuf, u64, u64)>> = Mutex::new(None);
    let Ok(meta) = std::fs::metadata(root) else {
        return (root.to_path_buf(), None);
    };
    if let Ok(guard) = LAST.lock() {
        if let Some((r, real, dev, ino)) = guard.as_ref() {
            if r == root && *dev == meta.dev() && *ino == meta.ino() {
                return (real.clone(), Some(meta));
            }
        }
    }
    let real = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    if let Ok(mut guard) = LAST.lock() {
        *guard = Some((root.to_path_buf(), real.clone(), meta.dev(), meta.ino()));
    }
    (real, Some(meta))
}

/// Linux's `PATH_MAX`: the kernel refuses a path this long or longer.
pub(crate) const PATH_MAX: usize = 4096;

/// `..` on a normal absolute path held as bytes, as [`PathBuf::pop`] does it:
/// the last component goes, `/` stays `/`. Costs the last component's length.
fn pop_component(cur: &mut Vec<u8>) {
    match cur.iter().rposition(|&b| b == b'/') {
        Some(0) => cur.truncate(1),
        Some(i) => cur.truncate(i),
        None => {}
    }
}

/// `info/attributes` of a git directory, what git obeys in it.
const INFO_ATTRIBUTES: &str =
    "a git directory's info/attributes (it names the filter and diff drivers git runs)";

/// What a path inside a workspace is to git when git obeys it (see
/// [`Boundary::git_metadata`]).
fn git_obeys(rel: &Path) -> Option<&'static str> {
    let comps: Vec<&std::ffi::OsStr> = rel.iter().collect();
    let last = comps.last()?.to_str().unwrap_or("");
    if last == ".git" {
        return Some("a `.git` gitfile or repository");
    }
    let Some(inside) = comps[..comps.len() - 1].iter().rposition(|c| *c == ".git") else {
        return (last == "HEAD").then_some(
            "a `HEAD`, which beside `objects` and `refs` makes its directory a repository whose `config` git obeys",
        );
    };
    let under = &comps[inside + 1..];
    if under.iter().any(|c| *c == "hooks") {
        return Some("a git hook");
    }
    if under.len() == 2 && under[0] == "info" && last == "attributes" {
        return Some(INFO_ATTRIBUTES);
    }
    match last {
        "config" | "config.worktree" => {
            Some("a git config (core.fsmonitor, core.pager and aliases run programs)")
        }
        "commondir" | "gitdir" => {
            Some("a pointer to another git directory, whose config and hooks git then obeys")
        }
        _ => None,
    }
}

/// What git obeys at `rel` inside a bare repository's directory (its
/// `config`, `hooks/`, `commondir`), as inside a `.git`.
pub(crate) fn bare_git_obeys(rel: &Path) -> Option<&'static str> {
    let mut comps = rel.iter();
    let first = comps.next()?.to_str().unwrap_or("");
    let second = comps.next();
    let only = second.is_none();
    match first {
        "hooks" => Some("a git hook of a bare repository"),
        "info" if second.is_some_and(|s| s == "attributes") && comps.next().is_none() => {
            Some(INFO_ATTRIBUTES)
        }
        "config" | "config.worktree" if only => Some(
            "a bare repository's git config (core.fsmonitor, core.pager and aliases run programs)",
        ),
        "commondir" | "gitdir" if only => {
            Some("a pointer to another git directory, whose config and hooks git then obeys")
        }
        _ => None,
    }
}

/// The bare repository on disk that holds `path` (a directory with `HEAD`,
/// `objects/` and `refs/`, as git tells one), below `root`.
fn bare_repository_of(path: &Path, root: &Path) -> Option<PathBuf> {
    path.ancestors()
        .skip(1)
        .take_while(|a| a.starts_with(root) && *a != root)
        .find(|a| a.join("HEAD").is_file() && a.join("objects").is_dir() && a.join("refs").is_dir())
        .map(Path::to_path_buf)
}

#[cfg(test)]
thread_local! {
    /// Bytes of path the boundary's walk built on this thread: what it started
    /// from, and each component it added (tests bound the work a decision does;
    /// building each step's path afresh made this the square of the depth).
    pub static BUILT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts `n` bytes of path built (tests only).
#[inline]
fn built(_n: usize) {
    #[cfg(test)]
    BUILT.with(|v| v.set(v.get() + _n));
}

/// Where a walk through a path stopped, enough to go on from there.
#[derive(Clone)]
struct Walk {
    /// The path walked so far, as bytes: always a normal absolute path.
    cur: Vec<u8>,
    /// `cur`'s stamp, when `cur` is a directory looked at in this decision.
    stamp: Option<Stamp>,
    /// Symlinks followed so far (the kernel gives up past 40).
    links: u32,
    /// False once a component was missing: the rest is taken literally.
    exists: bool,
    /// The walk ended early (a symlink loop, an unreadable link): `cur` is
    /// the answer for this path and for anything under it.
    stopped: bool,
}

impl Walk {
    fn path(&self) -> PathBuf {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(OsStr::from_bytes(&self.cur))
    }
}

pub struct Boundary<'p> {
    root_lexical: PathBuf,
    root_real: PathBuf,
    /// The real root's stamp, when it is settled (see [`entry_cache`]).
    root_stamp: Option<Stamp>,
    read: Vec<&'p Path>,
    write: Vec<&'p Path>,
    /// `workspace.protect`, relative to the root.
    protect_relative: &'p [PathBuf],
    /// `workspace.protect` under the real root, once a write asks for it.
    protect: std::cell::OnceCell<Vec<PathBuf>>,
    /// For a root under `/tmp`, the host directories there it lives in (see
    /// [`Boundary::sandbox_private`]), once a path there asks for them.
    root_tmp_tops: std::cell::OnceCell<Vec<PathBuf>>,
    /// When this decision began (the reference for settled directories).
    decision_start: std::time::SystemTime,
    /// Resolutions already made for this decision (compounds repeat paths).
    /// Keyed by the bytes of the path: hashing a `Path` walks its components.
    /// With where each walk stopped, so that `dir/name` continues from `dir`.
    memo: std::cell::RefCell<std::collections::HashMap<OsString, Walk>>,
    /// Checks already made: (is_write, cwd NUL text) → the outside path, if any.
    checked: std::cell::RefCell<CheckMemo>,
}

type CheckMemo = std::collections::HashMap<(bool, OsString), Option<PathBuf>>;

/// `text` used from `cwd`, as one path.
pub(crate) fn joined(cwd: &Path, text: &str) -> PathBuf {
    if text.starts_with('/') {
        PathBuf::from(text)
    } else if text == "." {
        cwd.to_path_buf()
    } else {
        cwd.join(text)
    }
}

/// Why a path is not allowed.
pub struct Outside {
    pub resolved: PathBuf,
}

impl<'p> Boundary<'p> {
    /// `read` and `write` name paths outside the root that may be used so.
    pub fn new(
        root: &Path,
        read: Vec<&'p Path>,
        write: Vec<&'p Path>,
        protect: &'p [PathBuf],
    ) -> Self {
        // Taken before any metadata is read: what changed after it is not settled.
        let decision_start = std::time::SystemTime::now();
        let root_lexical = crate::load::absolute_lexical(root);
        let (root_real, root_meta) = real_root(&root_lexical);
        let root_stamp = root_meta
            .as_ref()
            .and_then(|m| Stamp::settled(m, decision_start));
        Boundary {
            root_tmp_tops: Default::default(),
            root_lexical,
            root_real,
            root_stamp,
            decision_start,
            read,
            write,
            protect_relative: protect,
            protect: Default::default(),
            memo: Default::default(),
            checked: Default::default(),
        }
    }

    /// A sandbox-private path, unless it lies in the host tree the workspace
    /// itself lives in: with the root at `/tmp/build/ws`, `../secret` is the
    /// host's `/tmp/build/secret`, outside the boundary, not the sandbox's `/tmp`.
    fn sandbox_private(&self, p: &Path) -> bool {
        if !sandbox_private(p) {
            return false;
        }
        let tops = self.root_tmp_tops.get_or_init(|| {
            [&self.root_lexical, &self.root_real]
                .iter()
                .filter_map(|root| tmp_top(root))
                .collect()
        });
        tops.iter().all(|top| !within(p, top))
    }

    /// A write into a protected path (`.git/hooks`): the protected path, if so.
    pub fn protected(&self, cwd: &Path, text: &str) -> Option<PathBuf> {
        let resolved = self.resolve(&joined(cwd, text));
        let protect = self.protect.get_or_init(|| {
            self.protect_relative
                .iter()
                .map(|p| self.root_real.join(p))
                .collect()
        });
        protect.iter().find(|p| within(&resolved, p)).cloned()
    }

    /// Where `text` lands inside the workspace, and what it is to git, when
    /// git run there would obey it as configuration: a `.git` (gitfile or
    /// repository), a config, a hook, a `commondir` or `gitdir` pointer, at
    /// any depth (a nested repository's `.git/config`). Lock files, the index
    /// and objects are git's data and not named here.
    pub fn git_metadata(&self, cwd: &Path, text: &str) -> Option<(PathBuf, &'static str)> {
        let resolved = self.resolve(&joined(cwd, text));
        let rel = resolved.strip_prefix(&self.root_real).ok()?;
        if let Some(what) = git_obeys(rel) {
            return Some((rel.to_path_buf(), what));
        }
        // A bare repository already in the workspace (a test fixture, a
        // `*.git` mirror): git run there obeys its config and hooks.
        let repo = bare_repository_of(&resolved, &self.root_real)?;
        let what = bare_git_obeys(resolved.strip_prefix(&repo).ok()?)?;
        Some((rel.to_path_buf(), what))
    }

    /// Whether `text` used from `cwd` lands inside the workspace root.
    pub fn inside_root(&self, cwd: &Path, text: &str) -> bool {
        within(&self.resolve(&joined(cwd, text)), &self.root_real)
    }

    /// Where `path` lands inside the workspace when that is in a `.git`
    /// (a repository's metadata or a gitfile), at any depth.
    pub(crate) fn in_git_dir(&self, path: &Path) -> Option<PathBuf> {
        let resolved = self.resolve(path);
        let rel = resolved.strip_prefix(&self.root_real).ok()?;
        rel.iter().any(|c| c == ".git").then(|| rel.to_path_buf())
    }

    /// Check the program a segment runs, given as a path. Besides what a read
    /// may reach, a path that resolves to the same program in the sandbox's
    /// read-only system directories is fine: a venv's `bin/python` is a symlink
    /// to `/usr/bin/python3.11`, which every sandbox shows anyway. The name must
    /// stay the same program (its version digits aside), so `./python3` pointing
    /// at `/usr/bin/curl` is still refused here rather than judged as python3.
    pub fn check_program(&self, cwd: &Path, text: &str) -> Result<(), Outside> {
        let outside = match self.check(cwd, text, Access::Read) {
            Ok(()) => return Ok(()),
            Err(o) => o,
        };
        let name = |p: &Path| {
            p.file_name()
                .and_then(|n| n.to_str())
                .map(unversioned)
                .unwrap_or("")
                .to_string()
        };
        let written = name(Path::new(text));
        if system_program(&outside.resolved)
            && !written.is_empty()
            && written == name(&outside.resolved)
        {
            return Ok(());
        }
        Err(outside)
    }

    /// Check `text` (as the command wrote it) used from `cwd`.
    pub fn check(&self, cwd: &Path, text: &str, access: Access) -> Result<(), Outside> {
        // Neither part can hold a NUL (the gate refuses those before analysis).
        let mut key = OsString::with_capacity(cwd.as_os_str().len() + 1 + text.len());
        key.push(cwd.as_os_str());
        key.push("\0");
        key.push(text);
        let key = (access == Access::Write, key);
        if let Some(hit) = self.checked.borrow().get(&key) {
            return match hit {
                None => Ok(()),
                Some(resolved) => Err(Outside {
                    resolved: resolved.clone(),
                }),
            };
        }
        let result = self.check_uncached(cwd, text, access);
        let mut checked = self.checked.borrow_mut();
        if checked.len() < 4096 {
            let value = result.as_ref().err().map(|o| o.resolved.clone());
            checked.insert(key, value);
        }
        result
    }

    fn check_uncached(&self, cwd: &Path, text: &str, access: Access) -> Result<(), Outside> {
        let joined = joined(cwd, text);
        let lexical = crate::load::absolute_lexical(&joined);
        // Inside the root, symlinks must be followed even when the workspace
        // itself lives under /tmp.
        let under_root = within(&lexical, &self.root_lexical) || within(&lexical, &self.root_real);
        if !under_root && self.sandbox_private(&lexical) {
            return Ok(());
        }
        let resolved = self.resolve(&joined);
        if within(&resolved, &self.root_real) || self.sandbox_private(&resolved) {
            return Ok(());
        }
        let named = |list: &[&Path]| {
            list.iter()
                .any(|p| within(&resolved, p) || within(&lexical, p))
        };
        if named(&self.write) || (access == Access::Read && named(&self.read)) {
            return Ok(());
        }
        Err(Outside { resolved })
    }

    /// Resolve symlinks component by component, as the kernel would; the part
    /// that does not exist yet is taken literally.
    pub(crate) fn resolve(&self, path: &Path) -> PathBuf {
        if let Some(hit) = self.memo.borrow().get(path.as_os_str()) {
            return hit.path();
        }
        // `dir/name` after `dir` was walked (a compound's `cd b; cd b; …`, or a
        // path used from the cwd just checked): only `name` is left to walk,
        // so a run of such steps costs its length, not the square of it.
        let continued = match (path.parent(), path.file_name()) {
            (Some(dir), Some(name))
                if strip_within(dir, &self.root_lexical).is_some()
                    == strip_within(path, &self.root_lexical).is_some() =>
            {
                let kept = self.memo.borrow().get(dir.as_os_str()).cloned();
                kept.map(|w| self.walk(w, Path::new(name)))
            }
            _ => None,
        };
        let walk = match continued {
            Some(w) => w,
            None => {
                let (start, rest) = self.start(path);
                self.walk(start, rest)
            }
        };
        let resolved = walk.path();
        let mut memo = self.memo.borrow_mut();
        if memo.len() < 4096 {
            memo.insert(path.as_os_str().to_os_string(), walk);
        }
        resolved
    }

    /// Where the walk of `path` starts: the real root with its stamp when the
    /// path is written under the root, else `/`; and what is left to walk.
    fn start<'a>(&self, path: &'a Path) -> (Walk, &'a Path) {
        use std::os::unix::ffi::OsStrExt;
        let (start, rest, stamp): (&Path, &Path, Option<Stamp>) =
            match strip_within(path, &self.root_lexical) {
                Some(rest) => (&self.root_real, rest, self.root_stamp),
                None => (Path::new("/"), path.strip_prefix("/").unwrap_or(path), None),
            };
        built(start.as_os_str().len());
        let walk = Walk {
            cur: start.as_os_str().as_bytes().to_vec(),
            stamp,
            links: 0,
            exists: true,
            stopped: false,
        };
        (walk, rest)
    }

    #[cfg(test)]
    fn resolve_uncached(&self, path: &Path) -> PathBuf {
        let (start, rest) = self.start(path);
        self.walk(start, rest).path()
    }

    /// Resolve symlinks component by component, as the kernel would, from
    /// `walk` through the components of `rest`.
    fn walk(&self, walk: Walk, rest: &Path) -> Walk {
        fn as_path(b: &[u8]) -> &Path {
            use std::os::unix::ffi::OsStrExt;
            Path::new(OsStr::from_bytes(b))
        }
        use std::os::unix::ffi::OsStrExt;
        if walk.stopped {
            return walk;
        }
        let Walk {
            mut cur,
            mut stamp,
            mut links,
            mut exists,
            ..
        } = walk;
        let stop = |cur: Vec<u8>, stamp, links, exists| Walk {
            cur,
            stamp,
            links,
            exists,
            stopped: true,
        };
        // Components still to walk, last first; a symlink's target adds its own.
        let parent = OsStr::new("..");
        let mut pending: Vec<Cow<'_, OsStr>> = rest
            .components()
            .rev()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(Cow::Borrowed(s)),
                Component::ParentDir => Some(Cow::Borrowed(parent)),
                _ => None,
            })
            .collect();
        while let Some(c) = pending.pop() {
            if *c == *parent {
                pop_component(&mut cur);
                // Only a directory reached by a fresh look has a stamp.
                stamp = None;
                continue;
            }
            let dir_len = cur.len();
            if cur != b"/" {
                cur.push(b'/');
            }
            cur.extend_from_slice(c.as_bytes());
            built(c.len() + 1);
            if !exists {
                stamp = None;
                continue;
            }
            // The kernel refuses a path of PATH_MAX bytes or more
            // (ENAMETOOLONG) before it walks any of it, as the lookup below
            // would: an error that is not "not found" makes the rest missing.
            if cur.len() >= PATH_MAX {
                exists = false;
                stamp = None;
                continue;
            }
            // `stamp` is the directory's (`cur[..dir_len]`), so a name kept
            // under it still holds.
            let dir = as_path(&cur[..dir_len]);
            let entry = match stamp.and_then(|s| entry_cache::get(dir, s, &c)) {
                Some(kept) => kept,
                None => match std::fs::symlink_metadata(as_path(&cur)) {
                    Ok(m) if m.file_type().is_symlink() => {
                        match std::fs::read_link(as_path(&cur)) {
                            Ok(target) => self.keep(
                                as_path(&cur[..dir_len]),
                                stamp,
                                &c,
                                Entry::Symlink(target),
                            ),
                            Err(_) => return stop(cur, stamp, links, exists),
                        }
                    }
                    Ok(m) if m.file_type().is_dir() => {
                        stamp = Stamp::settled(&m, self.decision_start);
                        continue;
                    }
                    Ok(_) => self.keep(dir, stamp, &c, Entry::NotDirectory),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        self.keep(dir, stamp, &c, Entry::Missing)
                    }
                    Err(_) => Entry::Missing,
                },
            };
            match entry {
                Entry::Symlink(target) => {
                    links += 1;
                    if links > 40 {
                        return stop(cur, stamp, links, exists);
                    }
                    // The link's own name is not part of where it leads.
                    cur.truncate(dir_len);
                    if target.is_absolute() {
                        cur.clear();
                        cur.push(b'/');
                        stamp = None;
                    }
                    for tc in target.components().rev() {
                        match tc {
                            Component::Normal(s) => pending.push(Cow::Owned(s.to_os_string())),
                            Component::ParentDir => pending.push(Cow::Borrowed(parent)),
                            _ => {}
                        }
                    }
                    continue;
                }
                Entry::NotDirectory => {}
                Entry::Missing => exists = false,
            }
            stamp = None;
        }
        Walk {
            cur,
            stamp,
            links,
            exists,
            stopped: false,
        }
    }

    /// Keep what `name` in `dir` is for later decisions, if `dir` is settled.
    fn keep(
        &self,
        dir: &Path,
        stamp: Option<Stamp>,
        name: &std::ffi::OsStr,
        entry: Entry,
    ) -> Entry {
        if let Some(s) = stamp {
            entry_cache::put(dir, s, name, entry.clone());
        }
        entry
    }
}

#[cfg(test)]
mod tests {
    use crate::{decide, load, Decision, Request, Step, Verdict};
    use std::os::unix::fs::symlink;
    use std::path::Path;

    fn judge(root: &Path, command: &str) -> Decision {
        decide(&load::builtin_default(root), &Request::shell(command, root))
    }

    /// The byte comparisons give what the component comparisons give, on
    /// normal paths and on every other kind too.
    #[test]
    fn byte_comparisons_agree_with_components() {
        const PATHS: &[&str] = &[
            "/",
            "/tmp",
            "/tmp/",
            "/tmpx",
            "/tmp/a",
            "/tmp//a",
            "/tmp/./a",
            "/tmp/../etc",
            "/w",
            "/w/a",
            "/w/ab",
            "/wa",
            "/w/a/",
            "/w/a/b",
            "/w//a",
            "w/a",
            "",
            ".",
            "/dev/fd",
            "/dev/fd/3",
            "/dev/fdx",
            "/dev/null",
            "/dev/null/x",
            "/dev//null",
            "/dev/nullx",
            "/home/airlock",
            "/home/airlock/.gitconfig",
            "/home/airlockx",
            "/home",
        ];
        for path in PATHS.iter().map(Path::new) {
            for prefix in PATHS.iter().map(Path::new) {
                assert_eq!(
                    super::strip_within(path, prefix),
                    path.strip_prefix(prefix).ok(),
                    "{path:?} after {prefix:?}"
                );
            }
            let by_components = path == Path::new("/tmp")
                || path.starts_with("/tmp/")
                || path.starts_with(super::SANDBOX_HOME)
                || super::SANDBOX_DEVICES.iter().any(|d| path == Path::new(d))
                || path.starts_with("/dev/fd/");
            assert_eq!(super::sandbox_private(path), by_components, "{path:?}");
        }
    }

    /// A venv's interpreter is a symlink out of the workspace into the system
    /// directories: running it is running the system's python, so it passes
    /// step 1. A symlink that renames another system program does not.
    #[test]
    fn venv_interpreters_resolve_to_the_system_program() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let bin = root.join(".venv/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let Some(system_python) = ["/usr/bin/python3", "/bin/sh"]
            .iter()
            .map(Path::new)
            .find(|p| p.exists())
        else {
            return;
        };
        let real = system_python.canonicalize().unwrap();
        let real_name = real.file_name().unwrap().to_str().unwrap().to_string();
        symlink(&real, bin.join(&real_name)).unwrap();
        symlink(&real_name, bin.join("python")).unwrap();
        symlink(&real_name, bin.join("python3")).unwrap();
        symlink("/usr/bin/env", bin.join("python3x")).unwrap();
        symlink("/usr/bin/env", root.join("ls")).unwrap();
        std::fs::write(root.join("fix-things.sh"), "#!/bin/sh\n").unwrap();
        let venv = |program: &str| judge(&root, &format!("{program} -c 1"));
        if real_name.starts_with("python") {
            for p in [
                ".venv/bin/python",
                ".venv/bin/python3",
                "./.venv/bin/python",
            ] {
                let d = venv(p);
                assert_eq!(d.decision, Verdict::Allow, "{p}: {d:?}");
            }
            let abs = format!("{}/.venv/bin/python", root.display());
            assert_eq!(venv(&abs).decision, Verdict::Allow);
        }
        // Another system program behind an allowlisted name stays outside.
        for p in [".venv/bin/python3x", "./ls"] {
            let d = judge(&root, p);
            assert_eq!(d.decision, Verdict::Deny, "{p}: {d:?}");
            assert_eq!(d.step, Step::Workspace, "{p}: {d:?}");
        }
        assert_eq!(super::unversioned("python3.11"), "python");
        assert_eq!(super::unversioned("pip3"), "pip");
        assert_eq!(super::unversioned("2to3"), "2to");
    }

    fn hits() -> usize {
        super::entry_cache::HITS.with(|h| h.get())
    }

    fn settle() {
        std::thread::sleep(super::entry_cache::SETTLE + std::time::Duration::from_millis(300));
    }

    /// What the boundary keeps across decisions never outlives a change of the
    /// tree: a directory, a file, a missing name and a symlink, each swapped for
    /// a symlink out of the workspace between two decisions, are denied at once
    /// and still once the change is itself settled.
    #[test]
    fn kept_entries_never_outlive_a_swap_to_outside() {
        let outer = tempfile::Builder::new()
            .prefix("airlock-entry-cache-")
            .tempdir()
            .unwrap();
        let root = outer.path().join("ws");
        let outside = outer.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("file"), "canary").unwrap();
        // Each kept name in a directory of its own, so that no other lookup in
        // that directory can refresh what was kept before it is read.
        for dir in ["a", "b", "c", "d/sub", "e/sub"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::write(root.join("plain"), "inside").unwrap();
        std::fs::write(root.join("a/plain"), "inside").unwrap();
        std::fs::write(root.join("c/target"), "inside").unwrap();
        symlink("target", root.join("c/link")).unwrap();
        std::fs::write(root.join("d/sub/file"), "inside").unwrap();
        let root = root.canonicalize().unwrap();
        let outside = outside.canonicalize().unwrap();
        let cases = [
            "cat plain",
            "cat a/plain",
            "cat b/missing",
            "cat c/link",
            "cat d/sub/file",
            "cat e/sub/missing",
        ];
        settle();

        for command in cases {
            let first = judge(&root, command);
            assert_eq!(first.decision, Verdict::Allow, "{command}: {first:?}");
        }
        // The same decisions again are answered from what was kept.
        let before = hits();
        for command in cases {
            assert_eq!(judge(&root, command).decision, Verdict::Allow, "{command}");
        }
        assert!(
            hits() - before >= cases.len(),
            "only {} lookups were answered from the cache",
            hits() - before
        );

        // Swap each for a symlink out of the workspace: a file, a missing
        // name, a symlink's target, a directory on the way.
        let out_file = outside.join("file");
        std::fs::remove_file(root.join("plain")).unwrap();
        symlink(&out_file, root.join("plain")).unwrap();
        std::fs::remove_file(root.join("a/plain")).unwrap();
        symlink(&out_file, root.join("a/plain")).unwrap();
        symlink(&out_file, root.join("b/missing")).unwrap();
        std::fs::remove_file(root.join("c/link")).unwrap();
        symlink(&out_file, root.join("c/link")).unwrap();
        std::fs::rename(root.join("d/sub"), root.join("d/sub.old")).unwrap();
        symlink(&outside, root.join("d/sub")).unwrap();
        std::fs::rename(root.join("e/sub"), root.join("e/sub.old")).unwrap();
        symlink(&outside, root.join("e/sub")).unwrap();

        let denied = |when: &str| {
            for command in cases {
                let d = judge(&root, command);
                assert_eq!(d.decision, Verdict::Deny, "{when}, {command}: {d:?}");
                assert_eq!(d.step, Step::Workspace, "{when}, {command}: {d:?}");
                assert!(
                    d.reason.contains(&*outside.to_string_lossy()),
                    "{when}, {command}: {}",
                    d.reason
                );
            }
        };
        denied("right after the swap");
        settle();
        denied("once the swap is settled");
        denied("from what was kept after the swap");
    }
    /// Deciding a 64 KiB `cd b/b/…/b; ls` builds a bounded number of bytes of
    /// path per byte of command: the work is linear in the command's length (it
    /// was quadratic: each step copied the whole path walked so far, 1 GiB
    /// for this command).
    #[test]
    fn a_deep_path_costs_work_linear_in_its_length() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        // Part of the path exists, so the walk looks at real directories first.
        std::fs::create_dir_all(root.join("b/b/b/b/b/b/b/b")).unwrap();
        let built = || super::BUILT.with(|v| v.get());
        for bytes in [4 * 1024, 16 * 1024, 64 * 1024] {
            let depth = (bytes - "cd ; ls".len()).div_ceil(2);
            let command = format!("cd {}; ls", "b/".repeat(depth).trim_end_matches('/'));
            let before = built();
            let d = judge(&root, &command);
            let work = built() - before;
            assert_eq!(d.decision, Verdict::Allow, "{bytes}: {}", d.reason);
            // The cwd is walked for `cd` and for `ls`, at most once each.
            let bound = 2 * (command.len() + root.as_os_str().len()) + 64;
            assert!(
                work <= bound,
                "{bytes} bytes ({depth} components): {work} bytes of path built, over {bound}"
            );
        }
    }

    /// The walk gives what the walk before it gave (which built each step's
    /// path afresh): symlinks relative and absolute, `..` after a symlink,
    /// missing tails, files in the middle, loops, and paths past PATH_MAX.
    #[test]
    fn the_walk_resolves_as_the_kernel_would() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let out = outside.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        std::fs::write(root.join("a/file"), "x").unwrap();
        symlink("b/c", root.join("a/rel")).unwrap();
        symlink(&out, root.join("a/abs")).unwrap();
        symlink("../..", root.join("a/b/up")).unwrap();
        symlink("loop", root.join("loop")).unwrap();
        symlink("a/rel/../../a/abs", root.join("chain")).unwrap();
        let long = "d/".repeat(2100);
        // Real directories on both sides of PATH_MAX: the kernel refuses to
        // look at the far side by its absolute path (ENAMETOOLONG), and so
        // does the walk.
        let name = "n".repeat(200);
        let near = root.join([name.as_str(); 19].join("/"));
        std::fs::create_dir_all(&near).unwrap();
        let made = std::process::Command::new("mkdir")
            .args(["-p", &[name.as_str(); 3].join("/")])
            .current_dir(&near)
            .status()
            .unwrap();
        assert!(made.success());
        let far = format!("{}/x", [name.as_str(); 22].join("/"));
        assert!(root.join(&far).as_os_str().len() > super::PATH_MAX);
        let b = super::Boundary::new(&root, vec![], vec![], &[]);
        let cases = [
            "a",
            "a/b/c",
            "a/rel",
            "a/rel/..",
            "a/rel/../..",
            "a/abs",
            "a/abs/x/y",
            "a/b/up",
            "a/b/up/a/rel",
            "a/file/x",
            "missing/x/..",
            "loop/x",
            "chain/z",
            "../..",
            "a/../../x",
            long.as_str(),
            far.as_str(),
        ];
        for text in cases {
            let p = super::joined(&root, text);
            assert_eq!(b.resolve_uncached(&p), reference(&p), "{text}");
            // Walked one component at a time, each continuing from the walk
            // of its parent (kept for the decision), it gives the same.
            let fresh = super::Boundary::new(&root, vec![], vec![], &[]);
            let mut prefix = root.clone();
            for c in Path::new(text).components() {
                prefix.push(c);
                assert_eq!(fresh.resolve(&prefix), reference(&prefix), "{prefix:?}");
            }
        }
        assert_eq!(
            b.resolve_uncached(&root.join("a/rel")),
            root.join("a/b/c"),
            "a relative symlink"
        );
        assert_eq!(b.resolve_uncached(&root.join("a/abs/x")), out.join("x"));
    }

    /// The walk as it was before it was made linear, less the cache.
    fn reference(path: &Path) -> std::path::PathBuf {
        use std::path::{Component, PathBuf};
        let mut cur = PathBuf::from("/");
        let mut pending: Vec<std::ffi::OsString> = path
            .components()
            .rev()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(s.to_os_string()),
                Component::ParentDir => Some("..".into()),
                _ => None,
            })
            .collect();
        let (mut links, mut exists) = (0, true);
        while let Some(c) = pending.pop() {
            if c == ".." {
                cur.pop();
                continue;
            }
            let next = cur.join(&c);
            if exists {
                match std::fs::symlink_metadata(&next) {
                    Ok(m) if m.file_type().is_symlink() => {
                        let Ok(target) = std::fs::read_link(&next) else {
                            return next;
                        };
                        links += 1;
                        if links > 40 {
                            return next;
                        }
                        if target.is_absolute() {
                            cur = PathBuf::from("/");
                        }
                        for tc in target.components().rev() {
                            match tc {
                                Component::Normal(s) => pending.push(s.to_os_string()),
                                Component::ParentDir => pending.push("..".into()),
                                _ => {}
                            }
                        }
                        continue;
                    }
                    Ok(m) if m.file_type().is_dir() => {
                        cur = next;
                        continue;
                    }
                    Ok(_) => {}
                    Err(_) => exists = false,
                }
            }
            cur = next;
        }
        cur
    }
}
