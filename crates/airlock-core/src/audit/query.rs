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
        let mut out = Vec::new();
        for_each(dir, |r| {
            if self.matches(&r) {
                out.push(r);
            }
            true
        })?;
        if let Some(limit) = self.limit {
            let skip = out.len().saturating_sub(limit);
            out.drain(..skip);
        }
        Ok(out)
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
    fn prefix_matches_whole_words() {
        assert!(starts_with_words("git push origin", "git"));
        assert!(starts_with_words("git  push origin", "git push"));
        assert!(!starts_with_words("gitk", "git"));
        assert!(!starts_with_words("git", "git push"));
    }
}
