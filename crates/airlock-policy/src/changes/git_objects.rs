//! Reading the objects a run wrote: each loose object is checked against its
//! name, and each commit is read for the files it would have host git write.
//!
//! Host git reads an object by its name and does not check that the content
//! is that object: a run that rewrote a loose object the host already had
//! (the tree of `HEAD`) would have the user's `git reset --hard` write
//! whatever it put there. So every loose object a run adds or changes is
//! inflated and hashed, and one that is not the object its name says is
//! refused.
//!
//! `git reset --hard`, `git checkout` and `git restore --source` write a
//! commit's tree into the work tree, and the change-set rules never see those
//! files: a run could commit a workflow or an `.envrc`, delete it from its
//! work tree, and bring back only git's objects and a moved branch. So each
//! commit a run adds as a loose object is read (zlib, then its tree), and
//! every file its new trees name is judged as the work-tree write it can
//! become, unless the resulting work tree already holds that very content.
//!
//! The commit's tree is compared with its parents' (read from the host's
//! packs, `git_pack`, or loose): a file or tree a parent has at the same
//! path is what the work tree held there, and is skipped; any other, the
//! host's old trees at new paths included, is walked. Packs a run writes are
//! not read (the caller holds them for a person).

use super::View;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Most bytes one object may inflate to when its body is kept (a commit, a tree).
pub(super) const OBJECT_MAX_BYTES: usize = 64 << 20;
/// Most compressed bytes of one loose object read to check it.
const LOOSE_MAX_BYTES: usize = 256 << 20;
/// Most tree entries one commit's walk reads.
const WALK_MAX_ENTRIES: usize = 100_000;
/// Most bytes the checks of one change set inflate, all objects together:
/// zlib inflates up to about a thousand times its input, and the judgement
/// must end.
pub const INFLATE_BUDGET_BYTES: u64 = 2 << 30;

/// What a loose object at a path is, as far as the work tree is concerned.
pub enum Written {
    /// Not a commit (a blob, a tree, a tag): it writes nothing by itself.
    Nothing,
    /// A commit: the files (path, blob name) its tree holds other than its
    /// parents do at the same path, and the directories (path) whose trees
    /// cannot be found to be read.
    Files {
        blobs: Vec<(PathBuf, Vec<u8>)>,
        trees: Vec<PathBuf>,
        /// The symlinks (mode 120000) among them: path, and the target
        /// (the blob's content), or `None` where the blob cannot be read.
        links: Vec<(PathBuf, Option<Vec<u8>>)>,
    },
    /// An object whose content is not the object its name says.
    Forged,
    /// An object that cannot be read through (not zlib, too large, a tree
    /// that does not parse, more entries than the walk reads).
    Unreadable(String),
}

/// The loose object `rel` stands for (`<dir>/.git/objects/ab/cdef…`): its
/// objects directory and its name's bytes.
pub fn loose_object(rel: &Path) -> Option<(PathBuf, Vec<u8>)> {
    let name = rel.file_name()?.to_str()?;
    let fan = rel.parent()?;
    let fan_name = fan.file_name()?.to_str()?;
    let objects = fan.parent()?;
    if objects.file_name()? != "objects" || objects.parent()?.file_name()? != ".git" {
        return None;
    }
    let hex = format!("{fan_name}{name}");
    if fan_name.len() != 2 || !matches!(hex.len(), 40 | 64) {
        return None;
    }
    Some((objects.to_path_buf(), hex::decode(&hex).ok()?))
}

