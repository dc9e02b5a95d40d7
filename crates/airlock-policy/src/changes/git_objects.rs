//! Reading the commits a run wrote, for the files they would have host git
//! write.
//!
//! `git reset --hard`, `git checkout` and `git restore --source` write a
//! commit's tree into the work tree, and the change-set rules never see those
//! files: a run could commit a workflow or an `.envrc`, delete it from its
//! work tree, and bring back only git's objects and a moved branch. So each
//! commit a run adds as a loose object is read (zlib, then its tree), and
//! every file its new trees name is judged as the work-tree write it can
//! become, unless the resulting work tree already holds that very content.
//!
//! Only trees the run wrote are walked: a tree the host already has was part
//! of its history before the run. Packs a run writes are not read here (the
//! caller holds them for a person).

use super::View;
use std::path::{Path, PathBuf};

/// Most bytes one object may inflate to.
const OBJECT_MAX_BYTES: usize = 64 << 20;
/// Most tree entries one commit's walk reads.
const WALK_MAX_ENTRIES: usize = 100_000;

/// What a loose object at a path is, as far as the work tree is concerned.
pub enum Written {
    /// Not a commit (a blob, a tree, a tag): it writes nothing by itself.
    Nothing,
    /// A commit: the files (path, blob name) its new trees name, and the
    /// directories (path) they name by old trees.
    Files {
        blobs: Vec<(PathBuf, Vec<u8>)>,
        trees: Vec<PathBuf>,
    },
    /// A commit that cannot be read through (not zlib, too large, a tree
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

/// Whether `rel` is a pack a run wrote (`.git/objects/pack/*.pack`).
pub fn is_pack(rel: &Path) -> bool {
    rel.extension().is_some_and(|e| e == "pack")
        && rel
            .parent()
            .is_some_and(|p| p.ends_with(".git/objects/pack"))
}

/// The files the commit at `rel` (a loose object in `view`) would write.
pub fn written(view: &dyn View, rel: &Path) -> Written {
    let Some((objects, _)) = loose_object(rel) else {
        return Written::Nothing;
    };
    let Some(data) = view.read(rel, OBJECT_MAX_BYTES) else {
        return Written::Unreadable("unreadable, or larger than the limit".into());
    };
    // Most objects are blobs: their header says so without inflating them.
    match kind_of(&data) {
        Ok(kind) if kind != "commit" => return Written::Nothing,
        Ok(_) => {}
        Err(e) => return Written::Unreadable(e),
    }
    let (_, body) = match inflate(Some(data)) {
        Ok(o) => o,
        Err(e) => return Written::Unreadable(e),
    };
    let oid_len = rel.file_name().map_or(40, |n| n.len() + 2) / 2;
    let Some(tree) = body
        .strip_prefix(b"tree ")
        .and_then(|b| b.get(..oid_len * 2))
        .and_then(|h| hex::decode(h).ok())
    else {
        return Written::Unreadable("a commit without a tree line".into());
    };
    let mut blobs = Vec::new();
    let mut trees = Vec::new();
    let mut queue = vec![(PathBuf::new(), tree)];
    let mut seen = 0usize;
    while let Some((dir, oid)) = queue.pop() {
        let at = object_path(&objects, &oid);
        // A tree the host has was in its history before the run; one not
        // loose here is packed, the host's too.
        if view.host_has(&at) || !view.exists(&at) {
            if !dir.as_os_str().is_empty() {
                trees.push(dir);
            }
            continue;
        }
        let (kind, body) = match inflate(view.read(&at, OBJECT_MAX_BYTES)) {
            Ok(o) => o,
            Err(e) => return Written::Unreadable(e),
        };
        if kind != "tree" {
            return Written::Unreadable(format!("`{}` is not a tree", at.display()));
        }
        let entries = match tree_entries(&body, oid_len) {
            Ok(e) => e,
            Err(e) => return Written::Unreadable(e),
        };
        for (mode, name, oid) in entries {
            seen += 1;
            if seen > WALK_MAX_ENTRIES {
                return Written::Unreadable(format!(
                    "its trees name more than {WALK_MAX_ENTRIES} entries"
                ));
            }
            let path = dir.join(std::ffi::OsStr::new(
                std::str::from_utf8(name).unwrap_or("\u{fffd}"),
            ));
            match mode {
                b"40000" => queue.push((path, oid.to_vec())),
                // A submodule's commit: nothing of it is written here.
                b"160000" => {}
                _ => blobs.push((path, oid.to_vec())),
            }
        }
    }
    Written::Files { blobs, trees }
}

/// Git's name for `data` as a blob, with the hash whose length `oid_len` is.
pub fn blob_name(data: &[u8], oid_len: usize) -> Vec<u8> {
    use sha2::Digest;
    let header = format!("blob {}\0", data.len());
    match oid_len {
        32 => {
            let mut h = sha2::Sha256::new();
            h.update(header.as_bytes());
            h.update(data);
            h.finalize().to_vec()
        }
        _ => {
            let mut h = sha1::Sha1::new();
            h.update(header.as_bytes());
            h.update(data);
            h.finalize().to_vec()
        }
    }
}

fn object_path(objects: &Path, oid: &[u8]) -> PathBuf {
    let hex = hex::encode(oid);
    objects.join(&hex[..2]).join(&hex[2..])
}

/// A loose object's kind, from the start of its inflated header.
fn kind_of(data: &[u8]) -> Result<String, String> {
    use miniz_oxide::inflate::{decompress_to_vec_zlib_with_limit, TINFLStatus};
    let head = match decompress_to_vec_zlib_with_limit(data, 32) {
        Ok(all) => all,
        Err(e) if e.status == TINFLStatus::HasMoreOutput => e.output,
        Err(e) => return Err(format!("not a zlib stream ({:?})", e.status)),
    };
    let sp = head
        .iter()
        .position(|b| *b == b' ')
        .ok_or("no object header")?;
    Ok(String::from_utf8_lossy(&head[..sp]).into_owned())
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
        assert!(is_pack(Path::new(".git/objects/pack/pack-1.pack")));
        assert!(!is_pack(Path::new(".git/objects/pack/pack-1.idx")));
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
