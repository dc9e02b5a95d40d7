//! The audit trail: an append-only, hash-chained JSON-lines log in the state
//! directory (DESIGN.md §6; schema in docs/audit-schema.md).

pub mod anchor;
pub mod chain;
pub mod log;
pub mod query;
pub mod record;
pub(crate) mod regular;
pub mod verify;

pub use log::{AuditLog, PendingSync};
pub use query::{find, last_n, read_all, Filter};
pub use record::{Event, Proceeding, Record, SCHEMA_VERSION};
pub use verify::{verify, VerifyFailure, VerifyReport};

use std::path::{Path, PathBuf};

/// Tunables of the log.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditConfig {
    /// A new file is started once the newest reaches this size.
    pub max_file_bytes: u64,
    /// How much of stdout and of stderr (each) an execution record keeps; the
    /// record always carries the SHA-256 and length of the whole stream.
    pub output_bytes: usize,
    /// The operator's signing key and where checkpoints go (none: no checkpoints).
    pub anchor: Option<std::sync::Arc<anchor::Anchor>>,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            max_file_bytes: 64 * 1024 * 1024,
            output_bytes: 8 * 1024,
            anchor: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error(transparent)]
    State(#[from] crate::state::StateError),
    #[error("audit log {path}: no space left on device; nothing was run, because airlock refuses to act without an audit record")]
    DiskFull { path: PathBuf },
    #[error("audit log {dir}: no space left on device for this run's execution record: it needs {needed} bytes held free on the state directory's filesystem, and {free} are free; nothing was run. Free space there (or lower AIRLOCK_AUDIT_OUTPUT_BYTES, which sets the room a record needs)")]
    NoRoom {
        dir: PathBuf,
        needed: u64,
        free: u64,
    },
    #[error("audit log {path}: {context}: {source}")]
    Io {
        context: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("audit log {file}: {detail}")]
    Corrupt { file: PathBuf, detail: String },
    #[error("cannot serialise an audit record: {0}")]
    Serialize(#[source] serde_json::Error),
}

impl AuditError {
    pub(crate) fn io(context: &str, path: &Path, source: std::io::Error) -> AuditError {
        AuditError::Io {
            context: context.to_string(),
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn write(path: &Path, source: std::io::Error) -> AuditError {
        if matches!(
            source.kind(),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
        ) {
            AuditError::DiskFull {
                path: path.to_path_buf(),
            }
        } else {
            AuditError::io("writing a record", path, source)
        }
    }

    /// True when the disk (or quota) is full.
    pub fn is_disk_full(&self) -> bool {
        matches!(
            self,
            AuditError::DiskFull { .. } | AuditError::NoRoom { .. }
        )
    }
}
