//! The audit record schema, version [`SCHEMA_VERSION`]. Documented field by field
//! in docs/audit-schema.md; change both together, and bump the version on any
//! change that a reader of older records would misread.

use crate::{Caller, TenantId};
use airlock_policy::{Command, Loosening, SegmentDecision, Step, Verdict};
use airlock_sandbox::{FileChange, KillReason, Violation};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

pub const SCHEMA_VERSION: u32 = 1;

/// One line of the log: the chain envelope plus one event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Schema version.
    pub v: u32,
    /// Position in the whole log, across rotated files: 1, 2, 3, … without gaps.
    pub seq: u64,
    /// Record id, `a<seq>`; what `airlock audit show` takes.
    pub id: String,
    /// RFC 3339 UTC, milliseconds.
    pub time: String,
    /// SHA-256 of the previous record's line (see `chain`).
    pub prev: String,
    #[serde(flatten)]
    pub event: Event,
}

impl Record {
    pub fn request_id(&self) -> Option<&str> {
        match &self.event {
            Event::Decision(e) => Some(&e.request_id),
            Event::Execution(e) => Some(&e.request_id),
            Event::Approval(e) => e.request_id.as_deref(),
            Event::Grant(e) => e.request_id.as_deref(),
            Event::FileWrite(e) => Some(&e.request_id),
            Event::FileRead(e) => Some(&e.request_id),
            Event::Apply(e) => Some(&e.request_id),
            Event::Repair(_) | Event::Reanchor(_) | Event::Checkpoint(_) | Event::Test(_) => None,
        }
    }

    /// The tenant the record belongs to; `None` for airlock's own records
    /// (repair, reanchor, checkpoint, test).
    pub fn tenant(&self) -> Option<&TenantId> {
        match &self.event {
            Event::Decision(e) => Some(&e.tenant),
            Event::Execution(e) => Some(&e.tenant),
            Event::Approval(e) => Some(&e.tenant),
            Event::Grant(e) => Some(&e.tenant),
            Event::FileWrite(e) => Some(&e.tenant),
            Event::FileRead(e) => Some(&e.tenant),
            Event::Apply(e) => Some(&e.tenant),
            Event::Repair(_) | Event::Reanchor(_) | Event::Checkpoint(_) | Event::Test(_) => None,
        }
    }

    pub fn kind(&self) -> &'static str {
        match &self.event {
            Event::Decision(_) => "decision",
            Event::Execution(_) => "execution",
            Event::Approval(_) => "approval",
            Event::Grant(_) => "grant",
            Event::FileWrite(_) => "file_write",
            Event::FileRead(_) => "file_read",
            Event::Apply(_) => "apply",
            Event::Repair(_) => "repair",
            Event::Reanchor(_) => "reanchor",
            Event::Checkpoint(_) => "checkpoint",
            Event::Test(_) => "test",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    Decision(DecisionEvent),
    Execution(Box<ExecutionEvent>),
    Approval(ApprovalEvent),
    Grant(GrantEvent),
    FileWrite(FileWriteEvent),
    FileRead(FileReadEvent),
    Apply(Box<ApplyEvent>),
    Repair(RepairEvent),
    Reanchor(ReanchorEvent),
    Checkpoint(CheckpointEvent),
    Test(TestEvent),
}

/// The request as asked, before any analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    pub command: Command,
    pub cwd: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// `check`: judged only.
    Check,
    /// `run`: judged, and run if allowed.
    Run,
}

/// How the engine proceeded after a decision (`disposition` in the record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Proceeding {
    /// Allowed (or approved): the command runs; an execution record follows.
    Run,
    /// The gate denied it.
    Denied,
    /// A person's approval was asked for and is pending.
    ApprovalPending,
    /// The approval presented could not be used.
    ApprovalRefused,
    /// A person denied it.
    ApprovalDenied,
    /// Judged only (`check`).
    Checked,
    /// A run whose client left while it waited for a sandbox: judged and
    /// recorded, never run.
    Abandoned,
}

impl Proceeding {
    pub fn as_str(self) -> &'static str {
        match self {
            Proceeding::Run => "run",
            Proceeding::Denied => "denied",
            Proceeding::ApprovalPending => "approval_pending",
            Proceeding::ApprovalRefused => "approval_refused",
            Proceeding::ApprovalDenied => "approval_denied",
            Proceeding::Checked => "checked",
            Proceeding::Abandoned => "abandoned",
        }
    }
}

