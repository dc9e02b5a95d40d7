//! Reading the log: every record in order, one record or request by id, and the
//! filters of `airlock audit query`. Readers take no lock: records are appended
//! whole, and a torn last line (a writer mid-append) is skipped.

use super::log::{file_name, list_files};
use super::record::{Event, Record};
use airlock_policy::{Command, Verdict};
use std::io::{BufRead, BufReader};
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("audit log {path}: {source}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Every complete record of the log, oldest first. Lines that do not parse are
/// skipped here (verify reports them).
pub fn read_all(dir: &Path) -> Result<Vec<Record>, ReadError> {
    let mut out = Vec::new();
    for_each(dir, |r| {
        out.push(r);
        true
    })?;
    Ok(out)
}

/// Calls `f` with each record, oldest first, until it returns false.
pub fn for_each(dir: &Path, mut f: impl FnMut(Record) -> bool) -> Result<(), ReadError> {
    let files = match list_files(dir) {
        Ok(files) => files,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(ReadError::Io {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    for index in files {
        let path = dir.join(file_name(index));
        let file = super::regular::open_read(&path).map_err(|source| ReadError::Io {
            path: path.clone(),
            source,
        })?;
        let mut reader = BufReader::new(file);
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(|source| ReadError::Io {
                    path: path.clone(),
                    source,
                })?;
            if n == 0 || line.last() != Some(&b'\n') {
                break;
            }
            if let Ok(record) = serde_json::from_slice::<Record>(&line) {
                if !f(record) {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

/// The last `n` complete records of the log, oldest first, read from the end
/// of the newest file backwards: memory holds `n` records and one chunk,
/// however long the log. Lines that do not parse are skipped, as in
/// [`read_all`], and so is a torn last line.
pub fn last_n(dir: &Path, n: usize) -> Result<Vec<Record>, ReadError> {
    let mut out = Vec::new();
    if n == 0 {
        return Ok(out);
    }
    let files = match list_files(dir) {
        Ok(files) => files,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(source) => {
            return Err(ReadError::Io {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    for index in files.into_iter().rev() {
        let path = dir.join(file_name(index));
        let io = |source| ReadError::Io {
            path: path.clone(),
            source,
        };
        let mut file = super::regular::open_read(&path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        lines_backwards(&mut file, len, |line| {
            if let Ok(record) = serde_json::from_slice::<Record>(line) {
                out.push(record);
            }
            out.len() < n
        })
        .map_err(io)?;
        if out.len() >= n {
            break;
        }
    }
    out.reverse();
    Ok(out)
}

/// Calls `f` with each complete line of `file` (without its `\n`), the last
/// first, until it returns false. Bytes after the last `\n` are skipped.
fn lines_backwards(
    file: &mut std::fs::File,
    len: u64,
    mut f: impl FnMut(&[u8]) -> bool,
) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    const CHUNK: u64 = 64 * 1024;
    // `buf` holds the bytes from `start`; once `at_line_end`, it ends in `\n`.
    let mut buf: Vec<u8> = Vec::new();
    let mut start = len;
    let mut at_line_end = false;
    loop {
        if !at_line_end {
            if let Some(p) = buf.iter().rposition(|&b| b == b'\n') {
                buf.truncate(p + 1);
                at_line_end = true;
            }
        }
        if at_line_end {
            let body = &buf[..buf.len() - 1];
            match body.iter().rposition(|&b| b == b'\n') {
                Some(p) => {
                    if !f(&body[p + 1..]) {
                        return Ok(());
                    }
                    buf.truncate(p + 1);
                    continue;
                }
                None if start == 0 => {
                    f(body);
                    return Ok(());
                }
                None => {}
            }
        } else if start == 0 {
            return Ok(());
        }
        let from = start.saturating_sub(CHUNK);
        let mut chunk = vec![0u8; (start - from) as usize];
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&buf);
        buf = chunk;
        start = from;
    }
}

/// The record with this record id (`a42`), or every record of this request id,
/// approval id or grant id.
pub fn find(dir: &Path, id: &str) -> Result<Vec<Record>, ReadError> {
    let mut out = Vec::new();
    for_each(dir, |r| {
        let hit = r.id == id
            || r.request_id() == Some(id)
            || match &r.event {
                Event::Approval(a) => a.approval_id == id,
                Event::Grant(g) => g.grant_id == id,
                Event::Decision(d) => {
                    d.approval.as_ref().is_some_and(|a| a.id == id)
                        || d.loosened_by.iter().any(|g| g == id)
                }
                Event::Execution(e) => {
                    e.approval_id.as_deref() == Some(id) || e.loosened_by.iter().any(|g| g == id)
                }
                _ => false,
            };
        if hit {
            out.push(r);
        }
        true
    })?;
    Ok(out)
}

/// The filters of `airlock audit query`. Empty fields match everything.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only decision records with this verdict.
    pub decision: Option<Verdict>,
    /// Only records at or after this time (ms since the epoch).
    pub since_ms: Option<u64>,
    /// Only records whose command starts with these words (`git`, `git push`).
    pub command_prefix: Option<String>,
    /// Only records of this kind (`decision`, `execution`, `approval`, …).
    pub kind: Option<String>,
    /// Only records of this request.
    pub request_id: Option<String>,
    /// Keep only the last N matches.
    pub limit: Option<usize>,
}

impl Filter {
    pub fn matches(&self, record: &Record) -> bool {
        if let Some(kind) = &self.kind {
            if record.kind() != kind {
                return false;
            }
        }
        if let Some(verdict) = self.decision {
            match &record.event {
                Event::Decision(d) if d.decision == verdict => {}
                _ => return false,
            }
        }
        if let Some(since) = self.since_ms {
            match crate::clock::parse_rfc3339(&record.time) {
                Some(t) if t >= since => {}
                _ => return false,
            }
        }
        if let Some(rid) = &self.request_id {
            if record.request_id() != Some(rid.as_str()) {
                return false;
            }
        }
        if let Some(prefix) = &self.command_prefix {
            match command_of(record) {
                Some(cmd) if starts_with_words(&command_text(cmd), prefix) => {}
                _ => return false,
            }
        }
        true
    }

    pub fn apply(&self, dir: &Path) -> Result<Vec<Record>, ReadError> {
        // With a limit, only the last `limit` matches are ever held.
        let mut out = std::collections::VecDeque::new();
        for_each(dir, |r| {
            if self.matches(&r) {
                if self.limit.is_some_and(|l| out.len() >= l) {
                    out.pop_front();
                }
                if self.limit != Some(0) {
                    out.push_back(r);
                }
            }
            true
        })?;
        Ok(out.into())
    }
}

pub fn command_of(record: &Record) -> Option<&Command> {
    match &record.event {
        Event::Decision(d) => Some(&d.request.command),
        Event::Execution(e) => Some(&e.request.command),
        Event::Approval(a) => Some(&a.request.command),
        _ => None,
    }
}

/// A command as one line of text, for tables and prefix matching.
pub fn command_text(command: &Command) -> String {
    match command {
        Command::Shell { command } => command.clone(),
        Command::Argv { argv } => argv.join(" "),
        Command::Code { language, source } => {
            format!("<{language} code> {}", source.lines().next().unwrap_or(""))
        }
    }
}

/// `git push origin` starts with the words `git` and `git push`, not `gi`.
pub fn starts_with_words(text: &str, prefix: &str) -> bool {
    let mut words = text.split_whitespace();
    prefix.split_whitespace().all(|p| words.next() == Some(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_backwards_reads_every_line_from_the_end_and_skips_a_torn_tail() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        let long = "x".repeat(200_000);
        let text = format!("one\n{long}\n\nthree\ntorn");
        std::fs::write(&path, &text).unwrap();
        let mut file = std::fs::File::open(&path).unwrap();
        let mut seen = Vec::new();
        lines_backwards(&mut file, text.len() as u64, |l| {
            seen.push(String::from_utf8(l.to_vec()).unwrap());
            true
        })
        .unwrap();
        assert_eq!(
            seen,
            vec!["three".to_string(), String::new(), long, "one".into()]
        );
        let mut first = Vec::new();
        lines_backwards(&mut file, text.len() as u64, |l| {
            first.push(l.to_vec());
            false
        })
        .unwrap();
        assert_eq!(first, vec![b"three".to_vec()]);
        let mut none = 0;
        lines_backwards(&mut file, 0, |_| {
            none += 1;
            true
        })
        .unwrap();
        assert_eq!(none, 0);
    }

    #[test]
    fn prefix_matches_whole_words() {
        assert!(starts_with_words("git push origin", "git"));
        assert!(starts_with_words("git  push origin", "git push"));
        assert!(!starts_with_words("gitk", "git"));
        assert!(!starts_with_words("git", "git push"));
    }
}
