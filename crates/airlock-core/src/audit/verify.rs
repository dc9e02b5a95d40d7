//! `airlock audit verify`: walk every file of the log in order and check the chain.
//!
//! It detects an edited record (the next record's `prev` no longer matches, or the
//! head anchor no longer matches the last record), a deleted record (a `seq`
//! gap and a `prev` mismatch), reordered records (the same), records cut off the
//! end (the head anchor names a record the log no longer has), a torn last line,
//! and a missing or emptied file in the middle of a rotation. It reports the
//! first problem, naming the file, line and record. Read-only: it repairs nothing.

use super::chain::{line_hash, GENESIS};
use super::log::{file_name, list_files, read_anchor_locked, HeadAnchor, HEAD_FILE};
use super::record::{Record, SCHEMA_VERSION};
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq)]
pub struct VerifyReport {
    pub files: usize,
    pub records: u64,
    /// Id and hash of the last record (`None` for an empty log).
    pub last: Option<(String, String)>,
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
        let mut bytes = Vec::new();
        if let Err(e) = super::regular::open_read(&path).and_then(|mut f| f.read_to_end(&mut bytes))
        {
            return fail(path, None, None, format!("cannot read: {e}"));
        }
        if bytes.is_empty() && position + 1 < files.len() {
            return fail(
                path,
                None,
                None,
                "log file is empty but later files exist (records were deleted)".into(),
            );
        }
        let mut line_no = 0u64;
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            line_no += 1;
            let Some(end) = rest.iter().position(|&b| b == b'\n') else {
                return fail(
                    path,
                    Some(line_no),
                    None,
                    format!(
                        "incomplete last record ({} bytes without a line end): a writer died mid-append or the file was truncated; `airlock audit repair` cuts it off and logs the repair",
                        rest.len()
                    ),
                );
            };
            let line = &rest[..end];
            rest = &rest[end + 1..];
            let record: Record = match serde_json::from_slice(line) {
                Ok(r) => r,
                Err(e) => {
                    let claimed = claimed_id(line);
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
            prev_hash = line_hash(line);
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
            }
            expected_seq += 1;
            last = Some((record.id.clone(), prev_hash.clone()));
        }
        last_file = Some(path);
    }
    check_head(dir, anchor, &last, last_file)?;
    Ok(VerifyReport {
        files: files.len(),
        records: expected_seq - 1,
        last,
    })
}

/// The head anchor must name a record the log still has, with the same hash
/// (the hash was compared during the walk, see `verify`).
fn check_head(
    dir: &Path,
    anchor: Option<HeadAnchor>,
    last: &Option<(String, String)>,
    last_file: Option<PathBuf>,
) -> Result<(), VerifyFailure> {
    let file = last_file.unwrap_or_else(|| dir.to_path_buf());
    let last_seq: u64 = last
        .as_ref()
        .map_or(0, |(id, _)| id[1..].parse().unwrap_or(0));
    match anchor {
        None if last.is_none() => Ok(()),
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
        // anchor.seq < last_seq is normal: writers appended after we read the
        // anchor, or one crashed between fsync of the log and the anchor write.
        Some(_) => Ok(()),
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
    use super::record::Event;
    let chain = verify(dir)?;
    let fail = |record_id: Option<String>, problem: String| VerifyFailure {
        file: dir.to_path_buf(),
        line: None,
        record_id,
        problem,
    };
    let records = super::query::read_all(dir).map_err(|e| fail(None, e.to_string()))?;
    // The hash of record `seq` is the `prev` of the record after it; the last
    // record's is the walk's.
    let hash_of = |seq: u64| -> Option<String> {
        if seq == 0 {
            return None;
        }
        match records.get(seq as usize) {
            Some(next) => Some(next.prev.clone()),
            None if seq == chain.records => chain.last.as_ref().map(|(_, h)| h.clone()),
            None => None,
        }
    };
    let mut checkpoints = 0;
    let mut anchored_through = 0;
    for record in &records {
        let Event::Checkpoint(c) = &record.event else {
            continue;
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
    }
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
