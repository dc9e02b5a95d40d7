//! Reading a git index (`.git/index`) that a run wrote, for the paths host git
//! would write from it.
//!
//! The index is data to git, but not inert: `git restore .`, `git checkout --
//! .` and `git checkout-index -a` write every entry it lists into the work
//! tree without checking the name again. An index that lists
//! `.git/hooks/pre-commit` or `.git/config` therefore writes a hook or a
//! config with the run's content the moment the user discards the run's
//! changes. Git refuses such names when they come from a tree object
//! (`verify_path`); this module applies the same refusal to the index itself.
//!
//! Formats: versions 2, 3 and 4, SHA-1 or SHA-256 object names (the index
//! does not say which, so both readings are tried and every one that parses
//! must be clean). Extensions: the resolve-undo list (`REUC`), from which
//! `git checkout -m` recreates files, is checked like the entries; the
//! extensions that name no file to write are skipped; any other one makes the
//! index unreadable here, which the caller treats as needing a person.

use std::fmt;

/// Why an index cannot be allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexProblem {
    /// An entry git would write to a path it must not (the path, escaped).
    BadPath(String),
    /// Not an index this reader understands: git may read it otherwise.
    Unreadable(String),
}

impl fmt::Display for IndexProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndexProblem::BadPath(p) => write!(
                f,
                "lists the entry `{p}`, which `git restore`/`git checkout-index` would write into .git or outside the work tree"
            ),
            IndexProblem::Unreadable(why) => write!(f, "cannot be checked ({why})"),
        }
    }
}

/// Checks every path the index `data` would have git write.
///
/// Git reads an index with its repository's object names, SHA-1 or SHA-256,
/// and refuses one whose trailing checksum does not match (unless the
/// checksum is all zeros: `index.skipHash`). So the reading whose checksum
/// matches is git's, and it must parse and be clean; with a zero checksum
/// both readings are git's as far as can be told here, and both must.
pub fn check(data: &[u8]) -> Result<(), IndexProblem> {
    entries(data).map(|_| ())
}

/// What the index would have git write: each path with its object name(s),
/// after [`check`]'s tests (every reading git may use parses and is clean;
/// the first one's entries are returned).
pub fn entries(data: &[u8]) -> Result<Vec<Staged>, IndexProblem> {
    let readings: Vec<usize> = [20usize, 32]
        .into_iter()
        .filter(|n| checksum_matches(data, *n))
        .collect();
    if readings.is_empty() {
        return Err(IndexProblem::Unreadable(
            "its checksum is neither a SHA-1 nor a SHA-256 index's, which git refuses to read"
                .into(),
        ));
    }
    let mut first = None;
    for oid_len in readings {
        let list = paths(data, oid_len).map_err(IndexProblem::Unreadable)?;
        if let Some(bad) = list.iter().find(|s| !path_ok(&s.path)) {
            return Err(IndexProblem::BadPath(super::escape_bytes(&bad.path)));
        }
        first.get_or_insert(list);
    }
    Ok(first.unwrap_or_default())
}

/// One path an index has git write, with the object(s) it writes there.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Staged {
    pub path: Vec<u8>,
    pub objects: Vec<u8>,
    /// The entry's mode (type and permission bits; 0o120000: a symlink
    /// whose target is the object). For a resolve-undo entry, its first
    /// stage's.
    pub mode: u32,
}

/// Whether the last `oid_len` bytes of `data` are the checksum git writes
/// with object names of that length (all zeros: none written).
fn checksum_matches(data: &[u8], oid_len: usize) -> bool {
    use sha2::Digest;
    let Some(split) = data.len().checked_sub(oid_len).filter(|s| *s >= 12) else {
        return false;
    };
    let (body, trailer) = data.split_at(split);
    if trailer.iter().all(|b| *b == 0) {
        return true;
    }
    match oid_len {
        20 => sha1::Sha1::digest(body).as_slice() == trailer,
        32 => sha2::Sha256::digest(body).as_slice() == trailer,
        _ => false,
    }
}

