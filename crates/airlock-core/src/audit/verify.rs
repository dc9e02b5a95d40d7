//! `airlock audit verify`: walk every file of the log in order and check the chain.
//!
//! It detects an edited record (the next record's `prev` no longer matches, or the
//! head anchor no longer matches the last record), a deleted record (a `seq`
//! gap and a `prev` mismatch), reordered records (the same), records cut off the
//! end (the head anchor names a record the log no longer has), a torn last line,
//! and a missing or emptied file in the middle of a rotation. It reports the
//! first problem, naming the file, line and record. Read-only: it repairs nothing.
//! It streams the log (memory does not grow with it) and also returns
//! warnings that are not failures: an anchor lagging the end by more than
//! [`ANCHOR_LAG_WARN`] records, run decisions with no execution record,
//! execution records with no decision record.

use super::chain::{line_hash, GENESIS};
use super::log::{
    file_name, list_files, read_anchor_locked, wait_for_writers, HeadAnchor, HEAD_FILE,
};
use super::record::{Event, Proceeding, Record, SCHEMA_VERSION};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Seek};
use std::path::{Path, PathBuf};

/// The head anchor may lag the end of the log by this many records without a
/// warning. A CLI run anchors each record as it syncs it (a lag of one while
/// a record is between its write and its sync); a server anchors a run's
/// records after its answer, so its runs in flight lag the anchor.
pub const ANCHOR_LAG_WARN: u64 = 16;

/// Run decisions with no execution record, by id, named in the warning.
const ORPHANS_NAMED: usize = 10;

/// Decisions waiting for their execution record while the walk goes on; past
/// this many, the oldest is counted as orphaned (memory stays bounded).
const ORPHANS_TRACKED: usize = 4096;

/// Decisions remembered for the executions that follow them (an execution is
/// written within one run of its decision); past this many, the oldest is
/// forgotten and an execution naming it is not checked (memory stays bounded).
const DECISIONS_TRACKED: usize = 65_536;

/// The longest line `verify` reads: far more than any record airlock writes
/// (a line is one record; output is capped by AIRLOCK_AUDIT_OUTPUT_BYTES).
pub const MAX_LINE_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq)]
pub struct VerifyReport {
    pub files: usize,
    pub records: u64,
    /// Id and hash of the last record (`None` for an empty log).
    pub last: Option<(String, String)>,
    /// Worth a look, not a failure: a head anchor lagging the end of the log
    /// by more than [`ANCHOR_LAG_WARN`], run decisions with no execution record.
    pub warnings: Vec<String>,
}

/// The first bad spot in the log.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{}: {problem}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct VerifyFailure {
    pub file: PathBuf,
    /// 1-based line within `file`.
    pub line: Option<u64>,
    /// The record's id as it claims (`a42`), when readable.
    pub record_id: Option<String>,
    pub problem: String,
}

pub fn verify(dir: &Path) -> Result<VerifyReport, VerifyFailure> {
    walk(dir, |_, _| Ok(()))
}

/// The full change lists of records that list only the first changes of
/// their set (`<state>/changes/<request id>.list`): each must hash to the
/// record's `change_summary.sha256`; a missing one is a warning (lists kept
/// before they were written, or removed).
#[derive(Default)]
struct ChangeLists {
    missing: Vec<String>,
    count: u64,
}