/// The files the commit at `rel` (a loose object in `view`) would write,
/// after checking that `rel` holds the object its name says. `budget` is
/// what is left of the bytes this change set's checks may inflate.
pub fn written(view: &dyn View, rel: &Path, budget: &AtomicU64) -> Written {
    let Some((objects, name)) = loose_object(rel) else {
        return Written::Nothing;
    };
    let Some(data) = view.read(rel, LOOSE_MAX_BYTES) else {
        return Written::Unreadable(format!(
            "unreadable, or larger than {LOOSE_MAX_BYTES} bytes"
        ));
    };
    let body = match checked(&data, &name, budget) {
        Ok(Checked::Named { kind, body }) if kind == "commit" => body,
        Ok(Checked::Named { .. }) => return Written::Nothing,
        Ok(Checked::Other) => return Written::Forged,
        Err(e) => return Written::Unreadable(e),
    };
    let store = Store::open(view, &objects, name.len(), budget);
    match changed_files(&store, &body) {
        Ok((blobs, trees, links)) => Written::Files {
            blobs,
            trees,
            links: links
                .into_iter()
                .map(|(path, oid)| {
                    let target = link_target(&store, &oid);
                    (path, target)
                })
                .collect(),
        },
        Err(e) => Written::Unreadable(e),
    }
}

/// Most bytes of a symlink's target read from its blob (Linux's PATH_MAX).
pub const LINK_MAX_BYTES: usize = 4096;

/// The target a symlink entry naming blob `oid` has git create, if the blob
/// can be read and is no longer than [`LINK_MAX_BYTES`].
fn link_target(store: &Store<'_>, oid: &[u8]) -> Option<Vec<u8>> {
    match store.read(oid) {
        Ok(Some((kind, body))) if kind == "blob" && body.len() <= LINK_MAX_BYTES => Some(body),
        _ => None,
    }
}

/// The target of the symlink a staged entry naming blob `oid` has git
/// create (the work tree's repository, `.git/objects`, loose or packed), if
/// it can be read. `budget` as for [`written`].
pub fn staged_link_target(view: &dyn View, oid: &[u8], budget: &AtomicU64) -> Option<Vec<u8>> {
    let store = Store::open(view, Path::new(".git/objects"), oid.len(), budget);
    link_target(&store, oid)
}

/// Files (path, blob name) and directories (path) a commit writes, and the
/// symlinks (path, blob name) among the files.
type ChangedFiles = (
    Vec<(PathBuf, Vec<u8>)>,
    Vec<PathBuf>,
    Vec<(PathBuf, Vec<u8>)>,
);

/// A commit's tree and parents, from its body.
fn commit_links(body: &[u8], oid_len: usize) -> Result<(Vec<u8>, Vec<Vec<u8>>), String> {
    let name = |line: &[u8], key: &[u8]| {
        line.strip_prefix(key)
            .filter(|h| h.len() == oid_len * 2)
            .and_then(|h| hex::decode(h).ok())
    };
    let mut lines = body.split(|b| *b == b'\n');
    let tree = lines
        .next()
        .and_then(|l| name(l, b"tree "))
        .ok_or("a commit without a tree line")?;
    let parents = lines.map_while(|l| name(l, b"parent ")).collect();
    Ok((tree, parents))
}

/// The files (path, blob name) a commit's tree holds other than its parents
/// do at the same path, and the directories (path) whose trees cannot be
/// found to be read (an alternate object store of the host's): what `git
/// reset --hard` from a parent writes. Trees and files a parent has at the
/// same path are skipped; the same tree at a new path is read through.
fn changed_files(store: &Store<'_>, commit: &[u8]) -> Result<ChangedFiles, String> {
    use std::os::unix::ffi::OsStrExt;
    let (tree, parents) = commit_links(commit, store.oid_len)?;
    // A parent that cannot be read counts as none: more is judged, not less.
    let parent_trees: Vec<Vec<u8>> = parents
        .iter()
        .filter_map(|p| match store.read(p) {
            Ok(Some((kind, body))) if kind == "commit" => {
                commit_links(&body, store.oid_len).ok().map(|(t, _)| t)
            }
            _ => None,
        })
        .collect();
    let mut blobs = Vec::new();
    let mut trees = Vec::new();
    let mut links = Vec::new();
    let mut queue = vec![(PathBuf::new(), tree, parent_trees)];
    let mut seen = 0usize;
    while let Some((dir, oid, theirs)) = queue.pop() {
        if theirs.contains(&oid) {
            continue;
        }
        let body = match store.read(&oid)? {
            Some((kind, body)) if kind == "tree" => body,
            Some(_) => {
                return Err(format!(
                    "`{}` names an object that is not a tree",
                    dir.display()
                ))
            }
            None => {
                if !dir.as_os_str().is_empty() {
                    trees.push(dir);
                }
                continue;
            }
        };
        let entries = tree_entries(&body, store.oid_len)?;
        // The parents' entries here, by name.
        let mut their_entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for t in &theirs {
            if let Ok(Some((kind, b))) = store.read(t) {
                if kind == "tree" {
                    for (_, n, o) in tree_entries(&b, store.oid_len)? {
                        their_entries.push((n.to_vec(), o.to_vec()));
                    }
                }
            }
        }
        for (mode, name, oid) in entries {
            seen += 1;
            if seen > WALK_MAX_ENTRIES {
                return Err(format!(
                    "its trees name more than {WALK_MAX_ENTRIES} entries"
                ));
            }
            let path = dir.join(std::ffi::OsStr::from_bytes(name));
            let same_name: Vec<Vec<u8>> = their_entries
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, o)| o.clone())
                .collect();
            match mode {
                b"40000" => queue.push((path, oid.to_vec(), same_name)),
                // A submodule's commit: nothing of it is written here.
                b"160000" => {}
                _ if same_name.iter().any(|o| o == oid) => {}
                // Git makes a symlink of it, whose target is the blob.
                b"120000" => {
                    links.push((path.clone(), oid.to_vec()));
                    blobs.push((path, oid.to_vec()));
                }
                _ => blobs.push((path, oid.to_vec())),
            }
        }
    }
    Ok((blobs, trees, links))
}