impl std::fmt::Display for Proceeding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One gate decision, written before anything runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionEvent {
    pub request_id: String,
    pub operation: Operation,
    pub who: Caller,
    /// Whose request it is (see [`TenantId`]).
    #[serde(default)]
    pub tenant: TenantId,
    pub request: RequestRecord,
    pub segments: Vec<SegmentDecision>,
    /// Every rule named by the decision or one of its segments, deduplicated.
    pub matched_rules: Vec<String>,
    pub decision: Verdict,
    pub reason: String,
    pub step: Step,
    pub policy_sha256: String,
    pub policy_source: String,
    /// Grants that loosened this decision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loosened_by: Vec<String>,
    /// What the grants opened.
    #[serde(default, skip_serializing_if = "loosening_is_empty")]
    pub loosening: Loosening,
    /// How the engine proceeded.
    pub disposition: Proceeding,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalUse>,
}

pub(crate) fn loosening_is_empty(l: &Loosening) -> bool {
    l.grant_ids.is_empty()
        && l.network_hosts.is_empty()
        && l.read_paths.is_empty()
        && l.write_paths.is_empty()
}

/// An approval presented with a request, and what came of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalUse {
    pub id: String,
    /// `accepted`, or the refusal code (`replayed`, `expired`, `command_changed`,
    /// `cwd_changed`, `policy_changed`, `not_found`, `pending`, `denied`, `timeout`).
    pub result: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A captured output stream: the first bytes, and the digest of all of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamRecord {
    /// The start of the stream (lossy UTF-8), at most the configured size.
    pub text: String,
    /// True when `text` is shorter than the stream.
    pub truncated: bool,
    /// Length of the whole stream in bytes.
    pub bytes: u64,
    /// SHA-256 of the whole stream.
    pub sha256: String,
    /// `stream`: every byte the backend delivered live; `captured`: the backend
    /// delivered nothing live, so this describes the output it captured.
    pub source: String,
}

/// How the execution ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutcomeRecord {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub killed_by: Option<KillReason>,
    pub duration_ms: u64,
    pub cpu_ms: u64,
    pub peak_memory_bytes: u64,
    /// The backend cut stdout or stderr at the policy's output limit.
    pub output_capped: bool,
}

