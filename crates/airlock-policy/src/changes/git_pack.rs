//! Reading an object out of a git pack, through its version 2 index: the
//! format of `git index-pack` and `pack-objects` (`gitformat-pack(5)`),
//! deltas included.
//!
//! Only packs the host already had are read (the rules hold every pack file
//! a run writes), so what is read here is the host's own history: the trees
//! and commits a run's new commit names without having written them.

use super::View;
use std::path::{Path, PathBuf};

/// Most bytes of one pack index read (one name, a CRC and an offset per
/// object: about 28 bytes each).
const IDX_MAX_BYTES: usize = 256 << 20;
/// Most deltas followed to reach one object (git's own default depth is 50,
/// its hard limit 4095).
const DELTA_CHAIN_MAX: usize = 4096;

/// An object's kind and body.
pub type Object = (String, Vec<u8>);

/// How a delta's base is found by name: `None` where the repository lacks it.
pub type ByName<'a> = &'a dyn Fn(&[u8]) -> Result<Option<Object>, String>;

/// An object's kind by its pack type number.
fn kind_name(t: u8) -> Option<&'static str> {
    Some(match t {
        1 => "commit",
        2 => "tree",
        3 => "blob",
        4 => "tag",
        _ => return None,
    })
}

/// One pack and its index, read from `view`.
pub struct Pack {
    pack: PathBuf,
    idx: Vec<u8>,
    oid_len: usize,
    count: usize,
}

impl Pack {
    /// The pack whose index is `idx_path` (`…/pack-<name>.idx`), if its index
    /// reads as version 2 with names of `oid_len` bytes.
    pub fn open(view: &dyn View, idx_path: &Path, oid_len: usize) -> Result<Pack, String> {
        let shown = idx_path.display();
        let idx = view.read(idx_path, IDX_MAX_BYTES).ok_or_else(|| {
            format!("`{shown}` is unreadable or larger than {IDX_MAX_BYTES} bytes")
        })?;
        if idx.get(..8) != Some(&[0xff, b't', b'O', b'c', 0, 0, 0, 2][..]) {
            return Err(format!("`{shown}` is not a version 2 pack index"));
        }
        let count = be32(&idx, 8 + 255 * 4).ok_or("a truncated pack index")? as usize;
        // Header, fan-out, then per object a name, a CRC and an offset; two
        // checksums at the end.
        let min = 8 + 1024 + count.saturating_mul(oid_len + 8) + 2 * oid_len;
        if idx.len() < min {
            return Err(format!(
                "`{shown}` is shorter than its {count} objects need"
            ));
        }
        Ok(Pack {
            pack: idx_path.with_extension("pack"),
            idx,
            oid_len,
            count,
        })
    }