/// A repository's objects as host git finds them: in its packs first, then
/// loose. Packs a run wrote are held for a person by the rules, and every
/// loose object it wrote is checked against its name, so what is read here
/// is what git would read.
struct Store<'a> {
    view: &'a dyn View,
    objects: PathBuf,
    oid_len: usize,
    packs: Vec<super::git_pack::Pack>,
    budget: &'a AtomicU64,
    /// How deep deltas against named bases have gone.
    depth: std::cell::Cell<usize>,
}

impl<'a> Store<'a> {
    fn open(view: &'a dyn View, objects: &Path, oid_len: usize, budget: &'a AtomicU64) -> Self {
        let dir = objects.join("pack");
        // An index that does not read hides its pack's objects: the trees
        // among them are then judged by their path alone, as an alternate
        // store's are.
        let packs = view
            .names(&dir)
            .into_iter()
            .filter(|n| Path::new(n).extension().is_some_and(|e| e == "idx"))
            .filter_map(|n| super::git_pack::Pack::open(view, &dir.join(n), oid_len).ok())
            .collect();
        Store {
            view,
            objects: objects.to_path_buf(),
            oid_len,
            packs,
            budget,
            depth: std::cell::Cell::new(0),
        }
    }

    fn spend(&self, n: usize) -> Result<(), String> {
        self.budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                b.checked_sub(n as u64)
            })
            .map(|_| ())
            .map_err(|_| {
                format!("the run's objects inflate to more than {INFLATE_BUDGET_BYTES} bytes")
            })
    }

    /// The object `oid`'s kind and body, or `None` where the repository does
    /// not hold it.
    fn read(&self, oid: &[u8]) -> Result<Option<super::git_pack::Object>, String> {
        if self.depth.get() > 64 {
            return Err("deltas against named bases nest too deep".into());
        }
        for pack in &self.packs {
            if let Some(offset) = pack.find(oid) {
                self.depth.set(self.depth.get() + 1);
                let got = pack.read(self.view, offset, &|b| self.read(b), &|n| self.spend(n));
                self.depth.set(self.depth.get() - 1);
                return got.map(Some);
            }
        }
        let at = object_path(&self.objects, oid);
        if !self.view.exists(&at) {
            return Ok(None);
        }
        let data = self.view.read(&at, LOOSE_MAX_BYTES).ok_or_else(|| {
            format!(
                "`{}` is unreadable or larger than {LOOSE_MAX_BYTES} bytes",
                at.display()
            )
        })?;
        let (kind, body) = inflate(Some(data))?;
        self.spend(body.len())?;
        Ok(Some((kind, body)))
    }
}