/// One execution in a sandbox, written after it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionEvent {
    pub request_id: String,
    pub who: Caller,
    #[serde(default)]
    pub tenant: TenantId,
    pub request: RequestRecord,
    pub policy_sha256: String,
    pub backend: String,
    pub argv: Vec<String>,
    /// Names of the environment variables the command received. Never values.
    pub env_names: Vec<String>,
    pub limits: airlock_sandbox::Limits,
    /// `none`, `proxy` or `open`.
    pub network: String,
    pub workspace_mode: String,
    /// `None` when the backend failed before the command ran (see `error`).
    pub outcome: Option<OutcomeRecord>,
    pub stdout: StreamRecord,
    pub stderr: StreamRecord,
    /// What the command was given on stdin: the request's text (the API's
    /// `stdin`; `source` is `request`), or what the caller's own stdin
    /// streamed into the command by its end (`airlock run` with a pipe or a
    /// file; `source` is `caller`). Absent when the command read nothing
    /// but `/dev/null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<StreamRecord>,
    /// The first changes (at most `engine::AUDIT_CHANGES_LISTED`).
    pub changes: Vec<FileChange>,
    /// Counts and the digest of the whole change set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_summary: Option<airlock_sandbox::ChangeSummary>,
    pub applied: bool,
    pub violations: Vec<Violation>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loosened_by: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalAction {
    Created,
    Approved,
    Denied,
    Expired,
    /// The approved request ran (the approval is now spent).
    Consumed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalEvent {
    pub action: ApprovalAction,
    pub approval_id: String,
    /// The request that created the approval (created) or used it (consumed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Who acted: the requester (created), the approver (approved/denied),
    /// `airlock` (expired), the runner (consumed).
    pub who: Caller,
    /// The tenant the approval belongs to (the one that asked).
    #[serde(default)]
    pub tenant: TenantId,
    pub request: RequestRecord,
    pub policy_sha256: String,
    pub reasons: Vec<String>,
    pub expires_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantAction {
    Created,
    Revoked,
    /// A request was loosened by the grant (one use spent).
    Used,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrantEvent {
    pub action: GrantAction,
    pub grant_id: String,
    pub who: Caller,
    /// The tenant the grant loosens requests of.
    #[serde(default)]
    pub tenant: TenantId,
    /// The grant as it stands after the action.
    pub grant: crate::grants::Grant,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// A file a caller wrote into the workspace itself (the MCP `write_file` tool),
/// not through a sandboxed command. Two records share one request id, as a
/// decision and its execution do: `requested` before anything touches the disk
/// (if it cannot be written, neither is the file), then `finished` with the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileWriteEvent {
    pub request_id: String,
    pub who: Caller,
    #[serde(default)]
    pub tenant: TenantId,
    /// The path as the caller gave it, relative to the workspace root.
    pub path: String,
    pub workspace: PathBuf,
    pub bytes: u64,
    /// SHA-256 of the content, so that the file can be matched to this write.
    pub sha256: String,
    pub stage: FileWriteStage,
    /// `written`, or the refusal code (`outside_workspace`, `protected_path`,
    /// `read_only_workspace`, `too_large`, ...). Only in `finished`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The apply of a kept change set (`airlock apply RUN_ID`, or a run's parked
/// change set once a person approved it): what was asked, what happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApplyEvent {
    /// This apply's own id.
    pub request_id: String,
    /// The run whose kept change set this is.
    pub run_id: String,
    pub who: Caller,
    #[serde(default)]
    pub tenant: TenantId,
    pub workspace: PathBuf,
    pub policy_sha256: String,
    /// The kept set's hash (what an approval binds to); empty if it could not be read.
    pub set_sha256: String,
    /// `applied`, `not_applied` (held, denied or over a limit), `approval_pending`,
    /// `approval_refused`, `approval_denied` or `refused` (the kept set is gone or changed).
    pub disposition: String,
    pub applied: bool,
    /// The first changes (at most `engine::AUDIT_CHANGES_LISTED`).
    pub changes: Vec<FileChange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_summary: Option<airlock_sandbox::ChangeSummary>,
    pub violations: Vec<Violation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A file or folder a caller read itself (the MCP `read_file` and `list_files`
/// tools), not through a sandboxed command: one record, written with its
/// result before the content is handed back (if it cannot be written, nothing
/// is returned).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileReadEvent {
    pub request_id: String,
    pub who: Caller,
    #[serde(default)]
    pub tenant: TenantId,
    /// `read_file` or `list_files`.
    pub tool: String,
    /// The path as the caller gave it, relative to the workspace root.
    pub path: String,
    pub workspace: PathBuf,
    /// `read`, `listed`, or the refusal code (`hidden`, `outside_workspace`,
    /// `not_a_file`, ...).
    pub result: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Bytes returned (`read_file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// SHA-256 of the bytes returned (`read_file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Entries returned (`list_files`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileWriteStage {
    Requested,
    Finished,
}

/// Written when opening the log found an incomplete last line (a writer died in
/// the middle of an append) and cut it off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairEvent {
    pub file: String,
    /// Length of the file before and after the cut.
    pub length_before: u64,
    pub length_after: u64,
    /// SHA-256 of the bytes cut off, so that they can be matched to a backup.
    pub dropped_sha256: String,
}

/// Written by `airlock audit repair --reanchor` when the log was accepted although
/// it no longer matched its head anchor: the loss stays on record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReanchorEvent {
    /// What the anchor said before (absent if it was missing or unreadable).
    pub previous_anchor: Option<crate::audit::log::HeadAnchor>,
    /// The seq of the last record the log held when it was accepted.
    pub log_last_seq: u64,
}

/// A signature by the operator's audit key over the chain's head: the seq and
/// hash of the record right before this one (see `audit::anchor`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointEvent {
    pub signed_seq: u64,
    pub signed_hash: String,
    /// RFC 3339 UTC, signed too.
    pub signed_at: String,
    /// First 16 hex digits of the SHA-256 of the public key.
    pub key_id: String,
    /// ed25519 signature (hex) over `audit::anchor::payload`.
    pub signature: String,
}

/// Written only by the hidden `airlock audit append-test` hook that the crash and
/// concurrency tests drive; goes through the same writer as every other record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestEvent {
    pub writer: String,
    pub n: u64,
}