/// Whether git may write a work-tree file at `path` (git's `verify_path`,
/// with its NTFS rules on, as git has them on by default).
pub fn path_ok(path: &[u8]) -> bool {
    let path = path.strip_suffix(b"/").unwrap_or(path);
    !path.is_empty() && path.split(|b| *b == b'/').all(component_ok)
}

fn component_ok(c: &[u8]) -> bool {
    if c.is_empty() || c == b"." || c == b".." || c.contains(&b'\\') {
        return false;
    }
    // `.git`, any case, with what NTFS drops at the end (spaces, dots) or
    // reads as a stream, its 8.3 short name, or what HFS+ ignores in it.
    !super::git_dir::is_dotgit(c)
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.data.len())
            .ok_or_else(|| format!("truncated at byte {}", self.at))?;
        let s = &self.data[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u16(&mut self) -> Result<u16, String> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn until_nul(&mut self) -> Result<&'a [u8], String> {
        let rest = &self.data[self.at..];
        let n = rest
            .iter()
            .position(|b| *b == 0)
            .ok_or_else(|| format!("unterminated name at byte {}", self.at))?;
        self.at += n + 1;
        Ok(&rest[..n])
    }

    /// Git's offset varint (version 4's prefix compression).
    fn varint(&mut self) -> Result<usize, String> {
        let mut b = self.take(1)?[0];
        let mut v = usize::from(b & 0x7f);
        while b & 0x80 != 0 {
            b = self.take(1)?[0];
            v = v
                .checked_add(1)
                .and_then(|v| v.checked_mul(128))
                .map(|v| v | usize::from(b & 0x7f))
                .ok_or("varint overflow")?;
        }
        Ok(v)
    }
}

/// Every path the index names for writing (entries and resolve-undo), read
/// with object names of `oid_len` bytes.
fn paths(data: &[u8], oid_len: usize) -> Result<Vec<Staged>, String> {
    let mut r = Reader { data, at: 0 };
    if r.take(4)? != b"DIRC" {
        return Err("no DIRC signature".into());
    }
    let version = r.u32()?;
    if !(2..=4).contains(&version) {
        return Err(format!("version {version}"));
    }
    let count = r.u32()? as usize;
    let body_end = data
        .len()
        .checked_sub(oid_len)
        .ok_or("shorter than its checksum")?;
    let mut out = Vec::new();
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = r.at;
        let stat = r.take(40)?; // ctime, mtime, dev, ino, mode, uid, gid, size
        let mode = u32::from_be_bytes([stat[24], stat[25], stat[26], stat[27]]);
        let oid = r.take(oid_len)?;
        let flags = r.u16()?;
        if flags & 0x4000 != 0 {
            if version < 3 {
                return Err("extended flags in a version 2 index".into());
            }
            r.take(2)?;
        }
        // Git takes the name's length from the flags (the terminator only
        // when the length does not fit in them) and steps to the next entry
        // by that length: an index whose terminator says otherwise would be
        // read one way here and another by git, so it is unreadable.
        let stated = usize::from(flags & NAME_MASK);
        let name = if version == 4 {
            let strip = r.varint()?;
            let keep = previous
                .len()
                .checked_sub(strip)
                .ok_or("prefix longer than the previous name")?;
            let mut name = previous[..keep].to_vec();
            let suffix = r.until_nul()?;
            if stated != usize::from(NAME_MASK) && keep + suffix.len() != stated {
                return Err(length_mismatch(&name, suffix, stated));
            }
            name.extend_from_slice(suffix);
            name
        } else {
            let name = r.until_nul()?.to_vec();
            if stated != usize::from(NAME_MASK) && name.len() != stated {
                return Err(length_mismatch(&[], &name, stated));
            }
            // Padded with NULs to a multiple of 8 bytes (the terminator counts).
            let len = r.at - start;
            let pad = (8 - len % 8) % 8;
            if r.take(pad)?.iter().any(|b| *b != 0) {
                return Err("bad entry padding".into());
            }
            name
        };
        if r.at > body_end {
            return Err("entries run into the checksum".into());
        }
        previous.clone_from(&name);
        out.push(Staged {
            path: name,
            objects: oid.to_vec(),
            mode,
        });
    }
    while r.at < body_end {
        let sig = r.take(4)?;
        let size = r.u32()? as usize;
        let ext = r.take(size)?;
        if r.at > body_end {
            return Err("an extension runs into the checksum".into());
        }
        match sig {
            b"REUC" => resolve_undo(ext, oid_len, &mut out)?,
            // Caches, bookkeeping and markers that name no file to write.
            b"TREE" | b"UNTR" | b"EOIE" | b"IEOT" | b"FSMN" | b"link" | b"sdir" => {}
            other => return Err(format!("extension `{}`", super::escape_bytes(other))),
        }
    }
    Ok(out)
}

