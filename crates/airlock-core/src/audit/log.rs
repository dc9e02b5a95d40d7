//! The writer: appends records to the chain, durably, from many processes at once.
//!
//! Layout of `<state>/audit/`:
//! * `audit-000001.jsonl`, `audit-000002.jsonl`, …: the log, one record per line.
//!   When the newest file reaches `max_file_bytes`, the next record opens a new
//!   file; its `prev` links to the last record of the file before, so the chain
//!   runs across files.
//! * `lock`: every append takes an exclusive `flock` on it, then reads the chain
//!   head from the file itself, so that parallel CLI runs and a server never
//!   interleave or fork the chain.
//! * `reserve`: disk space held (allocated, zeros) so that a run's execution
//!   record can be written after its command ran even if the disk filled
//!   meanwhile: a write that fails for lack of space frees it and retries.
//! * `head.json`: the seq and hash of the newest record, rewritten after each
//!   append. It lets `verify` notice records cut off the end of the log. It
//!   is created (seq 0) with the log, before the first record, so that a
//!   missing anchor always means a deleted one.
//!
//! Every file here is opened without following a symlink and must be a
//! regular file (see `regular.rs`).
//!
//! An append is one `write` of one whole line followed by `fdatasync`; the record
//! is acknowledged only after both. [`AuditLog::append_deferred`] splits the two
//! so that the sync can overlap other work; the head anchor then moves only
//! after the sync. A writer killed mid-append leaves a line
//! without its `\n`; the next writer (or `open`) cuts it off and records a
//! `repair` event. A failed write (a full disk) is cut back the same way and
//! reported, so that the caller can refuse to act unlogged.

use super::chain::{line_hash, GENESIS};
use super::record::{Event, Record, RepairEvent, SCHEMA_VERSION};
use super::{AuditConfig, AuditError};
use crate::state::ensure_private_dir;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub const FILE_PREFIX: &str = "audit-";
pub const FILE_SUFFIX: &str = ".jsonl";
pub const HEAD_FILE: &str = "head.json";
pub const LOCK_FILE: &str = "lock";
/// Room held for a run's execution record (see [`AuditLog::reserve`]).
pub const RESERVE_FILE: &str = "reserve";
/// `head.json` is always exactly this long (JSON padded with spaces).
pub const HEAD_BYTES: usize = 512;

/// Read the head anchor holding the log's lock (shared), so that a writer is
/// never caught half-way through rewriting it.
pub fn read_anchor_locked(dir: &Path) -> std::io::Result<Option<HeadAnchor>> {
    let _lock = lock_shared(dir)?;
    read_anchor(dir)
}

/// Waits until no writer is appending to the log (takes its lock shared and
/// lets go): what a reader saw of a line being written is then all of it.
pub fn wait_for_writers(dir: &Path) -> std::io::Result<()> {
    lock_shared(dir).map(drop)
}

/// The log's lock, held shared until the returned file is closed; `None`
/// where there is no lock file (no writer ever ran).
fn lock_shared(dir: &Path) -> std::io::Result<Option<std::fs::File>> {
    let lock_path = dir.join(LOCK_FILE);
    let lock = match super::regular::open_read(&lock_path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(std::io::Error::new(
                e.kind(),
                format!("the lock {}: {e}", lock_path.display()),
            ))
        }
    };
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockShared)?;
    Ok(Some(lock))
}

/// `audit-000042.jsonl`.
pub fn file_name(index: u64) -> String {
    format!("{FILE_PREFIX}{index:06}{FILE_SUFFIX}")
}