    /// Where `oid` starts in the pack, if the pack holds it.
    pub fn find(&self, oid: &[u8]) -> Option<u64> {
        let first = *oid.first()? as usize;
        let lo = if first == 0 {
            0
        } else {
            be32(&self.idx, 8 + (first - 1) * 4)? as usize
        };
        let hi = (be32(&self.idx, 8 + first * 4)? as usize).min(self.count);
        let names = 8 + 1024;
        let name = |i: usize| {
            self.idx
                .get(names + i * self.oid_len..names + (i + 1) * self.oid_len)
        };
        let (mut lo, mut hi) = (lo, hi);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match name(mid)?.cmp(oid) {
                std::cmp::Ordering::Equal => return self.offset(mid),
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        None
    }

    /// The pack offset of the `i`th object of the index.
    fn offset(&self, i: usize) -> Option<u64> {
        let offsets = 8 + 1024 + self.count * (self.oid_len + 4);
        let small = be32(&self.idx, offsets + i * 4)?;
        if small & 0x8000_0000 == 0 {
            return Some(u64::from(small));
        }
        let large = offsets + self.count * 4 + (small & 0x7fff_ffff) as usize * 8;
        let b = self.idx.get(large..large + 8)?;
        Some(u64::from_be_bytes(b.try_into().ok()?))
    }

    /// The object at `offset`: its kind and body, its deltas applied. A
    /// delta against an object by name (`REF_DELTA`) looks that name up
    /// through `by_name`; `spend` is charged every inflated byte and refuses
    /// once the change set's budget is gone.
    pub fn read(
        &self,
        view: &dyn View,
        offset: u64,
        by_name: ByName<'_>,
        spend: &dyn Fn(usize) -> Result<(), String>,
    ) -> Result<Object, String> {
        let mut deltas: Vec<Vec<u8>> = Vec::new();
        let mut at = offset;
        let (kind, mut body) = loop {
            if deltas.len() > DELTA_CHAIN_MAX {
                return Err(format!("a delta chain longer than {DELTA_CHAIN_MAX}"));
            }
            let head = view
                .read_at(&self.pack, at, 32 + self.oid_len)
                .ok_or("the pack is unreadable")?;
            let (t, size, mut used) = entry_header(&head).ok_or("a bad pack entry header")?;
            match t {
                // OFS_DELTA: the base lies a given distance before this entry.
                6 => {
                    let (back, n) = ofs_distance(&head[used..]).ok_or("a bad delta offset")?;
                    used += n;
                    deltas.push(self.inflate(view, at + used as u64, size, spend)?);
                    at = at
                        .checked_sub(back)
                        .filter(|b| *b < at)
                        .ok_or("a delta base after its delta")?;
                }
                // REF_DELTA: the base is named.
                7 => {
                    let base = head
                        .get(used..used + self.oid_len)
                        .ok_or("a truncated delta base name")?
                        .to_vec();
                    used += self.oid_len;
                    deltas.push(self.inflate(view, at + used as u64, size, spend)?);
                    match by_name(&base)? {
                        Some(found) => break found,
                        None => return Err("a delta whose base is not in the repository".into()),
                    }
                }
                t => {
                    let kind = kind_name(t).ok_or("an unknown pack entry type")?;
                    break (
                        kind.to_string(),
                        self.inflate(view, at + used as u64, size, spend)?,
                    );
                }
            }
        };
        for delta in deltas.iter().rev() {
            body = apply_delta(&body, delta)?;
            spend(body.len())?;
        }
        Ok((kind, body))
    }

    /// The zlib stream at `at`, which must inflate to exactly `size` bytes.
    fn inflate(
        &self,
        view: &dyn View,
        at: u64,
        size: usize,
        spend: &dyn Fn(usize) -> Result<(), String>,
    ) -> Result<Vec<u8>, String> {
        use miniz_oxide::inflate::{decompress_to_vec_zlib_with_limit, TINFLStatus};
        if size > super::git_objects::OBJECT_MAX_BYTES {
            return Err(format!(
                "a packed object larger than {} bytes",
                super::git_objects::OBJECT_MAX_BYTES
            ));
        }
        spend(size)?;
        // Deflate rarely grows data by more than a few bytes per 16 KiB
        // block; read more only if the stream does not end in what was read.
        let mut want = size + size / 64 + 64;
        loop {
            let data = view
                .read_at(&self.pack, at, want)
                .ok_or("the pack is unreadable")?;
            match decompress_to_vec_zlib_with_limit(&data, size) {
                Ok(out) if out.len() == size => return Ok(out),
                Ok(_) => return Err("a packed object whose size is not its header's".into()),
                Err(e)
                    if e.status == TINFLStatus::FailedCannotMakeProgress && data.len() == want =>
                {
                    want = want.saturating_mul(2);
                }
                Err(e) => {
                    return Err(format!(
                        "a packed object that does not inflate ({:?})",
                        e.status
                    ))
                }
            }
        }
    }
}

/// A big-endian u32 at `at`.
fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// A pack entry's type, inflated size and header length.
fn entry_header(b: &[u8]) -> Option<(u8, usize, usize)> {
    let mut byte = *b.first()?;
    let t = (byte >> 4) & 7;
    let mut size = u64::from(byte & 15);
    let mut shift = 4;
    let mut used = 1;
    while byte & 0x80 != 0 {
        byte = *b.get(used)?;
        used += 1;
        if shift > 57 {
            return None;
        }
        size |= u64::from(byte & 0x7f) << shift;
        shift += 7;
    }
    Some((t, usize::try_from(size).ok()?, used))
}

/// An `OFS_DELTA`'s distance back to its base, and the bytes it took.
fn ofs_distance(b: &[u8]) -> Option<(u64, usize)> {
    let mut byte = *b.first()?;
    let mut ofs = u64::from(byte & 0x7f);
    let mut used = 1;
    while byte & 0x80 != 0 {
        byte = *b.get(used)?;
        used += 1;
        ofs = ofs.checked_add(1)?.checked_mul(128)? | u64::from(byte & 0x7f);
    }
    Some((ofs, used))
}

/// A little-endian base-128 size at `*i` of a delta.
fn delta_size(d: &[u8], i: &mut usize) -> Result<usize, String> {
    let mut size = 0u64;
    let mut shift = 0;
    loop {
        let byte = *d.get(*i).ok_or("a truncated delta")?;
        *i += 1;
        if shift > 57 {
            return Err("a delta size too large".into());
        }
        size |= u64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return usize::try_from(size).map_err(|_| "a delta size too large".into());
        }
    }
}