impl ChangeLists {
    fn see(&mut self, dir: &Path, record: &Record) -> Result<(), String> {
        let (request_id, summary) = match &record.event {
            Event::Execution(e) => (&e.request_id, e.change_summary.as_ref()),
            Event::Apply(a) => (&a.request_id, a.change_summary.as_ref()),
            _ => return Ok(()),
        };
        let Some(summary) =
            summary.filter(|s| s.total > airlock_sandbox::workspace::AUDIT_LISTED as u64)
        else {
            return Ok(());
        };
        let state = dir.parent().unwrap_or(dir);
        let at = crate::ledger::change_list_path(state, request_id);
        let file = match super::regular::open_read(&at) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.count += 1;
                if self.missing.len() < ORPHANS_NAMED {
                    self.missing.push(record.id.clone());
                }
                return Ok(());
            }
            Err(e) => {
                return Err(format!(
                    "the full change list {} cannot be read: {e}",
                    at.display()
                ))
            }
        };
        let mut hasher = <sha2::Sha256 as sha2::Digest>::new();
        let mut reader = std::io::BufReader::new(file);
        std::io::copy(&mut reader, &mut DigestWriter(&mut hasher))
            .map_err(|e| format!("the full change list {} cannot be read: {e}", at.display()))?;
        let got = hex::encode(sha2::Digest::finalize(hasher));
        if got != summary.sha256 {
            return Err(format!(
                "the full change list {} hashes to {got}, but {} says {} (the list was edited or replaced)",
                at.display(),
                record.id,
                summary.sha256
            ));
        }
        Ok(())
    }

    fn warning(self) -> Option<String> {
        (self.count > 0).then(|| {
            let more = self.count - self.missing.len() as u64;
            format!(
                "{} record(s) of more than {} changes have no full change list in changes/: {}{} (written by a version before the lists, or removed)",
                self.count,
                airlock_sandbox::workspace::AUDIT_LISTED,
                self.missing.join(", "),
                if more > 0 { format!(" and {more} more") } else { String::new() }
            )
        })
    }
}

/// Feeds what is written into a hash.
struct DigestWriter<'a>(&'a mut sha2::Sha256);