/// Git's name for `data` as a blob, with the hash whose length `oid_len` is.
pub fn blob_name(data: &[u8], oid_len: usize) -> Vec<u8> {
    let mut h = Hasher::new(oid_len);
    h.update(format!("blob {}\0", data.len()).as_bytes());
    h.update(data);
    h.finish()
}

fn object_path(objects: &Path, oid: &[u8]) -> PathBuf {
    let hex = hex::encode(oid);
    objects.join(&hex[..2]).join(&hex[2..])
}

/// A loose object's content against its name.
enum Checked {
    /// The object its name says: its kind, and its body if a commit.
    Named { kind: String, body: Vec<u8> },
    /// Another object, or bytes that hash to another name.
    Other,
}

/// Inflates the loose object `data` as a stream, hashing it as it goes (the
/// body is kept only for a commit), and compares the hash with `name`.
fn checked(data: &[u8], name: &[u8], budget: &AtomicU64) -> Result<Checked, String> {
    use miniz_oxide::inflate::stream::{inflate, InflateState};
    use miniz_oxide::{DataFormat, MZFlush, MZStatus};
    let mut hash = Hasher::new(name.len());
    let mut state = InflateState::new_boxed(DataFormat::Zlib);
    let mut input = data;
    let mut buf = vec![0u8; 64 << 10];
    // The header ("<kind> <length>\0"), then the body.
    let mut head: Vec<u8> = Vec::new();
    let mut header: Option<(String, u64)> = None;
    let mut body = Vec::new();
    let mut body_len = 0u64;
    loop {
        let r = inflate(&mut state, input, &mut buf, MZFlush::None);
        input = &input[r.bytes_consumed..];
        let out = &buf[..r.bytes_written];
        let spent = r.bytes_written as u64;
        if budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                b.checked_sub(spent)
            })
            .is_err()
        {
            return Err(format!(
                "the run's objects inflate to more than {INFLATE_BUDGET_BYTES} bytes"
            ));
        }
        hash.update(out);
        let mut rest = out;
        if header.is_none() {
            match rest.iter().position(|b| *b == 0) {
                Some(nul) => {
                    head.extend_from_slice(&rest[..nul]);
                    rest = &rest[nul + 1..];
                    let h = std::str::from_utf8(&head).map_err(|_| "bad object header")?;
                    let (kind, len) = h.split_once(' ').ok_or("bad object header")?;
                    let len = len.parse().map_err(|_| "bad object header")?;
                    header = Some((kind.to_string(), len));
                }
                None if head.len() + rest.len() > 64 => return Err("no object header".into()),
                None => {
                    head.extend_from_slice(rest);
                    rest = &[];
                }
            }
        }
        if let Some((kind, _)) = &header {
            body_len += rest.len() as u64;
            if kind == "commit" {
                if body.len() + rest.len() > OBJECT_MAX_BYTES {
                    return Err(format!("a commit larger than {OBJECT_MAX_BYTES} bytes"));
                }
                body.extend_from_slice(rest);
            }
        }
        match r.status {
            Ok(MZStatus::StreamEnd) => break,
            Ok(_) if r.bytes_consumed > 0 || r.bytes_written > 0 => {}
            _ => return Err("not a whole zlib stream".into()),
        }
    }
    if !input.is_empty() {
        return Err("bytes after the object's zlib stream".into());
    }
    let (kind, len) = header.ok_or("no object header")?;
    if len != body_len {
        return Err("the object's length does not match its header".into());
    }
    Ok(if hash.finish() == name {
        Checked::Named { kind, body }
    } else {
        Checked::Other
    })
}

/// Git's object hash, SHA-1 or SHA-256 by the length of the names.
enum Hasher {
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
}

impl Hasher {
    fn new(oid_len: usize) -> Hasher {
        use sha2::Digest;
        match oid_len {
            32 => Hasher::Sha256(sha2::Sha256::new()),
            _ => Hasher::Sha1(sha1::Sha1::new()),
        }
    }
    fn update(&mut self, data: &[u8]) {
        use sha2::Digest;
        match self {
            Hasher::Sha1(h) => h.update(data),
            Hasher::Sha256(h) => h.update(data),
        }
    }
    fn finish(self) -> Vec<u8> {
        use sha2::Digest;
        match self {
            Hasher::Sha1(h) => h.finalize().to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
        }
    }
}