/// The bits of an entry's flags that hold its name's length; all set: the
/// name is longer, and its terminator ends it.
const NAME_MASK: u16 = 0x0fff;

fn length_mismatch(prefix: &[u8], rest: &[u8], stated: usize) -> String {
    let mut name = prefix.to_vec();
    name.extend_from_slice(rest);
    format!(
        "the entry `{}` is {} bytes long up to its terminator, but its flags say {stated}; git would read another name",
        super::escape_bytes(&name),
        name.len()
    )
}

/// `REUC`: path NUL, three octal modes each NUL-terminated, then one object
/// name per non-zero mode.
fn resolve_undo(ext: &[u8], oid_len: usize, out: &mut Vec<Staged>) -> Result<(), String> {
    let mut r = Reader { data: ext, at: 0 };
    while r.at < ext.len() {
        let path = r.until_nul()?.to_vec();
        let mut present = 0;
        let mut first = 0;
        for _ in 0..3 {
            let mode = r.until_nul()?;
            let text = std::str::from_utf8(mode).map_err(|_| "bad resolve-undo mode")?;
            let mode = u32::from_str_radix(text, 8).map_err(|_| "bad resolve-undo mode")?;
            if mode != 0 {
                present += 1;
                if first == 0 {
                    first = mode;
                }
            }
        }
        let objects = r.take(present * oid_len)?.to_vec();
        out.push(Staged {
            path,
            objects,
            mode: first,
        });
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A version 2 index of `names` (SHA-1), as git writes one.
    pub(crate) fn index_v2(names: &[&[u8]]) -> Vec<u8> {
        let entries: Vec<(u32, &[u8], [u8; 20])> =
            names.iter().map(|n| (0o100644, *n, [0xab; 20])).collect();
        index_v2_of(&entries)
    }

    /// A version 2 index of (mode, name, object name) entries.
    pub(crate) fn index_v2_of(entries: &[(u32, &[u8], [u8; 20])]) -> Vec<u8> {
        let mut d = b"DIRC".to_vec();
        d.extend(2u32.to_be_bytes());
        d.extend((entries.len() as u32).to_be_bytes());
        for (mode, n, oid) in entries {
            let start = d.len();
            d.extend([0u8; 24]);
            d.extend(mode.to_be_bytes());
            d.extend([0u8; 12]);
            d.extend(oid);
            d.extend((n.len().min(0xfff) as u16).to_be_bytes());
            d.extend(*n);
            d.push(0);
            while !(d.len() - start).is_multiple_of(8) {
                d.push(0);
            }
        }
        with_sha1(d)
    }

    /// A version 4 index (SHA-1) of entries (prefix bytes dropped from the
    /// previous name, the name's rest, the name length its flags state).
    fn index_v4(entries: &[(u8, &[u8], u16)]) -> Vec<u8> {
        let mut d = b"DIRC".to_vec();
        d.extend(4u32.to_be_bytes());
        d.extend((entries.len() as u32).to_be_bytes());
        for (strip, suffix, len) in entries {
            d.extend([0u8; 40]);
            d.extend([0xabu8; 20]);
            d.extend(len.to_be_bytes());
            d.push(*strip);
            d.extend(*suffix);
            d.push(0);
        }
        with_sha1(d)
    }

    /// `body` with the SHA-1 checksum git writes after it.
    pub(crate) fn with_sha1(mut body: Vec<u8>) -> Vec<u8> {
        use sha2::Digest;
        let sum = sha1::Sha1::digest(&body);
        body.extend_from_slice(&sum);
        body
    }

    #[test]
    fn an_ordinary_index_passes() {
        check(&index_v2(&[
            b"README.md",
            b"src/main.rs",
            b".gitignore",
            b"a/.github/x",
        ]))
        .unwrap();
        check(&index_v2(&[])).unwrap();
    }

    #[test]
    fn entries_that_write_into_git_or_climb_out_are_named() {
        for bad in [
            &b".git/hooks/pre-commit"[..],
            b".git/config",
            b"sub/.GIT/config",
            b".git./hooks/x",
            b".git /config",
            b"GIT~1/config",
            b"../outside",
            b"a/../../x",
            b"/etc/passwd",
            b"a//b",
            b"a\\..\\x",
        ] {
            let err = check(&index_v2(&[b"ok", bad])).unwrap_err();
            assert!(matches!(err, IndexProblem::BadPath(_)), "{bad:?}: {err:?}");
        }
    }

    #[test]
    fn version_4_prefix_compression_is_followed() {
        let d = index_v4(&[(0, b".gitx/ok", 8), (4, b"/hooks/pre-commit", 21)]);
        // ".gitx/ok" minus 4 bytes is ".git", then "/hooks/pre-commit".
        assert_eq!(
            check(&d).unwrap_err(),
            IndexProblem::BadPath(".git/hooks/pre-commit".into())
        );
    }

    #[test]
    fn resolve_undo_paths_are_checked_and_unknown_extensions_are_not_trusted() {
        let mut d = index_v2(&[b"ok"]);
        d.truncate(d.len() - 20);
        let mut reuc = b".git/hooks/post-checkout\x00100755\x000\x000\x00".to_vec();
        reuc.extend([1u8; 20]);
        d.extend(b"REUC");
        d.extend((reuc.len() as u32).to_be_bytes());
        d.extend(&reuc);
        let with_reuc = with_sha1(d);
        assert!(matches!(check(&with_reuc), Err(IndexProblem::BadPath(_))));

        let mut odd = index_v2(&[b"ok"]);
        odd.truncate(odd.len() - 20);
        odd.extend(b"ZZZZ");
        odd.extend(0u32.to_be_bytes());
        let odd = with_sha1(odd);
        assert!(matches!(check(&odd), Err(IndexProblem::Unreadable(_))));
    }

    /// Git steps from entry to entry by the length in the flags: `src/.gitZ`
    /// whose flags say 8 is `src/.git` to git (and the next entry starts
    /// where git says). Such an index is never read as this reader likes.
    #[test]
    fn a_name_length_that_disagrees_with_its_terminator_is_unreadable() {
        let mut d = index_v2(&[b"src/.gitZ"]);
        d.truncate(d.len() - 20);
        d[12 + 60..12 + 62].copy_from_slice(&8u16.to_be_bytes());
        let d = with_sha1(d);
        match check(&d) {
            Err(IndexProblem::Unreadable(why)) => assert!(why.contains("flags say 8"), "{why}"),
            other => panic!("{other:?}"),
        }
        // Version 4: the kept prefix counts toward the stated length.
        let d = index_v4(&[(0, b"src/a", 5), (1, b".gitZ", 8)]);
        assert!(matches!(check(&d), Err(IndexProblem::Unreadable(_))));
    }

    /// Git refuses an index whose checksum does not match; an all-zero one
    /// (`index.skipHash`) leaves the object name length open, and then both
    /// readings must pass.
    #[test]
    fn the_checksum_picks_the_reading_git_uses() {
        let good = index_v2(&[b"README.md"]);
        check(&good).unwrap();
        let mut wrong = good.clone();
        let n = wrong.len();
        wrong[n - 1] ^= 1;
        assert!(matches!(check(&wrong), Err(IndexProblem::Unreadable(_))));
        let mut zeros = index_v2(&[b".git/config"]);
        let n = zeros.len();
        zeros[n - 20..].fill(0);
        assert!(check(&zeros).is_err());
    }

    #[test]
    fn garbage_is_unreadable_not_a_panic() {
        for d in [
            &b""[..],
            b"DIRC",
            b"DIRC\0\0\0\x02\xff\xff\xff\xff",
            b"not an index at all, just text",
        ] {
            assert!(
                matches!(check(d), Err(IndexProblem::Unreadable(_))),
                "{d:?}"
            );
        }
    }
}
