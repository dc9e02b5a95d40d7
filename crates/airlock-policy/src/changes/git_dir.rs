//! Changes inside, or making, a git directory: which are metadata host git
//! obeys, which delete history, which change what object a name stands for,
//! and which make a plain directory look like a repository.

use super::{approval, escape_bytes, pattern, Classification, EntryType, View};
use super::{GIT_DIR_NAMES, GIT_INDEX_MAX_BYTES, GIT_SAFE};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Whether a file system may take the name `c` for `.git`, as git's
/// `is_ntfs_dotgit` and `is_hfs_dotgit` do: any ASCII case (a
/// case-insensitive work tree: WSL's drvfs, SMB, vfat, casefold
/// directories), with the trailing spaces and dots NTFS drops, an NTFS
/// stream (`.git::$INDEX_ALLOCATION`), NTFS's 8.3 short name `git~1`, and
/// the code points HFS+ ignores (zero-width joiners, direction marks).
pub(super) fn is_dotgit(c: &[u8]) -> bool {
    if c == b".git" {
        return true;
    }
    let hfs_ignored = |ch: char| matches!(ch as u32, 0x200c..=0x200f | 0x202a..=0x202e | 0x206a..=0x206f | 0xfeff);
    let name: Vec<u8> = match std::str::from_utf8(c) {
        Ok(s) => s
            .chars()
            .filter(|ch| !hfs_ignored(*ch))
            .collect::<String>()
            .into_bytes(),
        Err(_) => c.to_vec(),
    };
    let base = name.split(|b| *b == b':').next().unwrap_or(&[]);
    let mut trimmed = base;
    while let Some(rest) = trimmed
        .strip_suffix(b" ")
        .or_else(|| trimmed.strip_suffix(b"."))
    {
        trimmed = rest;
    }
    trimmed.eq_ignore_ascii_case(b".git") || trimmed.eq_ignore_ascii_case(b"git~1")
}

/// Why `rel` is git metadata that needs a person, if it is.
pub(super) fn git_metadata(rel: &Path) -> Option<String> {
    let comps = pattern::normal_components(rel);
    for (i, c) in comps.iter().enumerate() {
        if !is_dotgit(c) {
            continue;
        }
        // Another spelling is `.git` itself on such a file system, where
        // the checks below (which read `.git` as written) would not see it.
        if *c != b".git" {
            return Some(format!(
                "is under `{}`, which a case-insensitive file system (or NTFS's or HFS+'s name rules) takes for `.git`",
                escape_bytes(c)
            ));
        }
        match comps.get(i + 1) {
            None => return Some(
                "is a `.git` file or directory (a gitfile `gitdir:` or a repository, at any depth)"
                    .into(),
            ),
            Some(next) if GIT_SAFE.iter().any(|s| s.as_bytes() == *next) => {}
            Some(next) => {
                return Some(format!(
                    "is under `.git/{}` (only {} are data)",
                    escape_bytes(next),
                    GIT_SAFE.join(", ")
                ))
            }
        }
    }
    None
}

/// What of a repository's history deleting `rel` removes, when `rel` is one
/// of the places git keeps it whole: git's own commands (gc, repack, branch
/// -d) delete objects, packs and refs inside them, never these.
pub(super) fn git_history(rel: &Path) -> Option<&'static str> {
    let comps: Vec<&[u8]> = rel.iter().map(|c| c.as_bytes()).collect();
    let at = comps.iter().rposition(|c| *c == b".git")?;
    Some(match &comps[at + 1..] {
        [b"objects"] => "its object store (every commit, tree and file)",
        [b"objects", b"pack"] => "its packed objects (most commits, trees and files)",
        [b"refs"] => "every branch and tag",
        [b"refs", b"heads"] => "every branch",
        [b"refs", b"tags"] => "every tag",
        [b"packed-refs"] => "its packed branches and tags",
        [b"HEAD"] => "what is checked out (HEAD)",
        [b"logs"] => "the reflogs, from which lost commits are recovered",
        _ => return None,
    })
}