/// A loose object's kind and body.
fn inflate(data: Option<Vec<u8>>) -> Result<(String, Vec<u8>), String> {
    let data = data.ok_or("unreadable or larger than the limit")?;
    let raw = miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(&data, OBJECT_MAX_BYTES)
        .map_err(|e| format!("not a zlib stream ({e:?})"))?;
    let nul = raw.iter().position(|b| *b == 0).ok_or("no object header")?;
    let header = std::str::from_utf8(&raw[..nul]).map_err(|_| "bad object header")?;
    let (kind, len) = header.split_once(' ').ok_or("bad object header")?;
    if len.parse::<usize>().ok() != Some(raw.len() - nul - 1) {
        return Err("the object's length does not match its header".into());
    }
    Ok((kind.to_string(), raw[nul + 1..].to_vec()))
}

/// One entry of a tree: mode, name, object name.
type TreeEntry<'a> = (&'a [u8], &'a [u8], &'a [u8]);

/// A tree's entries.
fn tree_entries(body: &[u8], oid_len: usize) -> Result<Vec<TreeEntry<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let sp = rest
            .iter()
            .position(|b| *b == b' ')
            .ok_or("a tree entry without a mode")?;
        let nul = rest
            .iter()
            .position(|b| *b == 0)
            .filter(|n| *n > sp)
            .ok_or("a tree entry without a name")?;
        let end = nul + 1 + oid_len;
        let oid = rest.get(nul + 1..end).ok_or("a truncated tree entry")?;
        out.push((&rest[..sp], &rest[sp + 1..nul], oid));
        rest = &rest[end..];
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A loose object of `kind` holding `body`, as git writes it.
    pub(crate) fn loose(kind: &str, body: &[u8]) -> Vec<u8> {
        let mut raw = format!("{kind} {}\0", body.len()).into_bytes();
        raw.extend_from_slice(body);
        miniz_oxide::deflate::compress_to_vec_zlib(&raw, 6)
    }

    /// The SHA-1 object name of a loose object's content.
    pub(crate) fn name_of(kind: &str, body: &[u8]) -> Vec<u8> {
        use sha2::Digest;
        let mut h = sha1::Sha1::new();
        h.update(format!("{kind} {}\0", body.len()).as_bytes());
        h.update(body);
        h.finalize().to_vec()
    }

    /// A tree's body from (mode, name, object name).
    pub(crate) fn tree(entries: &[(&str, &str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (mode, name, oid) in entries {
            out.extend_from_slice(format!("{mode} {name}\0").as_bytes());
            out.extend_from_slice(oid);
        }
        out
    }

    #[test]
    fn loose_object_paths_are_recognised() {
        let (dir, oid) = loose_object(Path::new(
            ".git/objects/ab/cdef0123456789abcdef0123456789abcdef01",
        ))
        .unwrap();
        assert_eq!(dir, Path::new(".git/objects"));
        assert_eq!(oid.len(), 20);
        assert!(loose_object(Path::new(".git/objects/pack/pack-1.pack")).is_none());
        assert!(loose_object(Path::new("src/objects/ab/cdef")).is_none());
    }

    #[test]
    fn blob_names_match_git() {
        // `printf 'hi\n' | git hash-object --stdin`
        assert_eq!(
            hex::encode(blob_name(b"hi\n", 20)),
            "45b983be36b73c0788dc9cbcb76cbb80fc7bb057"
        );
    }

    #[test]
    fn garbage_is_unreadable_not_a_panic() {
        assert!(inflate(Some(b"not zlib".to_vec())).is_err());
        assert!(inflate(None).is_err());
        let lying = miniz_oxide::deflate::compress_to_vec_zlib(b"blob 99\0hi", 6);
        assert!(inflate(Some(lying)).is_err());
        assert!(tree_entries(b"100644 x", 20).is_err());
        assert!(tree_entries(b"100644 x\0short", 20).is_err());
    }
}