/// `base` with the git delta `delta` applied.
fn apply_delta(base: &[u8], delta: &[u8]) -> Result<Vec<u8>, String> {
    let mut i = 0;
    if delta_size(delta, &mut i)? != base.len() {
        return Err("a delta made for another base".into());
    }
    let size = delta_size(delta, &mut i)?;
    if size > super::git_objects::OBJECT_MAX_BYTES {
        return Err("a delta result too large".into());
    }
    let mut out = Vec::with_capacity(size);
    while i < delta.len() {
        let op = delta[i];
        i += 1;
        if op & 0x80 != 0 {
            // Copy from the base: offset and size bytes, each present if its bit is set.
            let mut field = |bits: std::ops::Range<u32>| -> Result<usize, String> {
                let mut v = 0usize;
                for (n, bit) in bits.enumerate() {
                    if op & (1 << bit) != 0 {
                        v |= usize::from(*delta.get(i).ok_or("a truncated delta")?) << (8 * n);
                        i += 1;
                    }
                }
                Ok(v)
            };
            let off = field(0..4)?;
            let n = match field(4..7)? {
                0 => 0x10000,
                n => n,
            };
            let part = base
                .get(off..off.checked_add(n).ok_or("a bad delta copy")?)
                .ok_or("a delta copy outside its base")?;
            out.extend_from_slice(part);
        } else if op != 0 {
            let n = usize::from(op);
            out.extend_from_slice(delta.get(i..i + n).ok_or("a truncated delta")?);
            i += n;
        } else {
            return Err("a delta with a zero instruction".into());
        }
        if out.len() > size {
            return Err("a delta longer than it says".into());
        }
    }
    if out.len() != size {
        return Err("a delta shorter than it says".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_copy_and_insert() {
        // base "hello world"; result "hello there": copy 6 from 0, insert "there".
        let delta = [11, 11, 0x90, 6, 5, b't', b'h', b'e', b'r', b'e'];
        assert_eq!(apply_delta(b"hello world", &delta).unwrap(), b"hello there");
        assert!(apply_delta(b"hello", &delta).is_err());
        assert!(apply_delta(b"hello world", &[11, 11, 0]).is_err());
        assert!(apply_delta(b"hello world", &[11, 11, 0x91, 200, 5]).is_err());
        assert!(apply_delta(b"hello world", &[11, 3, 4, b'a']).is_err());
    }

    #[test]
    fn headers_and_distances_parse_or_refuse() {
        assert_eq!(entry_header(&[0x95, 0x0a]), Some((1, 5 | (10 << 4), 2)));
        assert_eq!(entry_header(&[0x80]), None);
        assert_eq!(ofs_distance(&[0x05]), Some((5, 1)));
        assert_eq!(ofs_distance(&[0x81, 0x00]), Some((256, 2)));
        assert_eq!(ofs_distance(&[0xff; 20]), None);
    }
}
