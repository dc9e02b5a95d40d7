//! What the boundary walk found in a directory, kept across decisions.
//!
//! Resolving a path costs one `lstat` per component, and a server judges many
//! commands against the same tree. Adding, removing, renaming or replacing an
//! entry of a directory updates that directory's ctime, so while a directory
//! keeps its device, inode and ctime, a name in it still means what it meant:
//! missing, not a directory, or a symlink with the same target.
//!
//! Only such leaves are kept. A directory on the way is always looked at again
//! (its own stamp is needed to trust what is kept inside it), so a directory
//! swapped for a symlink is seen at once.
//!
//! A ctime only proves "unchanged" once it is older than the timestamp
//! granularity: two changes within one tick (a jiffy for most filesystems, a
//! second or two for some) can leave the same ctime. A directory changed in the
//! last [`SETTLE`] is therefore looked up afresh every time. This assumes the
//! filesystem's clock is this machine's clock.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// How long a directory must have been unchanged before its entries are kept.
pub const SETTLE: Duration = Duration::from_secs(3);

/// At most this many names are kept in all; past it the cache starts empty again.
const MAX_ENTRIES: usize = 65_536;

/// A directory as observed during one decision, old enough to be relied on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    ctime: i64,
    ctime_nsec: i64,
}

impl Stamp {
    /// The stamp of a directory last changed more than [`SETTLE`] before
    /// `decision_start` (taken before `meta` was read); `None` for anything else.
    pub fn settled(meta: &std::fs::Metadata, decision_start: SystemTime) -> Option<Stamp> {
        if !meta.file_type().is_dir() {
            return None;
        }
        let settled_at = settled_at(meta.ctime(), meta.ctime_nsec())?;
        if settled_at > decision_start {
            return None;
        }
        Some(Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            ctime: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
        })
    }
}

/// When a ctime becomes old enough to rely on. Checked: a filesystem may
/// report any ctime, even one no clock can hold (then: never).
fn settled_at(ctime: i64, ctime_nsec: i64) -> Option<SystemTime> {
    let secs = u64::try_from(ctime).ok()?;
    let nanos = u64::try_from(ctime_nsec).ok()?;
    SystemTime::UNIX_EPOCH
        .checked_add(Duration::from_secs(secs))?
        .checked_add(Duration::from_nanos(nanos))?
        .checked_add(SETTLE)
}

/// What a name in a directory was, when it was not a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Missing,
    NotDirectory,
    Symlink(PathBuf),
}

struct Listing {
    stamp: Stamp,
    entries: HashMap<OsString, Entry>,
}

#[derive(Default)]
struct Cache {
    /// Keyed by the directory's resolved path, as bytes.
    dirs: HashMap<OsString, Listing>,
    entries: usize,
}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

#[cfg(test)]
thread_local! {
    /// Lookups answered from the cache on this thread (tests check the cache is used).
    pub static HITS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// `name` in `dir`, if it was kept while `dir` had this stamp.
pub fn get(dir: &Path, stamp: Stamp, name: &OsStr) -> Option<Entry> {
    let guard = CACHE.lock().ok()?;
    let listing = guard.as_ref()?.dirs.get(dir.as_os_str())?;
    if listing.stamp != stamp {
        return None;
    }
    let entry = listing.entries.get(name).cloned();
    #[cfg(test)]
    if entry.is_some() {
        HITS.with(|h| h.set(h.get() + 1));
    }
    entry
}

/// Keep what `name` in `dir` was, looked up while `dir` had this stamp.
pub fn put(dir: &Path, stamp: Stamp, name: &OsStr, entry: Entry) {
    let Ok(mut guard) = CACHE.lock() else {
        return;
    };
    let cache = guard.get_or_insert_with(Cache::default);
    if cache.entries >= MAX_ENTRIES {
        *cache = Cache::default();
    }
    let listing = cache
        .dirs
        .entry(dir.as_os_str().to_os_string())
        .or_insert_with(|| Listing {
            stamp,
            entries: HashMap::new(),
        });
    if listing.stamp != stamp {
        // The directory changed: nothing kept for it holds any more.
        cache.entries -= listing.entries.len();
        listing.stamp = stamp;
        listing.entries.clear();
    }
    if listing.entries.insert(name.to_os_string(), entry).is_none() {
        cache.entries += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_ctime_gives_an_answer_not_a_panic() {
        let now = SystemTime::now();
        assert!(settled_at(i64::MAX, i64::MAX).is_none_or(|t| t > now));
        assert_eq!(settled_at(-1, 0), None);
        assert_eq!(settled_at(0, -1), None);
        assert_eq!(
            settled_at(10, 5),
            Some(SystemTime::UNIX_EPOCH + Duration::new(13, 5))
        );
    }
}
