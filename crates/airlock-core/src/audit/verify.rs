//! `airlock audit verify`: walk every file of the log in order and check the chain.
//!
//! It detects an edited record (the next record's `prev` no longer matches, or the
//! head anchor no longer matches the last record), a deleted record (a `seq`
//! gap and a `prev` mismatch), reordered records (the same), records cut off the
//! end (the head anchor names a record the log no longer has), a torn last line,
//! and a missing or emptied file in the middle of a rotation. It reports the
//! first problem, naming the file, line and record. Read-only: it repairs nothing.

use super::chain::{line_hash, GENESIS};
use super::log::{file_name, list_files, HeadAnchor, HEAD_FILE};
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
            expected_seq += 1;
            last = Some((record.id.clone(), prev_hash.clone()));
        }
        last_file = Some(path);
    }
    check_head(dir, &last, last_file)?;
    Ok(VerifyReport {
        files: files.len(),
        records: expected_seq - 1,
        last,
    })
}

/// The head anchor must name a record the log still has, with the same hash.
fn check_head(
    dir: &Path,
    last: &Option<(String, String)>,
    last_file: Option<PathBuf>,
) -> Result<(), VerifyFailure> {
    let head_path = dir.join(HEAD_FILE);
    let anchor: Option<HeadAnchor> = match std::fs::read(&head_path) {
        Ok(bytes) => match serde_json::from_slice(&bytes) {
            Ok(a) => Some(a),
            Err(e) => {
                return Err(VerifyFailure {
                    file: head_path,
                    line: None,
                    record_id: None,
                    problem: format!(
                    "head anchor unreadable ({e}); `airlock audit repair` rewrites it from the log"
                ),
                })
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(VerifyFailure {
                file: head_path,
                line: None,
                record_id: None,
                problem: format!("cannot read: {e}"),
            })
        }
    };
    let file = last_file.unwrap_or_else(|| dir.to_path_buf());
    match (anchor, last) {
        (None, None) => Ok(()),
        (None, Some(_)) => Err(VerifyFailure {
            file: head_path,
            line: None,
            record_id: None,
            problem: "head anchor missing: records at the end may have been removed; `airlock audit repair` rewrites it from the log".into(),
        }),
        (Some(anchor), None) => Err(VerifyFailure {
            file,
            line: None,
            record_id: Some(anchor.id.clone()),
            problem: format!("the log is empty but the head anchor names record {} (records were removed)", anchor.id),
        }),
        (Some(anchor), Some((last_id, last_hash))) => {
            let last_seq: u64 = last_id[1..].parse().unwrap_or(0);
            if anchor.seq > last_seq {
                return Err(VerifyFailure {
                    file,
                    line: None,
                    record_id: Some(anchor.id.clone()),
                    problem: format!(
                        "the log ends at {last_id} but the head anchor names {}: records were cut off the end",
                        anchor.id
                    ),
                });
            }
            if anchor.seq == last_seq && anchor.hash != *last_hash {
                return Err(VerifyFailure {
                    file,
                    line: None,
                    record_id: Some(last_id.clone()),
                    problem: format!(
                        "the last record {last_id} does not match the head anchor's hash (it was edited or replaced)"
                    ),
                });
            }
            // anchor.seq < last_seq: the writer crashed between fsync of the log and
            // the rename of the anchor; the chain itself has been checked above.
            Ok(())
        }
    }
}

fn claimed_id(line: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    v.get("id")?.as_str().map(str::to_string)
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}