/// A write (not a deletion) inside a `.git` that changes which object a name
/// stands for, or which objects git finds, in ways the loose objects' checks
/// ([`git_objects`]) cannot see: a replace ref, a packed-refs file that
/// gains one, an alternates file or a commit-graph (`objects/info/`),
/// anything under `objects/pack/` (packs and their indexes are not read
/// here), and a `HEAD` that names neither a branch nor an object.
pub(super) fn object_store_write(
    rel: &Path,
    file_type: EntryType,
    view: &dyn View,
    shown: &str,
) -> Option<Classification> {
    let comps: Vec<&[u8]> = rel.iter().map(|c| c.as_bytes()).collect();
    let at = comps.iter().rposition(|c| *c == b".git")?;
    let what = match &comps[at + 1..] {
        [b"refs", b"replace", _, ..] => "a replace ref: host git reads the object it names in place of another everywhere (checkout, reset, diff), so a tree or file the rules never saw would be written into the work tree".to_string(),
        [b"packed-refs"] => {
            let replace = |d: Option<Vec<u8>>| -> Option<Vec<Vec<u8>>> {
                Some(
                    d?.split(|b| *b == b'\n')
                        .filter(|l| l.windows(13).any(|w| w == b" refs/replace"))
                        .map(<[u8]>::to_vec)
                        .collect(),
                )
            };
            let host = replace(view.read_host(rel, GIT_INDEX_MAX_BYTES)).unwrap_or_default();
            match replace(view.read(rel, GIT_INDEX_MAX_BYTES)) {
                Some(now) if now.iter().all(|l| host.contains(l)) => return None,
                Some(_) => "a packed-refs file that names a replace ref the host's does not: host git reads the object such a ref names in place of another everywhere, so a tree or file the rules never saw would be written into the work tree".to_string(),
                None => format!("a packed-refs file that could not be read to look for replace refs (larger than {GIT_INDEX_MAX_BYTES} bytes, or gone)"),
            }
        }
        // (Another type in HEAD's place is a deletion of it: `git_history`.)
        [b"HEAD"] if file_type != EntryType::File => return None,
        [b"HEAD"] => match view.read(rel, 4096) {
            Some(head) if is_git_head(&head) => return None,
            Some(_) => "a HEAD that is neither `ref: refs/…` nor an object name: host git would no longer take the directory for a repository (`git status` fails), and below another repository would work on that one instead".to_string(),
            None => "a HEAD that could not be read to check it (larger than 4096 bytes, or gone)".to_string(),
        },
        [b"objects", b"info", b"packs"] => return None,
        [b"objects", b"info", ..] => "in `objects/info`: an alternates file adds object stores git reads names from, and a commit-graph gives commits' trees without git reading the commits, so a name could stand for objects the rules never saw".to_string(),
        [b"objects", b"pack", ..] => "part of git's packed object store (a pack, its index or a file beside them); packs are not read or checked here, and one could bring any file into a branch or stand in for an object the host has, which `git reset --hard` writes into the work tree".to_string(),
        _ => return None,
    };
    Some(approval(
        "builtin.git_objects",
        format!("`{shown}` is {what}; a person must approve it"),
    ))
}

/// What host git accepts as a `HEAD`: a symbolic ref into `refs/` or an
/// object name (SHA-1 or SHA-256), with one optional newline.
pub(super) fn is_git_head(content: &[u8]) -> bool {
    let line = content.strip_suffix(b"\n").unwrap_or(content);
    let hex = |b: &[u8]| b.iter().all(u8::is_ascii_hexdigit);
    if (line.len() == 40 || line.len() == 64) && hex(line) {
        return true;
    }
    let Some(name) = line.strip_prefix(b"ref: refs/") else {
        return false;
    };
    !name.is_empty()
        && name
            .split(|b| *b == b'/')
            .all(|part| !part.is_empty() && part != b"." && part != b"..")
        && name
            .iter()
            .all(|b| b.is_ascii_graphic() && !b"~^:?*[\\".contains(b))
}

/// `rel` lies inside a `.git` directory (at any depth).
pub(super) fn inside_git_dir(rel: &Path) -> bool {
    let comps: Vec<&[u8]> = rel.iter().map(|c| c.as_bytes()).collect();
    comps[..comps.len().saturating_sub(1)]
        .iter()
        .any(|c| is_dotgit(c))
}

/// `rel` is the work tree's own index, `.git/index` (a nested `.git` is held
/// for a person whole).
pub(super) fn is_top_git_index(rel: &Path) -> bool {
    rel == Path::new(".git/index")
}

/// The view with the index unreadable: a link's target is judged by name.
pub(super) struct NoIndexView<'a>(pub(super) &'a dyn View);