impl std::io::Write for DigestWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        sha2::Digest::update(self.0, buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Run decisions waiting for their execution record.
#[derive(Default)]
struct Orphans {
    by_seq: BTreeMap<u64, String>,
    by_request: HashMap<String, u64>,
    count: u64,
    named: Vec<String>,
}

impl Orphans {
    fn see(&mut self, record: &Record) {
        match &record.event {
            Event::Decision(d) if d.disposition == Proceeding::Run => {
                if let Some(old) = self.by_request.insert(d.request_id.clone(), record.seq) {
                    self.by_seq.remove(&old);
                }
                self.by_seq.insert(record.seq, d.request_id.clone());
                if self.by_seq.len() > ORPHANS_TRACKED {
                    if let Some((seq, rid)) = self.by_seq.pop_first() {
                        self.by_request.remove(&rid);
                        self.orphan(seq);
                    }
                }
            }
            Event::Execution(e) => {
                if let Some(seq) = self.by_request.remove(&e.request_id) {
                    self.by_seq.remove(&seq);
                }
            }
            _ => {}
        }
    }

    fn orphan(&mut self, seq: u64) {
        self.count += 1;
        if self.named.len() < ORPHANS_NAMED {
            self.named.push(format!("a{seq}"));
        }
    }

    fn warning(mut self) -> Option<String> {
        for seq in std::mem::take(&mut self.by_seq).into_keys() {
            self.orphan(seq);
        }
        (self.count > 0).then(|| {
            let more = self.count - self.named.len() as u64;
            format!(
                "{} run decision(s) have no execution record: {}{} (the run's process was killed or died before the command's outcome was recorded, or it is still running); `airlock audit show ID` shows what was allowed",
                self.count,
                self.named.join(", "),
                if more > 0 { format!(" and {more} more") } else { String::new() }
            )
        })
    }
}

/// Execution records whose request has no decision record before them. Every
/// run writes its decision (`run`, or the `approval_pending` one a person then
/// answered) before anything runs, so an execution without one means the
/// decision was cut out of the log (and the chain rebuilt around the gap).
#[derive(Default)]
struct Undecided {
    decided: std::collections::HashSet<String>,
    order: std::collections::VecDeque<String>,
    /// Decisions forgotten past [`DECISIONS_TRACKED`]: an execution not found
    /// may have been one of theirs.
    forgot: bool,
    count: u64,
    named: Vec<String>,
}

impl Undecided {
    fn see(&mut self, record: &Record) {
        match &record.event {
            // A request's first decision only (an approval's later ones share it).
            Event::Decision(d) if !self.decided.contains(&d.request_id) => {
                self.decided.insert(d.request_id.clone());
                self.order.push_back(d.request_id.clone());
                if self.order.len() > DECISIONS_TRACKED {
                    if let Some(old) = self.order.pop_front() {
                        self.decided.remove(&old);
                        self.forgot = true;
                    }
                }
            }
            Event::Execution(e) if !self.decided.contains(&e.request_id) && !self.forgot => {
                self.count += 1;
                if self.named.len() < ORPHANS_NAMED {
                    self.named.push(record.id.clone());
                }
            }
            _ => {}
        }
    }

    fn warning(self) -> Option<String> {
        (self.count > 0).then(|| {
            let more = self.count - self.named.len() as u64;
            format!(
                "{} execution record(s) have no decision record before them: {}{} (every run's decision is written before it runs: records were removed from the log and the chain rebuilt, or the log was written by another tool); `airlock audit show ID` shows what ran",
                self.count,
                self.named.join(", "),
                if more > 0 { format!(" and {more} more") } else { String::new() }
            )
        })
    }
}

/// The anchor itself must be well-formed and, while the log has records,
/// name one of them (seq 0 is the anchor of a log with none).
fn check_anchor_shape(dir: &Path, anchor: &HeadAnchor) -> Result<(), VerifyFailure> {
    let well_formed = anchor.id == format!("a{}", anchor.seq)
        && anchor.hash.len() == 64
        && anchor
            .hash
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && list_files_name_ok(&anchor.file);
    if well_formed {
        return Ok(());
    }
    Err(VerifyFailure {
        file: dir.join(HEAD_FILE),
        line: None,
        record_id: Some(anchor.id.clone()),
        problem: format!(
            "the head anchor is malformed (seq {}, id {:?}, hash {:?}, file {:?}): airlock never writes that, so head.json was edited; `airlock audit repair --reanchor` rewrites it from the log (and records that)",
            anchor.seq, anchor.id, short(&anchor.hash), anchor.file
        ),
    })
}

fn list_files_name_ok(name: &str) -> bool {
    name.strip_prefix(super::log::FILE_PREFIX)
        .and_then(|n| n.strip_suffix(super::log::FILE_SUFFIX))
        .and_then(|n| n.parse::<u64>().ok())
        .is_some_and(|i| file_name(i) == name)
}

/// [`verify`], calling `each` with every record and its hash as it goes: the
/// log is read line by line, so memory does not grow with it.
pub(crate) fn walk(
    dir: &Path,
    mut each: impl FnMut(&Record, &str) -> Result<(), VerifyFailure>,
) -> Result<VerifyReport, VerifyFailure> {
    if let Err(e) = super::regular::check_dir(dir) {
        return Err(VerifyFailure {
            file: dir.to_path_buf(),
            line: None,
            record_id: None,
            problem: e.to_string(),
        });
    }
    // The anchor first: the log only grows after it, so a writer appending
    // while we read cannot make the anchor look ahead of the log.
    let anchor = read_anchor_locked(dir).map_err(|e| VerifyFailure {
        file: dir.join(HEAD_FILE),
        line: None,
        record_id: None,
        problem: format!(
            "head anchor unreadable ({e}); `airlock audit repair --reanchor` rewrites it from the log"
        ),
    })?;
    if let Some(a) = &anchor {
        check_anchor_shape(dir, a)?;
    }
    let fail = |file: PathBuf, line: Option<u64>, record_id: Option<String>, problem: String| {
        Err(VerifyFailure {
            file,
            line,
            record_id,
            problem,
        })
    };
    let files = match list_files(dir) {
        Ok(files) => files,
        Err(e) => {
            return fail(
                dir.to_path_buf(),
                None,
                None,
                format!("cannot list the log: {e}"),
            )
        }
    };
    let mut prev_hash = GENESIS.to_string();
    let mut expected_seq = 1u64;
    let mut last: Option<(String, String)> = None;
    let mut last_file = None;
    let mut orphans = Orphans::default();
    let mut undecided = Undecided::default();
    let mut lists = ChangeLists::default();
    for (position, &index) in files.iter().enumerate() {
        let path = dir.join(file_name(index));
        let want_index = position as u64 + 1;
        if index != want_index {
            return fail(
                dir.join(file_name(want_index)),
                None,
                None,
                format!(
                    "log file is missing (the files jump to {})",
                    file_name(index)
                ),
            );
        }
        let mut reader = match super::regular::open_read(&path) {
            Ok(f) => BufReader::with_capacity(256 * 1024, f),
            Err(e) => return fail(path, None, None, format!("cannot read: {e}")),
        };
        let mut line_no = 0u64;
        let mut line = Vec::new();
        // Where the line being read starts, and whether its end was already
        // waited for (see below).
        let mut line_start = 0u64;
        let mut waited = false;
        loop {
            line.clear();
            let n = match (&mut reader)
                .take(MAX_LINE_BYTES + 1)
                .read_until(b'\n', &mut line)
            {
                Ok(n) => n,
                Err(e) => return fail(path, Some(line_no + 1), None, format!("cannot read: {e}")),
            };
            if n == 0 {
                break;
            }
            if line.last() != Some(&b'\n') && n as u64 <= MAX_LINE_BYTES && !waited {
                // A writer may be appending this very line: a reader can see
                // part of a write. Once no writer holds the log's lock, the
                // line is read again; only then is a missing end a torn tail.
                waited = true;
                let _ = wait_for_writers(dir);
                if let Err(e) = reader.seek(std::io::SeekFrom::Start(line_start)) {
                    return fail(path, Some(line_no + 1), None, format!("cannot read: {e}"));
                }
                continue;
            }
            waited = false;
            line_start += n as u64;
            line_no += 1;
            if line.last() != Some(&b'\n') {
                if n as u64 > MAX_LINE_BYTES {
                    return fail(
                        path,
                        Some(line_no),
                        None,
                        format!(
                            "a line longer than {MAX_LINE_BYTES} bytes: not a record airlock wrote"
                        ),
                    );
                }
                return fail(
                    path,
                    Some(line_no),
                    None,
                    format!(
                        "incomplete last record ({} bytes without a line end): a writer died mid-append or the file was truncated; `airlock audit repair` cuts it off and logs the repair",
                        line.len()
                    ),
                );
            }
            line.pop();
            let record: Record = match serde_json::from_slice(&line) {
                Ok(r) => r,
                Err(e) => {
                    let claimed = claimed_id(&line);
                    return fail(
                        path,
                        Some(line_no),
                        claimed,
                        format!("not a valid record: {e}"),
                    );
                }
            };
            let id = Some(record.id.clone());
            if record.v != SCHEMA_VERSION {
                return fail(
                    path,
                    Some(line_no),
                    id,
                    format!("unknown schema version {}", record.v),
                );
            }
            if record.seq != expected_seq {
                let what = if record.seq > expected_seq {
                    format!(
                        "record(s) missing: expected seq {expected_seq}, found {}",
                        record.seq
                    )
                } else {
                    format!(
                        "out of order: expected seq {expected_seq}, found {}",
                        record.seq
                    )
                };
                return fail(path, Some(line_no), id, what);
            }
            if record.id != format!("a{}", record.seq) {
                return fail(
                    path,
                    Some(line_no),
                    id,
                    format!("id does not match seq {}", record.seq),
                );
            }
            if record.prev != prev_hash {
                return fail(
                    path,
                    Some(line_no),
                    id,
                    format!(
                        "chain broken: prev is {} but the previous record hashes to {} (this or the previous record was edited, removed or moved)",
                        short(&record.prev),
                        short(&prev_hash)
                    ),
                );
            }
            prev_hash = line_hash(&line);
            if let Some(a) = anchor.as_ref().filter(|a| a.seq == record.seq) {
                if a.hash != prev_hash {
                    return fail(
                        path,
                        Some(line_no),
                        id,
                        format!(
                            "record {} does not match the head anchor's hash (it was edited or replaced)",
                            record.id
                        ),
                    );
                }
                if a.file != file_name(index) {
                    return fail(
                        path,
                        Some(line_no),
                        id,
                        format!(
                            "the head anchor places {} in {}, but it is in {}: head.json was edited or the files were renamed",
                            record.id,
                            a.file,
                            file_name(index)
                        ),
                    );
                }
            }
            orphans.see(&record);
            undecided.see(&record);
            if let Err(problem) = lists.see(dir, &record) {
                return fail(path, Some(line_no), id, problem);
            }
            each(&record, &prev_hash)?;
            expected_seq += 1;
            last = Some((record.id.clone(), prev_hash.clone()));
        }
        if line_no == 0 && position + 1 < files.len() {
            return fail(
                path,
                None,
                None,
                "log file is empty but later files exist (records were deleted)".into(),
            );
        }
        last_file = Some(path);
    }
    let records = expected_seq - 1;
    let mut warnings = check_head(dir, anchor, records, &last, last_file)?;
    warnings.extend(orphans.warning());
    warnings.extend(undecided.warning());
    warnings.extend(lists.warning());
    Ok(VerifyReport {
        files: files.len(),
        records,
        last,
        warnings,
    })
}

/// The head anchor must name a record the log still has, with the same hash
/// (the hash was compared during the walk, see `walk`); a log with records
/// must have an anchor naming one of them. Returns the warnings.
fn check_head(
    dir: &Path,
    anchor: Option<HeadAnchor>,
    last_seq: u64,
    last: &Option<(String, String)>,
    last_file: Option<PathBuf>,
) -> Result<Vec<String>, VerifyFailure> {
    let file = last_file.unwrap_or_else(|| dir.to_path_buf());
    match anchor {
        None if last.is_none() => Ok(vec![]),
        None => Err(VerifyFailure {
            file: dir.join(HEAD_FILE),
            line: None,
            record_id: None,
            problem: "head anchor missing: records at the end may have been removed; `airlock audit repair --reanchor` accepts the log as it is (and records that)".into(),
        }),
        Some(anchor) if anchor.seq > last_seq => Err(VerifyFailure {
            file,
            line: None,
            record_id: Some(anchor.id.clone()),
            problem: format!(
                "the log ends at {} but the head anchor names {}: records were cut off the end",
                last.as_ref().map_or("the start".to_string(), |(id, _)| id.clone()),
                anchor.id
            ),
        }),
        Some(anchor) if anchor.seq == 0 && last_seq > 0 => Err(VerifyFailure {
            file: dir.join(HEAD_FILE),
            line: None,
            record_id: None,
            problem: format!(
                "the head anchor names no record (seq 0) but the log has {last_seq}: head.json was set back, which would hide an edited or cut end of the log (or a writer died between the log's very first record and its anchor); `airlock audit repair --reanchor` accepts the log as it is (and records that)"
            ),
        }),
        // A small lag is normal: writers appended after we read the anchor,
        // a server's runs in flight, or a crash between a record's sync and
        // its anchor.
        Some(anchor) if last_seq - anchor.seq > ANCHOR_LAG_WARN => Ok(vec![format!(
            "the head anchor names {}, {} record(s) before the end of the log ({}): those records are not covered by it, so an edit or cut among them would not show here. Expected only while a busy server answers runs or after a crash; if it stays, head.json may have been set back (signed checkpoints exported elsewhere are what proves the log's end: `verify --key --checkpoints`)",
            anchor.id,
            last_seq - anchor.seq,
            last.as_ref().map_or("", |(id, _)| id.as_str()),
        )]),
        Some(_) => Ok(vec![]),
    }
}

fn claimed_id(line: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    v.get("id")?.as_str().map(str::to_string)
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// What `verify --key` adds to a chain that holds together.
#[derive(Debug, Clone, PartialEq)]
pub struct AnchoredReport {
    pub chain: VerifyReport,
    /// Checkpoints in the log that verify with the key.
    pub checkpoints: usize,
    /// External checkpoints (exported copies) that match the log.
    pub external: usize,
    /// The last record a valid checkpoint signed (in the log or outside it).
    pub anchored_through: u64,
    /// Records after it: not covered by any signature yet.
    pub unanchored: u64,
}

/// The chain as [`verify`] checks it, plus every checkpoint: each one in the
/// log must be signed by `key` over exactly the record before it, at least one
/// must exist, and each external checkpoint (copies shipped elsewhere) must
/// name a record the log still has, with the same hash. A rewrite that the
/// key holder did not sign fails one of these.
pub fn verify_anchored(
    dir: &Path,
    key: &ed25519_dalek::VerifyingKey,
    external: &[super::record::CheckpointEvent],
) -> Result<AnchoredReport, VerifyFailure> {
    use super::anchor::check_signature;
    let fail = |record_id: Option<String>, problem: String| VerifyFailure {
        file: dir.to_path_buf(),
        line: None,
        record_id,
        problem,
    };
    // The hashes of the records exported checkpoints name, kept as the walk
    // passes them (the log itself is never held in memory).
    let mut wanted: HashMap<u64, Option<String>> =
        external.iter().map(|c| (c.signed_seq, None)).collect();
    let mut checkpoints = 0;
    let mut anchored_through = 0;
    let chain = walk(dir, |record, hash| {
        if let Some(slot) = wanted.get_mut(&record.seq) {
            *slot = Some(hash.to_string());
        }
        let Event::Checkpoint(c) = &record.event else {
            return Ok(());
        };
        if let Err(why) = check_signature(key, c) {
            return Err(fail(
                Some(record.id.clone()),
                format!("checkpoint {}: {why}", record.id),
            ));
        }
        if c.signed_seq + 1 != record.seq || c.signed_hash != record.prev {
            return Err(fail(
                Some(record.id.clone()),
                format!(
                    "checkpoint {} signed a{} with hash {}, but the record before it is a{} with hash {}: records before it were removed, added or rewritten",
                    record.id,
                    c.signed_seq,
                    short(&c.signed_hash),
                    record.seq - 1,
                    short(&record.prev)
                ),
            ));
        }
        checkpoints += 1;
        anchored_through = anchored_through.max(c.signed_seq);
        Ok(())
    })?;
    let hash_of = |seq: u64| -> Option<String> { wanted.get(&seq).cloned().flatten() };
    let mut matched = 0;
    for c in external {
        if let Err(why) = check_signature(key, c) {
            return Err(fail(
                None,
                format!("exported checkpoint of a{}: {why}", c.signed_seq),
            ));
        }
        match hash_of(c.signed_seq) {
            Some(h) if h == c.signed_hash => {}
            Some(h) => {
                return Err(fail(
                    Some(format!("a{}", c.signed_seq)),
                    format!(
                        "record a{} hashes to {}, but an exported checkpoint signed {} for it at {}: the log was rewritten",
                        c.signed_seq,
                        short(&h),
                        short(&c.signed_hash),
                        c.signed_at
                    ),
                ))
            }
            None => {
                return Err(fail(
                    Some(format!("a{}", c.signed_seq)),
                    format!(
                        "the log ends at a{}, but an exported checkpoint signed a{} at {}: records were removed after it",
                        chain.records, c.signed_seq, c.signed_at
                    ),
                ))
            }
        }
        matched += 1;
        anchored_through = anchored_through.max(c.signed_seq);
    }
    if chain.records > 0 && checkpoints == 0 && matched == 0 {
        return Err(fail(
            None,
            "no checkpoint signed by this key: nothing in this log is anchored (a log rewritten from scratch looks like this; so does a log written without AIRLOCK_AUDIT_SIGNING_KEY)".into(),
        ));
    }
    Ok(AnchoredReport {
        unanchored: chain.records.saturating_sub(anchored_through),
        chain,
        checkpoints,
        external: matched,
        anchored_through,
    })
}

/// Read exported checkpoints: one JSON object per line (what the export file
/// and `airlock audit checkpoints` hold; a syslog line's JSON part works too).
pub fn read_checkpoints(text: &str) -> Result<Vec<super::record::CheckpointEvent>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(start) = line.find('{') else {
            continue;
        };
        let c = serde_json::from_str(&line[start..])
            .map_err(|e| format!("line {}: not a checkpoint: {e}", i + 1))?;
        out.push(c);
    }
    Ok(out)
}
