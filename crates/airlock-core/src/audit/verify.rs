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
        if let Err(e) = std::fs::File::open(&path).and_then(|mut f| f.read_to_end(&mut bytes)) {
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