/// The indexes of the log files in `dir`, ascending.
pub fn list_files(dir: &Path) -> std::io::Result<Vec<u64>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(num) = name
            .strip_prefix(FILE_PREFIX)
            .and_then(|n| n.strip_suffix(FILE_SUFFIX))
        {
            if let Ok(n) = num.parse::<u64>() {
                out.push(n);
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// What `head.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadAnchor {
    pub seq: u64,
    pub id: String,
    pub hash: String,
    pub file: String,
}

impl HeadAnchor {
    /// The anchor of a log that has no record yet (written when the log is
    /// created): seq 0, the chain's genesis hash.
    pub fn genesis() -> HeadAnchor {
        HeadAnchor {
            seq: 0,
            id: "a0".into(),
            hash: GENESIS.to_string(),
            file: file_name(1),
        }
    }
}

/// The end of the chain: what the next record links to.
#[derive(Debug, Clone)]
struct ChainHead {
    seq: u64,
    hash: String,
}

/// The newest file, open for appending, and what we knew about it after our last
/// append. Valid only while nobody else has appended or rotated since.
struct Current {
    index: u64,
    file: File,
    ino: u64,
    len: u64,
    head: ChainHead,
    /// With an anchor: the newest checkpoint it made that this writer knows of
    /// (its record's seq, and when it was signed, ms).
    last_checkpoint: Option<(u64, u64)>,
}

/// How far back from the end a writer looks for the last checkpoint when it
/// (re)reads the log; none there means one is due.
const CHECKPOINT_SCAN_BYTES: u64 = 256 * 1024;

/// A record written but not yet synced: see [`AuditLog::append_deferred`].
#[must_use = "the record is not durable until AuditLog::make_durable ran"]
pub struct PendingSync {
    file: File,
    path: PathBuf,
    anchor: HeadAnchor,
}

pub struct AuditLog {
    dir: PathBuf,
    config: AuditConfig,
    lock_file: File,
    /// Serialises threads of this process; `flock` serialises processes.
    current: Mutex<Option<Current>>,
    /// Concurrent [`AuditLog::make_durable`] calls share one `fdatasync`.
    group: GroupCommit,
    /// Whether this process has seen the head anchor name a record: until
    /// then [`AuditLog::sync`] anchors as well, so that a fresh log's first
    /// record is never left behind an anchor that names none (which
    /// `verify` refuses while a server's first run is still going).
    anchored: std::sync::atomic::AtomicBool,
}

/// Group commit: one thread syncs (the leader) while the others whose records
/// were written before its sync began wait for its result instead of issuing
/// their own. A record is acknowledged only when a sync that started after it
/// was written succeeded.
#[derive(Default)]
struct GroupCommit {
    state: Mutex<GroupState>,
    done: std::sync::Condvar,
}

#[derive(Default)]
struct GroupState {
    /// The last record this process wrote: its seq and file.
    written: Option<(u64, String)>,
    /// Every record up to this seq is on disk.
    durable: u64,
    /// A sync covering up to this seq failed: those records are not
    /// acknowledged, whatever a later sync says (an error is reported once).
    failed: Option<(u64, String)>,
    syncing: bool,
    /// `fdatasync`s issued by [`AuditLog::make_durable`] (for tests and benches).
    syncs: u64,
}

impl AuditLog {
    /// Open (creating if needed, mode 0700) the log in `dir`, and repair a torn
    /// tail left by a writer that died mid-append.
    pub fn open(dir: &Path, config: AuditConfig) -> Result<AuditLog, AuditError> {
        let log = Self::open_unchecked(dir, config)?;
        log.with_lock(|log, current| log.refresh(current, true))?;
        Ok(log)
    }

    /// Open without reading the chain head or checking the anchor: only for
    /// [`AuditLog::reanchor`], which must work on a log that fails that check.
    pub fn open_unchecked(dir: &Path, config: AuditConfig) -> Result<AuditLog, AuditError> {
        super::regular::check_dir(dir)
            .map_err(|e| AuditError::io("opening the audit directory", dir, e))?;
        ensure_private_dir(dir)?;
        let lock_path = dir.join(LOCK_FILE);
        let lock_file = super::regular::open(
            &lock_path,
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .mode(0o600),
            true,
        )
        .map_err(|e| AuditError::io("opening the audit lock", &lock_path, e))?;
        let log = AuditLog {
            dir: dir.to_path_buf(),
            config,
            lock_file,
            current: Mutex::new(None),
            group: GroupCommit::default(),
            anchored: std::sync::atomic::AtomicBool::new(false),
        };
        Ok(log)
    }

    /// Accept the log as it is on disk when it no longer matches its head anchor
    /// (records were cut off the end, or the anchor was lost): append a
    /// `reanchor` record naming the old anchor, so that the loss stays on record.
    pub fn reanchor(&self) -> Result<Record, AuditError> {
        self.with_lock(|log, current| {
            *current = None;
            log.refresh(current, false)?;
            let cur = current.as_ref().expect("refresh() ran under the lock");
            let event = super::record::ReanchorEvent {
                previous_anchor: read_anchor(&log.dir).ok().flatten(),
                log_last_seq: cur.head.seq,
            };
            log.append_locked(current, Event::Reanchor(event))
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn config(&self) -> &AuditConfig {
        &self.config
    }

    /// Hold `bytes` of disk for the log before a run starts, so that its
    /// execution record can still be written if the disk fills meanwhile:
    /// `audit/reserve` is kept allocated (`fallocate`) at that size, and a
    /// record that fails for lack of space frees it and is written again. A
    /// refusal here (the space is not there) comes before anything ran.
    pub fn reserve(&self, bytes: u64) -> Result<(), AuditError> {
        let path = self.dir.join(RESERVE_FILE);
        let no_room = |e: std::io::Error| -> AuditError {
            if e.raw_os_error() == Some(rustix::io::Errno::NOSPC.raw_os_error())
                || e.kind() == std::io::ErrorKind::StorageFull
            {
                let free = rustix::fs::statvfs(&self.dir)
                    .map(|s| s.f_bavail.saturating_mul(s.f_frsize))
                    .unwrap_or(0);
                AuditError::NoRoom {
                    dir: self.dir.clone(),
                    needed: bytes,
                    free,
                }
            } else {
                AuditError::io("holding room for the execution record in", &path, e)
            }
        };
        self.with_lock(|_, _| {
            let file = super::regular::open(
                &path,
                OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .mode(0o600),
                true,
            )
            .map_err(no_room)?;
            let meta = file.metadata().map_err(no_room)?;
            if meta.len() >= bytes && meta.blocks().saturating_mul(512) >= bytes {
                return Ok(());
            }
            rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::empty(), 0, bytes)
                .map_err(|e| no_room(e.into()))
        })
    }

    /// Free the room [`AuditLog::reserve`] held: true if there was some.
    fn release_reserve(&self) -> bool {
        let path = self.dir.join(RESERVE_FILE);
        let Ok(file) = super::regular::open(&path, OpenOptions::new().write(true), true) else {
            return false;
        };
        let had = file.metadata().is_ok_and(|m| m.blocks() > 0);
        had && file.set_len(0).is_ok()
    }

    /// Append one event and return the record as written, after it is on disk.
    /// With an anchor configured, a checkpoint follows when one is due.
    pub fn append(&self, event: Event) -> Result<Record, AuditError> {
        self.with_lock(|log, current| {
            log.refresh(current, true)?;
            let record = log.append_locked(current, event)?;
            log.checkpoint_locked(current, false)?;
            Ok(record)
        })
    }

    /// Append one event like [`AuditLog::append`], but leave its `fdatasync`
    /// (and the head anchor, which must never name a record that is not on
    /// disk) to [`AuditLog::make_durable`], which may run on another thread
    /// while the caller does other work. The record is in the chain at once
    /// (the next append links to it); it is durable only once `make_durable`
    /// returned `Ok`, and nothing that depends on it (a command starting) may
    /// happen before.
    pub fn append_deferred(&self, event: Event) -> Result<(Record, PendingSync), AuditError> {
        self.with_lock(|log, current| {
            log.refresh(current, true)?;
            let (record, pending) = log.write_record(current, event)?;
            log.checkpoint_locked(current, false)?;
            Ok((record, pending))
        })
    }

    /// Sync the record of [`AuditLog::append_deferred`], then move the head
    /// anchor to it unless a later append already moved it further.
    pub fn make_durable(&self, pending: PendingSync) -> Result<(), AuditError> {
        self.make_all_durable(vec![pending])
    }

    /// The `fdatasync` half of [`AuditLog::make_durable`]: the record is on
    /// disk once this returns `Ok`, and the head anchor still names an earlier
    /// one until [`AuditLog::make_durable`] or [`AuditLog::make_all_durable`]
    /// takes the same `pending` (its sync is then covered). A lagging anchor
    /// is a lower bound, as it is between any append and its checkpoint.
    pub fn sync(&self, pending: &PendingSync) -> Result<(), AuditError> {
        use std::sync::atomic::Ordering;
        self.group_sync(&pending.file, &pending.path, &pending.anchor)?;
        if self.anchored.load(Ordering::Relaxed) {
            return Ok(());
        }
        self.with_lock(|log, _| {
            let on_disk = read_anchor(&log.dir).ok().flatten();
            if on_disk.is_some_and(|a| a.seq == 0) {
                log.write_head(&pending.anchor)?;
            }
            Ok(())
        })?;
        self.anchored.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// [`AuditLog::make_durable`] for several records: each synced (one
    /// `fdatasync` covers the records of one file), then the head anchor
    /// moved once, to the last of them.
    pub fn make_all_durable(&self, pending: Vec<PendingSync>) -> Result<(), AuditError> {
        let mut last: Option<HeadAnchor> = None;
        for PendingSync { file, path, anchor } in pending {
            self.group_sync(&file, &path, &anchor)?;
            if last.as_ref().is_none_or(|l| l.seq < anchor.seq) {
                last = Some(anchor);
            }
        }
        let Some(anchor) = last else {
            return Ok(());
        };
        self.with_lock(|log, _| {
            let on_disk = read_anchor(&log.dir).ok().flatten();
            if on_disk.is_none_or(|a| a.seq < anchor.seq) {
                log.write_head(&anchor)?;
            }
            Ok(())
        })
    }

    /// Makes the record `anchor` names durable, sharing a sync with other
    /// threads: a sync in flight that began after the record was written
    /// covers it; otherwise this thread syncs, for every record of this file
    /// written so far.
    fn group_sync(&self, file: &File, path: &Path, anchor: &HeadAnchor) -> Result<(), AuditError> {
        let gc = &self.group;
        let lost = |what: String| {
            AuditError::write(
                path,
                std::io::Error::other(format!("an earlier sync failed: {what}")),
            )
        };
        let mut st = gc.state.lock().map_err(|_| lost("lock poisoned".into()))?;
        loop {
            if let Some((upto, what)) = &st.failed {
                if *upto >= anchor.seq {
                    return Err(lost(what.clone()));
                }
            }
            if st.durable >= anchor.seq {
                return Ok(());
            }
            if st.syncing {
                st = gc.done.wait(st).map_err(|_| lost("lock poisoned".into()))?;
                continue;
            }
            // Leader: everything this process wrote to this file so far is
            // covered by one sync of it (earlier files were synced when the
            // log moved on to the next one).
            let target = match &st.written {
                Some((seq, f)) if *f == anchor.file && *seq > anchor.seq => *seq,
                _ => anchor.seq,
            };
            st.syncing = true;
            st.syncs += 1;
            drop(st);
            let synced = file.sync_data();
            st = gc.state.lock().map_err(|_| lost("lock poisoned".into()))?;
            st.syncing = false;
            match synced {
                Ok(()) => st.durable = st.durable.max(target),
                Err(e) => {
                    st.failed = Some((target, e.to_string()));
                    gc.done.notify_all();
                    return Err(AuditError::write(path, e));
                }
            }
            gc.done.notify_all();
        }
    }

    /// How many `fdatasync`s [`AuditLog::make_durable`] issued so far (the
    /// others were covered by one of these).
    pub fn group_syncs(&self) -> u64 {
        self.group.state.lock().map(|s| s.syncs).unwrap_or(0)
    }

    /// Notes a record written (not yet synced), for the group commit.
    fn note_written(&self, anchor: &HeadAnchor) {
        if let Ok(mut st) = self.group.state.lock() {
            if st.written.as_ref().is_none_or(|(s, _)| *s < anchor.seq) {
                st.written = Some((anchor.seq, anchor.file.clone()));
            }
        }
    }

    /// Notes a record synced by a plain append: it and every earlier record
    /// of this process are on disk.
    fn note_durable(&self, seq: u64) {
        if let Ok(mut st) = self.group.state.lock() {
            st.durable = st.durable.max(seq);
        }
    }

    /// Sign the chain's head now (`force`), or only when a checkpoint is due
    /// (the last is older than the interval and records followed it). `None`:
    /// no anchor configured, or nothing new to sign.
    pub fn checkpoint(&self, force: bool) -> Result<Option<Record>, AuditError> {
        if self.config.anchor.is_none() {
            return Ok(None);
        }
        self.with_lock(|log, current| {
            log.refresh(current, true)?;
            log.checkpoint_locked(current, force)
        })
    }

    fn checkpoint_locked(
        &self,
        current: &mut Option<Current>,
        force: bool,
    ) -> Result<Option<Record>, AuditError> {
        let Some(anchor) = self.config.anchor.clone() else {
            return Ok(None);
        };
        let cur = current.as_mut().expect("refresh() ran under the lock");
        let now = crate::clock::now_ms();
        let moved = match cur.last_checkpoint {
            None => cur.head.seq > 0,
            Some((seq, _)) => cur.head.seq > seq,
        };
        let due = match cur.last_checkpoint {
            None => true,
            Some((_, at)) => now.saturating_sub(at) >= anchor.interval.as_millis() as u64,
        };
        if !moved || !(force || due) {
            return Ok(None);
        }
        let time = crate::clock::format_rfc3339(now);
        let event = anchor.sign(cur.head.seq, &cur.head.hash, &time);
        let record = self.append_locked(current, Event::Checkpoint(event.clone()))?;
        if let Some(cur) = current.as_mut() {
            cur.last_checkpoint = Some((record.seq, now));
        }
        for problem in anchor.export(&event) {
            eprintln!(
                "airlock: audit checkpoint {}: export failed: {problem}",
                record.id
            );
        }
        Ok(Some(record))
    }

    /// The newest checkpoint made by this writer's anchor in the last
    /// [`CHECKPOINT_SCAN_BYTES`] of the newest file.
    fn scan_last_checkpoint(&self, file: &mut File, len: u64) -> Option<(u64, u64)> {
        let anchor = self.config.anchor.as_ref()?;
        let start = len.saturating_sub(CHECKPOINT_SCAN_BYTES);
        let tail = read_range(file, start, len).ok()?;
        tail.split(|&b| b == b'\n')
            .rev()
            .filter(|line| line.windows(12).any(|w| w == b"\"checkpoint\""))
            .filter_map(|line| serde_json::from_slice::<Record>(line).ok())
            .find_map(|r| match r.event {
                Event::Checkpoint(c) if anchor.made(&c) => {
                    Some((r.seq, crate::clock::parse_rfc3339(&c.signed_at)?))
                }
                _ => None,
            })
    }

    fn with_lock<T>(
        &self,
        f: impl FnOnce(&Self, &mut Option<Current>) -> Result<T, AuditError>,
    ) -> Result<T, AuditError> {
        let mut current = self
            .current
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        rustix::fs::flock(&self.lock_file, rustix::fs::FlockOperation::LockExclusive).map_err(
            |e| AuditError::io("locking the audit log", &self.dir.join(LOCK_FILE), e.into()),
        )?;
        let result = f(self, &mut current);
        if result.is_err() {
            // Whatever failed, re-read from disk next time.
            *current = None;
        }
        let _ = rustix::fs::flock(&self.lock_file, rustix::fs::FlockOperation::Unlock);
        result
    }

    /// Make `current` describe the newest file as it is on disk now, repairing a
    /// torn tail. Cheap when nobody else wrote since our last append: one `fstat`
    /// and one `stat`.
    fn refresh(&self, current: &mut Option<Current>, check_anchor: bool) -> Result<(), AuditError> {
        if let Some(cur) = current.as_ref() {
            let next_exists = self.dir.join(file_name(cur.index + 1)).exists();
            let meta = cur
                .file
                .metadata()
                .map_err(|e| self.err("reading the audit file", cur.index, e))?;
            if !next_exists && meta.ino() == cur.ino && meta.len() == cur.len && meta.nlink() > 0 {
                return Ok(());
            }
        }
        *current = None;
        let files = list_files(&self.dir)
            .map_err(|e| AuditError::io("listing the audit log", &self.dir, e))?;
        let index = files.last().copied().unwrap_or(1);
        let path = self.dir.join(file_name(index));
        let mut file =
            open_append(&path).map_err(|e| self.err("opening the audit file", index, e))?;
        if files.is_empty() {
            sync_dir(&self.dir)
                .map_err(|e| AuditError::io("syncing the audit directory", &self.dir, e))?;
        }
        let mut len = file
            .metadata()
            .map_err(|e| self.err("reading the audit file", index, e))?
            .len();
        // A torn last line (a writer killed mid-append) is found here, but
        // cut only after the anchor check below: if the anchor names the torn
        // record or a later one, the record was acknowledged, so this is not
        // a crash but tampering, and the bytes are evidence to leave alone.
        let mut repair = None;
        if len > 0
            && last_byte(&mut file, len)
                .map_err(|e| self.err("reading the audit file", index, e))?
                != b'\n'
        {
            let keep = last_newline_end(&mut file, len)
                .map_err(|e| self.err("reading the audit file", index, e))?;
            let dropped = read_range(&mut file, keep, len)
                .map_err(|e| self.err("reading the audit file", index, e))?;
            repair = Some(RepairEvent {
                file: file_name(index),
                length_before: len,
                length_after: keep,
                dropped_sha256: hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&dropped)),
            });
        }
        let whole = repair.as_ref().map_or(len, |r| r.length_after);
        let head = self.chain_head(&files, index, &mut file, whole)?;
        if check_anchor {
            self.check_anchor(&head)?;
        }
        if let Some(r) = &repair {
            file.set_len(r.length_after)
                .map_err(|e| self.err("cutting the torn tail of", index, e))?;
            file.sync_all().map_err(|e| self.err("syncing", index, e))?;
            len = r.length_after;
        }
        if head.seq == 0 {
            // A fresh log gets its anchor now, under the lock and before its
            // first record: a run's decision record is anchored only after
            // its sync, and another writer arriving in between must find an
            // anchor (that lags) rather than none (which means it was deleted).
            let path = self.dir.join(HEAD_FILE);
            let anchor = read_anchor(&self.dir)
                .map_err(|e| AuditError::io("reading the head anchor", &path, e))?;
            if anchor.is_none() {
                self.write_head(&HeadAnchor::genesis())?;
                sync_dir(&self.dir)
                    .map_err(|e| AuditError::io("syncing the audit directory", &self.dir, e))?;
            }
        }
        let ino = file
            .metadata()
            .map_err(|e| self.err("reading the audit file", index, e))?
            .ino();
        let last_checkpoint = self.scan_last_checkpoint(&mut file, len);
        *current = Some(Current {
            index,
            file,
            ino,
            len,
            head,
            last_checkpoint,
        });
        if let Some(repair) = repair {
            self.append_locked(current, Event::Repair(repair))?;
        }
        Ok(())
    }

    /// Refuse to extend a log whose end no longer matches the anchor: appending
    /// would overwrite the evidence that records were removed or edited.
    fn check_anchor(&self, head: &ChainHead) -> Result<(), AuditError> {
        let path = self.dir.join(HEAD_FILE);
        let anchor = read_anchor(&self.dir)
            .map_err(|e| AuditError::io("reading the head anchor", &path, e))?;
        let problem = match anchor {
            None if head.seq == 0 => return Ok(()),
            None => "the head anchor is missing".to_string(),
            Some(a) if a.seq > head.seq => {
                format!("the log ends at a{} but the head anchor names {}: records were cut off the end", head.seq, a.id)
            }
            Some(a) if a.seq == head.seq && a.hash != head.hash => {
                format!(
                    "the last record a{} does not match the head anchor (it was edited)",
                    head.seq
                )
            }
            Some(_) => return Ok(()),
        };
        Err(AuditError::Corrupt {
            file: path,
            detail: format!(
                "{problem}; refusing to append. Inspect with `airlock audit verify`; `airlock audit repair --reanchor` accepts the log as it is and records that"
            ),
        })
    }

    /// The last record of the log: in the newest file, or (if a rotation left
    /// the newest file empty) in the one before.
    fn chain_head(
        &self,
        files: &[u64],
        index: u64,
        file: &mut File,
        len: u64,
    ) -> Result<ChainHead, AuditError> {
        if len > 0 {
            let line =
                last_line(file, len).map_err(|e| self.err("reading the audit file", index, e))?;
            return self.head_of_line(index, &line);
        }
        let Some(&prev_index) = files.iter().rev().find(|&&i| i < index) else {
            return Ok(ChainHead {
                seq: 0,
                hash: GENESIS.to_string(),
            });
        };
        let path = self.dir.join(file_name(prev_index));
        let mut prev = super::regular::open_read(&path)
            .map_err(|e| self.err("opening the audit file", prev_index, e))?;
        let prev_len = prev
            .metadata()
            .map_err(|e| self.err("reading the audit file", prev_index, e))?
            .len();
        if prev_len == 0 {
            return Err(AuditError::Corrupt {
                file: path,
                detail: "an earlier log file is empty; run `airlock audit verify`".into(),
            });
        }
        let line = last_line(&mut prev, prev_len)
            .map_err(|e| self.err("reading the audit file", prev_index, e))?;
        self.head_of_line(prev_index, &line)
    }

    fn head_of_line(&self, index: u64, line: &[u8]) -> Result<ChainHead, AuditError> {
        #[derive(Deserialize)]
        struct SeqOnly {
            seq: u64,
        }
        let parsed: SeqOnly = serde_json::from_slice(line).map_err(|e| AuditError::Corrupt {
            file: self.dir.join(file_name(index)),
            detail: format!("the last record is not readable ({e}); run `airlock audit verify`"),
        })?;
        Ok(ChainHead {
            seq: parsed.seq,
            hash: line_hash(line),
        })
    }

    fn append_locked(
        &self,
        current: &mut Option<Current>,
        event: Event,
    ) -> Result<Record, AuditError> {
        let (record, pending) = self.write_record(current, event)?;
        pending
            .file
            .sync_data()
            .map_err(|e| AuditError::write(&pending.path, e))?;
        self.note_durable(pending.anchor.seq);
        self.write_head(&pending.anchor)?;
        Ok(record)
    }

    /// Write one record (not yet synced) and move the chain head to it.
    fn write_record(
        &self,
        current: &mut Option<Current>,
        event: Event,
    ) -> Result<(Record, PendingSync), AuditError> {
        let cur = current.as_mut().expect("refresh() ran under the lock");
        if cur.len >= self.config.max_file_bytes {
            // A record of this file whose sync was deferred is on disk before
            // the next file's first record can be (the anchor never leads).
            cur.file
                .sync_data()
                .map_err(|e| self.err("syncing", cur.index, e))?;
            let index = cur.index + 1;
            let path = self.dir.join(file_name(index));
            let file =
                open_append(&path).map_err(|e| self.err("creating the audit file", index, e))?;
            sync_dir(&self.dir)
                .map_err(|e| AuditError::io("syncing the audit directory", &self.dir, e))?;
            let ino = file
                .metadata()
                .map_err(|e| self.err("reading the audit file", index, e))?
                .ino();
            let head = cur.head.clone();
            let last_checkpoint = cur.last_checkpoint;
            *cur = Current {
                index,
                file,
                ino,
                len: 0,
                head,
                last_checkpoint,
            };
        }
        let seq = cur.head.seq + 1;
        let record = Record {
            v: SCHEMA_VERSION,
            seq,
            id: format!("a{seq}"),
            time: crate::clock::format_rfc3339(crate::clock::now_ms()),
            prev: cur.head.hash.clone(),
            event,
        };
        let mut line = serde_json::to_vec(&record).map_err(AuditError::Serialize)?;
        let hash = line_hash(&line);
        line.push(b'\n');
        let path = self.dir.join(file_name(cur.index));
        let mut written = cur.file.write_all(&line);
        if let Err(e) = &written {
            // Leave no partial line behind: cut back to where we started.
            let _ = cur.file.set_len(cur.len);
            // Out of space: the room held for this (see `reserve`) goes.
            let full = e.kind() == std::io::ErrorKind::StorageFull
                || e.kind() == std::io::ErrorKind::QuotaExceeded;
            if full && self.release_reserve() {
                written = cur.file.write_all(&line);
                if written.is_err() {
                    let _ = cur.file.set_len(cur.len);
                }
            }
        }
        if let Err(e) = written {
            let _ = cur.file.sync_data();
            return Err(AuditError::write(&path, e));
        }
        let file = match cur.file.try_clone() {
            Ok(f) => f,
            Err(e) => {
                let _ = cur.file.set_len(cur.len);
                let _ = cur.file.sync_data();
                return Err(self.err("duplicating the descriptor of", cur.index, e));
            }
        };
        cur.len += line.len() as u64;
        cur.head = ChainHead {
            seq,
            hash: hash.clone(),
        };
        let anchor = HeadAnchor {
            seq,
            id: record.id.clone(),
            hash,
            file: file_name(cur.index),
        };
        self.note_written(&anchor);
        Ok((record, PendingSync { file, path, anchor }))
    }

    /// Rewritten by rename after each append; not fsynced (the log is). After a
    /// crash it may lag the log by the last records, never lead it.
    fn write_head(&self, anchor: &HeadAnchor) -> Result<(), AuditError> {
        use std::os::unix::fs::FileExt;
        let path = self.dir.join(HEAD_FILE);
        let mut bytes = serde_json::to_vec(anchor).map_err(AuditError::Serialize)?;
        // One fixed-size write at offset 0, in place: a rename would make ext4
        // flush the new file's data before the rename (auto_da_alloc), which
        // costs milliseconds per record. 512 bytes is one sector, so a crash
        // leaves the old or the new anchor; readers take the lock.
        if bytes.len() >= HEAD_BYTES {
            return Err(AuditError::io(
                "writing the head anchor",
                &path,
                std::io::Error::new(std::io::ErrorKind::InvalidData, "anchor too long"),
            ));
        }
        bytes.resize(HEAD_BYTES - 1, b' ');
        bytes.push(b'\n');
        let write = || -> std::io::Result<()> {
            let f = super::regular::open(
                &path,
                OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .mode(0o600),
                true,
            )?;
            f.write_all_at(&bytes, 0)?;
            if f.metadata()?.len() != HEAD_BYTES as u64 {
                f.set_len(HEAD_BYTES as u64)?;
            }
            Ok(())
        };
        write().map_err(|e| AuditError::write(&path, e))
    }

    fn err(&self, context: &str, index: u64, source: std::io::Error) -> AuditError {
        AuditError::io(context, &self.dir.join(file_name(index)), source)
    }
}

/// The head anchor, if there is one.
pub fn read_anchor(dir: &Path) -> std::io::Result<Option<HeadAnchor>> {
    let read = || -> std::io::Result<Vec<u8>> {
        let file = super::regular::open_read(&dir.join(HEAD_FILE))?;
        // It is 512 bytes; a larger one is not an anchor airlock wrote.
        let mut bytes = Vec::with_capacity(HEAD_BYTES);
        file.take(64 * 1024).read_to_end(&mut bytes)?;
        Ok(bytes)
    };
    match read() {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn open_append(path: &Path) -> std::io::Result<File> {
    super::regular::open(
        path,
        OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .mode(0o600),
        true,
    )
}

pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

fn last_byte(file: &mut File, len: u64) -> std::io::Result<u8> {
    let mut b = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1))?;
    file.read_exact(&mut b)?;
    Ok(b[0])
}

fn read_range(file: &mut File, from: u64, to: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; (to - from) as usize];
    file.seek(SeekFrom::Start(from))?;
    file.read_exact(&mut buf)?;
    Ok(buf)
}

/// Offset just past the last `\n` before `len` (0 if there is none).
fn last_newline_end(file: &mut File, len: u64) -> std::io::Result<u64> {
    const CHUNK: u64 = 64 * 1024;
    let mut end = len;
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let buf = read_range(file, start, end)?;
        if let Some(pos) = buf.iter().rposition(|&b| b == b'\n') {
            return Ok(start + pos as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// The last line of a file that ends with `\n`, without the `\n`.
fn last_line(file: &mut File, len: u64) -> std::io::Result<Vec<u8>> {
    let start = last_newline_end(file, len - 1)?;
    read_range(file, start, len - 1)
}
