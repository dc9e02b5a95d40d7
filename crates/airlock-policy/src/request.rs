//! What an agent asks for.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The thing to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Command {
    /// A bash command line, parsed and judged segment by segment.
    Shell { command: String },
    /// An argv, judged as one simple command (no shell involved).
    Argv { argv: Vec<String> },
    /// Source code for an interpreter (`python`, `bash`, `sh`, …).
    Code { language: String, source: String },
}

/// A request as the gate sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub command: Command,
    /// Absolute working directory the command starts in.
    pub cwd: PathBuf,
    /// One-shot loosening granted by a human (see airlock-core's grants).
    #[serde(default)]
    pub loosening: Loosening,
}

impl Request {
    /// A shell command line from `cwd`, with nothing loosened.
    pub fn shell(command: impl Into<String>, cwd: impl Into<PathBuf>) -> Request {
        Request {
            command: Command::Shell {
                command: command.into(),
            },
            cwd: cwd.into(),
            loosening: Loosening::default(),
        }
    }
}

/// Boundaries a grant opens for one request. Empty by default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Loosening {
    pub grant_ids: Vec<String>,
    /// Extra network host patterns (allowlist mode only).
    pub network_hosts: Vec<String>,
    /// Extra absolute host paths readable.
    pub read_paths: Vec<PathBuf>,
    /// Extra absolute host paths writable.
    pub write_paths: Vec<PathBuf>,
}