impl View for NoIndexView<'_> {
    fn link(&self, p: &Path) -> Option<PathBuf> {
        self.0.link(p)
    }
    fn exists(&self, p: &Path) -> bool {
        self.0.exists(p)
    }
    fn read_host(&self, p: &Path, max: usize) -> Option<Vec<u8>> {
        self.0.read_host(p, max)
    }
    fn nested_git(&self, dir: &Path) -> Option<PathBuf> {
        self.0.nested_git(dir)
    }
    fn host_has(&self, p: &Path) -> bool {
        self.0.host_has(p)
    }
    fn names(&self, p: &Path) -> Vec<std::ffi::OsString> {
        self.0.names(p)
    }
    fn read_at(&self, p: &Path, offset: u64, len: usize) -> Option<Vec<u8>> {
        self.0.read_at(p, offset, len)
    }
}

/// The directory that `rel` helps make look like a git repository, if any:
/// one of its ancestors (the root included) with `rel` under one of
/// [`GIT_DIR_NAMES`], which in the view has a `HEAD` and objects and refs, or
/// a `commondir`. Inside a `.git` directory [`git_metadata`] rules instead.
pub(super) fn makes_git_dir(rel: &Path, view: &dyn View) -> Option<PathBuf> {
    let comps: Vec<&std::ffi::OsStr> = rel.iter().collect();
    for i in 0..comps.len() {
        let dir: PathBuf = comps[..i].iter().collect();
        if comps[..i].iter().any(|c| is_dotgit(c.as_bytes())) {
            return None;
        }
        if !GIT_DIR_NAMES
            .iter()
            .any(|n| n.as_bytes().eq_ignore_ascii_case(comps[i].as_bytes()))
        {
            continue;
        }
        let has = |name: &str| view.exists(&dir.join(name));
        if has("HEAD") && (has("commondir") || has("objects") || has("refs")) {
            return Some(dir);
        }
    }
    None
}

/// Why a file that host git would write from an index or a commit at `path`
/// needs a person by its name alone: a `HEAD` or a `commondir` is what
/// makes a directory a repository (beside `objects` and `refs`) or a
/// worktree's git directory (beside a `HEAD`), whose `config` git obeys;
/// its siblings may come in another commit, or be there already. Compared
/// ASCII-case-insensitively, as a case-insensitive work tree finds them.
pub(super) fn git_dir_maker(path: &Path) -> Option<&'static str> {
    let name = path.file_name()?.as_bytes();
    if name.eq_ignore_ascii_case(b"HEAD") {
        Some("a `HEAD`, which beside `objects` and `refs` makes its directory a repository whose `config` git obeys")
    } else if name.eq_ignore_ascii_case(b"commondir") {
        Some("a `commondir`, which beside a `HEAD` makes its directory a worktree's git directory whose `config` git obeys")
    } else {
        None
    }
}

/// The view with the paths an index or a commit would have git write added
/// (with their directories): a directory that would look like a repository
/// once they are written is judged so ([`makes_git_dir`]), whichever of its
/// files are in the work tree already and which come from git.
pub(super) struct WithWrites<'a> {
    pub(super) view: &'a dyn View,
    paths: std::collections::HashSet<PathBuf>,
}

impl<'a> WithWrites<'a> {
    pub(super) fn new<'p>(view: &'a dyn View, written: impl Iterator<Item = &'p Path>) -> Self {
        let mut paths = std::collections::HashSet::new();
        for p in written {
            for a in p.ancestors().filter(|a| !a.as_os_str().is_empty()) {
                if !paths.insert(a.to_path_buf()) {
                    break;
                }
            }
        }
        WithWrites { view, paths }
    }
}

impl View for WithWrites<'_> {
    fn link(&self, p: &Path) -> Option<PathBuf> {
        self.view.link(p)
    }
    fn exists(&self, p: &Path) -> bool {
        self.paths.contains(p) || self.view.exists(p)
    }
    fn read(&self, p: &Path, max: usize) -> Option<Vec<u8>> {
        self.view.read(p, max)
    }
    fn read_host(&self, p: &Path, max: usize) -> Option<Vec<u8>> {
        self.view.read_host(p, max)
    }
    fn nested_git(&self, dir: &Path) -> Option<PathBuf> {
        self.view.nested_git(dir)
    }
    fn host_has(&self, p: &Path) -> bool {
        self.view.host_has(p)
    }
    fn names(&self, p: &Path) -> Vec<std::ffi::OsString> {
        self.view.names(p)
    }
    fn read_at(&self, p: &Path, offset: u64, len: usize) -> Option<Vec<u8>> {
        self.view.read_at(p, offset, len)
    }
}
