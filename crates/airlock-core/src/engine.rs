//! The engine: runs the request path for the CLI, the HTTP API and the MCP server
//! alike. There is no second execution path:
//!
//! gate (with grants) → approval handling → decision record → spec → backend →
//! execution record → response.
//!
//! Every record is fsynced before the call returns, with one exception a
//! server asks for ([`RunOptions::defer_execution_sync`]): the execution record
//! is written before the call returns and synced right after the answer is
//! out ([`Engine::sync_deferred`]). The decision record, which must be durable
//! before a command starts, is never deferred. If a record cannot be written
//! (a full disk), the call fails and nothing runs; if a deferred sync fails,
//! every later run is refused.

use crate::approvals::{Approval, ApprovalStatus, Presented, RefusalCode};
use crate::audit::record::{
    ApprovalUse, DecisionEvent, Event, ExecutionEvent, Operation, OutcomeRecord, Proceeding,
    RequestRecord, StreamRecord,
};
use crate::audit::{AuditError, PendingSync};
use crate::backends::Backends;
use crate::grants::{Boundary, Grant, NETWORK_ALLOWLIST_ENFORCED};
use crate::ledger::{ApprovalCheck, Ledger, LedgerConfig, LedgerError};
use crate::state::new_request_id;
use crate::Caller;
use airlock_policy::{Decision, Loosening, NetworkMode, Policy, Request, Verdict};
use airlock_sandbox::output::StreamTally;
use airlock_sandbox::{Backend, Outcome, OutputSink, SandboxError, SandboxSpec};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use crate::state::new_request_id as request_id;

/// A mutex's guard, even when a thread panicked holding it (the data is a
/// list or a message, whole either way).
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `AIRLOCK_PROFILE=1`: the engine's steps of one run, printed in one write
/// when the run returns (stderr is unbuffered).
struct Profile(Option<(Instant, Vec<(&'static str, Duration)>)>);

impl Profile {
    fn start() -> Profile {
        Profile(std::env::var_os("AIRLOCK_PROFILE").map(|_| (Instant::now(), Vec::new())))
    }

    fn mark(&mut self, what: &'static str) {
        if let Some((t, steps)) = &mut self.0 {
            steps.push((what, t.elapsed()));
        }
    }
}

impl Drop for Profile {
    fn drop(&mut self) {
        if let Some((t, steps)) = &self.0 {
            let mut lines = String::new();
            for (what, d) in steps {
                let ms = d.as_secs_f64() * 1000.0;
                lines.push_str(&format!("airlock profile: {ms:>8.2} ms  engine: {what}\n"));
            }
            let total = t.elapsed().as_secs_f64() * 1000.0;
            lines.push_str(&format!(
                "airlock profile: {total:>8.2} ms  engine: run returns\n"
            ));
            eprint!("{lines}");
        }
    }
}

/// How to open an [`Engine`].
pub struct EngineConfig {
    /// The state directory (see [`crate::state::resolve_state_dir`]).
    pub state_dir: PathBuf,
    pub backends: Backends,
    pub ledger: LedgerConfig,
    /// More files airlock lives by (a server's tokens file): like the policy
    /// file and the state directory, no change of any run may write them.
    pub owned: Vec<PathBuf>,
}

impl EngineConfig {
    /// Every run on `backend` (see [`Backends::Fixed`]).
    pub fn new(state_dir: PathBuf, backend: Box<dyn Backend>) -> EngineConfig {
        EngineConfig::with(state_dir, Backends::fixed(backend))
    }

    /// Each run on the backend its policy names, opened by the factory (see
    /// [`Backends::PerPolicy`]).
    pub fn per_policy(state_dir: PathBuf, opts: airlock_sandbox::OpenOptions) -> EngineConfig {
        EngineConfig::with(state_dir, Backends::per_policy(opts))
    }

    pub fn with(state_dir: PathBuf, backends: Backends) -> EngineConfig {
        EngineConfig {
            state_dir,
            backends,
            ledger: LedgerConfig::default(),
            owned: Vec::new(),
        }
    }
}

/// A person answering an approval at a terminal (`airlock run --ask`).
pub trait ApprovalPrompt {
    /// Show the approval (reasons and full command) and return the answer.
    fn ask(&mut self, approval: &Approval) -> PromptAnswer;
    /// Who is answering, for the record.
    fn approver(&self) -> Caller;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptAnswer {
    Approve { note: Option<String> },
    Deny { note: Option<String> },
}

/// Options of one run.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Use this (approved) approval: `airlock run --approval ID`.
    pub approval_id: Option<String>,
    /// If approval is required, create it and wait up to this long for an answer.
    pub wait_approval: Option<Duration>,
    /// If approval is required, ask this person directly (`--ask`).
    pub prompt: Option<&'a mut dyn ApprovalPrompt>,
    /// Told when a pending approval is created (to print its id and how to answer).
    pub on_pending: Option<&'a mut dyn FnMut(&Approval)>,
    /// Override the policy's `workspace.apply` for this run.
    pub apply: Option<bool>,
    /// Bytes for the command's stdin.
    pub stdin: Option<Vec<u8>>,
    /// Where the caller's own stdin is streamed to the command (the CLI's
    /// pipe), this reads it whole instead, into `stdin`, when the command
    /// needs an approval: an approval covers the exact stdin, so it must be
    /// known before the approval is asked for or used. An error refuses the run.
    pub read_stdin: Option<&'a mut dyn FnMut() -> Result<Vec<u8>, String>>,
    /// Write the execution record but leave its `fdatasync` to
    /// [`Engine::sync_deferred`], which the caller runs once the answer is out:
    /// one durable write (the decision record's) on a run's critical path,
    /// and the head anchor moved there too, not before the command starts.
    /// For a server, whose process outlives the run; a CLI exits right after.
    pub defer_execution_sync: bool,
}

/// What happened to a run request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// It ran; `outcome` is set.
    Ran,
    /// The gate denied it.
    Denied,
    /// It needs a person's approval; `approval` names the pending approval.
    ApprovalPending,
    /// A person denied it.
    ApprovalDenied,
    /// The approval presented could not be used; `refusal` says why.
    ApprovalRefused,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ran => "ran",
            RunStatus::Denied => "denied",
            RunStatus::ApprovalPending => "approval_pending",
            RunStatus::ApprovalDenied => "approval_denied",
            RunStatus::ApprovalRefused => "approval_refused",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refusal {
    pub code: RefusalCode,
    pub message: String,
}

/// The approval a response is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRef {
    pub id: String,
    pub status: ApprovalStatus,
    pub expires_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<Caller>,
}

impl From<&Approval> for ApprovalRef {
    fn from(a: &Approval) -> Self {
        ApprovalRef {
            id: a.id.clone(),
            status: a.status,
            expires_at: a.expires_at.clone(),
            approver: a.decided_by.clone(),
        }
    }
}

/// What a run returns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResponse {
    pub request_id: String,
    pub status: RunStatus,
    /// The gate's decision (after any grant loosened it).
    pub decision: Decision,
    /// One line for a person or a model: why it ran, or why not.
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// Ids of the audit records this run wrote, in order.
    pub audit_ids: Vec<String>,
    /// The run asked for its changes to be applied and some need a person:
    /// the change set was kept and parked as an approval (and, when a person
    /// answered in time, applied). See [`crate::apply`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply: Option<crate::apply::ApplyResponse>,
}

/// What a check returns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckResponse {
    pub request_id: String,
    pub decision: Decision,
    pub audit_id: String,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Audit(#[from] AuditError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The run happened, but its execution record could not be written: the
    /// decision record that allowed it is the last word on it in the log.
    #[error(transparent)]
    ExecutionUnrecorded(Box<Unrecorded>),
    /// The command needs an approval, which covers its stdin, and the
    /// caller's stdin could not be read whole to pin it.
    #[error("refused: the command needs an approval, which covers its exact stdin, and stdin could not be read whole: {0}")]
    StdinUnreadable(String),
    /// The workspace, or a read or write path the run would be shown, is
    /// airlock's state directory or lies inside it: refused before anything
    /// is judged or run (see [`crate::state::refuse_tree_in_state_dir`]).
    #[error("{0}")]
    StateDirExposed(String),
}

/// What [`EngineError::ExecutionUnrecorded`] says: what the run did, and why
/// its execution record could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{what}, but its execution record could not be written to the audit log ({why}); the decision record {decision} that allowed it is in the log, and `airlock audit verify` names it as a run without an execution record")]
pub struct Unrecorded {
    pub what: String,
    pub decision: String,
    pub why: String,
    #[source]
    pub source: AuditError,
}

impl EngineError {
    /// True when the audit log's disk is full (the request was refused).
    pub fn is_disk_full(&self) -> bool {
        match self {
            EngineError::Audit(e) | EngineError::Ledger(LedgerError::Audit(e)) => e.is_disk_full(),
            _ => false,
        }
    }
}

pub struct Engine {
    backends: Backends,
    ledger: Ledger,
    owned: Vec<PathBuf>,
    /// Execution records written but not yet synced (see
    /// [`RunOptions::defer_execution_sync`]).
    deferred: std::sync::Mutex<Vec<crate::audit::PendingSync>>,
    /// Held by [`Engine::sync_deferred`] while it syncs, so that a call finds
    /// its records durable even when another call took them off the list.
    syncing: std::sync::Mutex<()>,
    /// The first deferred sync that failed: every later run is refused.
    deferred_failed: std::sync::Mutex<Option<String>>,
}

/// A run's decision record, written and not yet durable: the command starts
/// only once it is on disk.
struct DecisionSync {
    pending: PendingSync,
    /// Moves the head anchor after the answer, with the execution record's
    /// (a server's run, [`RunOptions::defer_execution_sync`]); else the gate
    /// moves it once the record is synced.
    anchor_later: bool,
}

/// What the gate said, with the grants that loosened it.
struct Judged {
    request: Request,
    decision: Decision,
    grants: Vec<Grant>,
}

impl Engine {
    pub fn open(config: EngineConfig) -> Result<Engine, EngineError> {
        let ledger = Ledger::open(&config.state_dir, config.ledger)?;
        let owned = config
            .owned
            .iter()
            .flat_map(|p| {
                // As written and as resolved: a symlink on the way must not hide it.
                let abs = std::path::absolute(p).unwrap_or_else(|_| p.clone());
                let real = std::fs::canonicalize(&abs).ok();
                std::iter::once(abs).chain(real)
            })
            .collect();
        Ok(Engine {
            backends: config.backends,
            ledger,
            owned,
            deferred: Default::default(),
            syncing: Default::default(),
            deferred_failed: Default::default(),
        })
    }

    /// Returns once the decision record is on disk.
    fn decision_durable(&self, sync: DecisionSync) -> Result<(), AuditError> {
        let audit = self.ledger.audit();
        if !sync.anchor_later {
            return audit.make_durable(sync.pending);
        }
        // Only the sync stands between the record and the command.
        audit.sync(&sync.pending)?;
        lock(&self.deferred).push(sync.pending);
        Ok(())
    }

    /// Make every execution record written by a run with
    /// [`RunOptions::defer_execution_sync`] durable (one `fdatasync` covers
    /// them all), and move the head anchor to the last of them (such a run's
    /// decision record was synced before its command started; its anchor
    /// moves here). A failure is kept: every later run is refused with it,
    /// since the trail may have lost a record.
    pub fn sync_deferred(&self) -> Result<(), AuditError> {
        let _one_at_a_time = lock(&self.syncing);
        let pending = std::mem::take(&mut *lock(&self.deferred));
        self.ledger
            .audit()
            .make_all_durable(pending)
            .inspect_err(|e| {
                lock(&self.deferred_failed).get_or_insert_with(|| e.to_string());
            })
    }

    /// Refuse to run while a deferred execution record is unaccounted for.
    fn refuse_after_lost_record(&self) -> Result<(), AuditError> {
        match &*lock(&self.deferred_failed) {
            None => Ok(()),
            Some(what) => Err(AuditError::write(
                self.ledger.audit().dir(),
                std::io::Error::other(format!(
                    "an earlier run's execution record could not be made durable ({what}), so \
                     no command runs until the audit log's disk is fixed and the server restarted"
                )),
            )),
        }
    }

    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The name of the backend a run under `policy` uses.
    pub fn backend_name(&self, policy: &Policy) -> &'static str {
        self.backends.name_for(policy)
    }

    /// Judge a request without running it, and record the decision.
    pub fn check(
        &self,
        caller: &Caller,
        policy: &Policy,
        request: &Request,
    ) -> Result<CheckResponse, EngineError> {
        let judged = self.judge(&caller.tenant(), policy, request)?;
        self.record_checked(caller, policy, judged)
    }

    /// Record a decision made before the gate could read the request (input that
    /// is not text, say): the refusal is on record like any other check.
    pub fn record_check(
        &self,
        caller: &Caller,
        policy: &Policy,
        request: &Request,
        decision: Decision,
    ) -> Result<CheckResponse, EngineError> {
        let judged = Judged {
            request: request.clone(),
            decision,
            grants: vec![],
        };
        self.record_checked(caller, policy, judged)
    }

    /// Records the decision of a run whose client left while it waited for a
    /// sandbox (`airlock serve`'s queue): judged as the run would have been
    /// then, recorded as `abandoned`, never run. Returns the record's id.
    pub fn record_abandoned(
        &self,
        caller: &Caller,
        policy: &Policy,
        request: &Request,
    ) -> Result<String, EngineError> {
        let judged = self.judge(&caller.tenant(), policy, request)?;
        self.record_decision(
            caller,
            policy,
            &new_request_id(),
            &judged,
            Operation::Run,
            Proceeding::Abandoned,
            None,
        )
    }

    /// A check's decision record and answer.
    fn record_checked(
        &self,
        caller: &Caller,
        policy: &Policy,
        judged: Judged,
    ) -> Result<CheckResponse, EngineError> {
        let request_id = new_request_id();
        let record = self.record_decision(
            caller,
            policy,
            &request_id,
            &judged,
            Operation::Check,
            Proceeding::Checked,
            None,
        )?;
        Ok(CheckResponse {
            request_id,
            decision: judged.decision,
            audit_id: record,
        })
    }

    /// Judge a request and, if allowed (or approved), run it in the sandbox:
    /// admit, record the decision, derive the spec, execute behind the gate,
    /// record the execution, respond.
    pub fn run(
        &self,
        caller: &Caller,
        policy: &Policy,
        request: &Request,
        mut options: RunOptions<'_>,
        sink: &mut dyn OutputSink,
    ) -> Result<RunResponse, EngineError> {
        let mut prof = Profile::start();
        self.refuse_after_lost_record()?;
        let request_id = new_request_id();
        let judged = self.judge(&caller.tenant(), policy, request)?;
        self.refuse_state_exposure(policy, &judged.request.loosening)?;
        prof.mark("judged");
        let mut audit_ids = Vec::new();

        // 1. Admit: a denial, or an approval refused or still pending, ends here.
        let approved = match self.admit(
            caller,
            policy,
            &request_id,
            &judged,
            &mut options,
            &mut audit_ids,
        )? {
            Admission::Admitted(approved) => approved,
            Admission::Refused(answer) => {
                return Ok(answer.respond(&request_id, audit_ids, judged.decision));
            }
        };

        // 2. Room for the execution record, held before anything runs: a
        //    full disk refuses the run here rather than leave a command that
        //    ran (and changes applied) with no record of its outcome.
        self.ledger
            .audit()
            .reserve(execution_record_bound(&self.ledger.config().audit))?;

        //    The decision record: written now, made durable by the backend's
        //    gate while the sandbox is built; the command starts only after.
        let pending = if approved.is_none() || options.approval_id.is_some() {
            let (id, sync) =
                self.write_run_decision(caller, policy, &request_id, &judged, approved.as_ref())?;
            audit_ids.push(id);
            prof.mark("decision record written");
            Some(DecisionSync {
                pending: sync,
                anchor_later: options.defer_execution_sync,
            })
        } else {
            None
        };

        // 3. The spec: grants spent, the sandbox's spec, a kept change set's place.
        let mut spec = self.run_spec(caller, policy, &request_id, &judged, &options)?;
        prof.mark("grants spent, spec derived, kept sets pruned");

        // 4. Execute behind the gate.
        let mut executed = self.execute(policy, &judged, &mut spec, sink, pending, &mut prof);
        if let Ok(o) = executed.result.as_mut() {
            self.register_kept(caller, policy, &judged, &request_id, o);
        }

        // 5. The execution record: durable before the answer, or synced right
        //    after it where the server asks (`defer_execution_sync`).
        let event = Event::Execution(Box::new(self.execution_event(
            caller,
            policy,
            &request_id,
            &judged,
            &spec,
            approved.as_ref(),
            &executed.result,
            executed.stdout,
            executed.stderr,
        )));
        let appended = if options.defer_execution_sync {
            self.ledger
                .audit()
                .append_deferred(event)
                .map(|(record, pending)| {
                    lock(&self.deferred).push(pending);
                    prof.mark("execution record written (synced after the answer)");
                    record
                })
        } else {
            self.ledger.audit().append(event).inspect(|_| {
                prof.mark("execution record durable");
            })
        };
        let record = appended.map_err(|source| unrecorded(&executed.result, &audit_ids, source))?;
        audit_ids.push(record.id);
        // The decision record's own sync failed: its loss may not show in the
        // execution record's sync (an error is reported once per open file).
        executed.durable?;
        let outcome = executed.result?;

        // 6. Respond; a kept change set that needs a person parks as an approval.
        let mut response = Answer {
            status: RunStatus::Ran,
            message: ran_message(&outcome, &judged.decision),
            approval: approved,
            refusal: None,
        }
        .respond(&request_id, audit_ids, judged.decision);
        let park = spec.workspace.apply
            && outcome
                .change_summary
                .as_ref()
                .is_some_and(|s| s.kept && s.held > 0);
        response.outcome = Some(outcome);
        if park {
            let apply = self.apply_kept(
                caller,
                policy,
                &request_id,
                RunOptions {
                    wait_approval: options.wait_approval,
                    prompt: options.prompt.take(),
                    on_pending: options.on_pending.take(),
                    ..Default::default()
                },
            )?;
            response
                .message
                .push_str(&format!("; changes: {}", apply.message));
            response.audit_ids.extend(apply.audit_ids.iter().cloned());
            response.apply = Some(apply);
        }
        Ok(response)
    }

    /// The gate's verdict turned into a go or an answer: a denial is recorded
    /// and refused; an approval is checked (a given `--approval` id) or asked
    /// for (and waited on, where the caller waits).
    fn admit(
        &self,
        caller: &Caller,
        policy: &Policy,
        request_id: &str,
        judged: &Judged,
        options: &mut RunOptions<'_>,
        audit_ids: &mut Vec<String>,
    ) -> Result<Admission, EngineError> {
        let asked = RequestRecord {
            command: judged.request.command.clone(),
            cwd: judged.request.cwd.clone(),
        };
        if judged.decision.decision == Verdict::ApprovalRequired && options.stdin.is_none() {
            if let Some(read) = options.read_stdin.as_mut() {
                options.stdin = Some(read().map_err(EngineError::StdinUnreadable)?);
            }
        }
        let stdin = crate::approvals::StdinPin::of(options.stdin.as_deref());
        match judged.decision.decision {
            Verdict::Allow => Ok(Admission::Admitted(None)),
            Verdict::Deny => {
                audit_ids.push(self.record_decision(
                    caller,
                    policy,
                    request_id,
                    judged,
                    Operation::Run,
                    Proceeding::Denied,
                    None,
                )?);
                Ok(Admission::Refused(Answer {
                    status: RunStatus::Denied,
                    message: judged.decision.reason.clone(),
                    approval: None,
                    refusal: None,
                }))
            }
            Verdict::ApprovalRequired => match options.approval_id.clone() {
                Some(id) => {
                    // What the files the command runs hold now, against what
                    // they held when the approval was asked for.
                    let content =
                        crate::content::pins(policy, &judged.request.cwd, &judged.decision);
                    let presented = Presented {
                        request: &asked,
                        stdin: stdin.as_ref(),
                        policy_sha256: &policy.sha256,
                        content: &content,
                    };
                    match self
                        .ledger
                        .use_approval(&id, caller, request_id, &presented)?
                    {
                        ApprovalCheck::Accepted(approval) => {
                            Ok(Admission::Admitted(Some(approval)))
                        }
                        ApprovalCheck::Refused(code, approval) => {
                            let use_ = ApprovalUse {
                                id: id.clone(),
                                result: code.as_str().into(),
                                approver: None,
                                note: None,
                            };
                            audit_ids.push(self.record_decision(
                                caller,
                                policy,
                                request_id,
                                judged,
                                Operation::Run,
                                Proceeding::ApprovalRefused,
                                Some(use_),
                            )?);
                            let refusal = Refusal {
                                code,
                                message: code.message_for(&id, approval.as_ref(), &presented),
                            };
                            Ok(Admission::Refused(Answer {
                                status: RunStatus::ApprovalRefused,
                                message: refusal.message.clone(),
                                approval,
                                refusal: Some(refusal),
                            }))
                        }
                    }
                }
                None => {
                    let id = self.ledger.new_approval_id();
                    let use_ = ApprovalUse {
                        id: id.clone(),
                        result: "pending".into(),
                        approver: None,
                        note: None,
                    };
                    audit_ids.push(self.record_decision(
                        caller,
                        policy,
                        request_id,
                        judged,
                        Operation::Run,
                        Proceeding::ApprovalPending,
                        Some(use_),
                    )?);
                    let pending = self.ledger.create_approval(
                        id,
                        caller,
                        request_id,
                        asked.clone(),
                        stdin.clone(),
                        policy,
                        &judged.decision,
                    )?;
                    match self.settle(
                        caller,
                        request_id,
                        &asked,
                        stdin.as_ref(),
                        policy,
                        &judged.decision,
                        pending,
                        options,
                    )? {
                        Ok(approval) => Ok(Admission::Admitted(Some(approval))),
                        Err((status, approval, refusal)) => {
                            let message = match (&refusal, status) {
                                (Some(r), _) => r.message.clone(),
                                (None, RunStatus::ApprovalDenied) => format!("approval {} was denied: {}", approval.id, approval.note.clone().unwrap_or_default()),
                                _ => format!(
                                    "{}{} approval {} is pending until {}: a person can run `airlock approvals approve {}`, then the same command can run with `--approval {}`",
                                    judged.decision.reason,
                                    if judged.decision.reason.ends_with('.') { "" } else { ";" },
                                    approval.id,
                                    approval.expires_at,
                                    approval.id,
                                    approval.id
                                ),
                            };
                            Ok(Admission::Refused(Answer {
                                status,
                                message: message.trim().to_string(),
                                approval: Some(approval),
                                refusal,
                            }))
                        }
                    }
                }
            },
        }
    }

    /// The run's decision record, written but not yet durable: the backend's
    /// gate syncs it while the sandbox is built.
    fn write_run_decision(
        &self,
        caller: &Caller,
        policy: &Policy,
        request_id: &str,
        judged: &Judged,
        approved: Option<&Approval>,
    ) -> Result<(String, PendingSync), EngineError> {
        let use_ = approved.map(|a| ApprovalUse {
            id: a.id.clone(),
            result: "accepted".into(),
            approver: a.decided_by.as_ref().map(|c| c.to_string()),
            note: a.note.clone(),
        });
        let event = self.decision_event(
            caller,
            policy,
            request_id,
            judged,
            Operation::Run,
            Proceeding::Run,
            use_,
        );
        let (record, sync) = self.ledger.audit().append_deferred(event)?;
        Ok((record.id, sync))
    }

    /// Spends the grants that loosened the request and derives the sandbox's
    /// spec. A change set this run does not apply is kept for a while
    /// (bounded in age and total size, pruned here and after the run).
    fn run_spec(
        &self,
        caller: &Caller,
        policy: &Policy,
        request_id: &str,
        judged: &Judged,
        options: &RunOptions<'_>,
    ) -> Result<SandboxSpec, EngineError> {
        let grant_ids: Vec<String> = judged.grants.iter().map(|g| g.id.clone()).collect();
        self.ledger.spend_grants(&grant_ids, caller, request_id)?;
        let mut spec = crate::spec::derive(policy, &judged.request, request_id);
        self.adjust_spec(&mut spec, &judged.request.loosening, options);
        let state_dir = self.ledger.state_dir().to_path_buf();
        let (keep_for, keep_bytes) = crate::kept::bounds(&policy.changes);
        crate::kept::prune(&state_dir, keep_for, keep_bytes, crate::clock::now_ms());
        if spec.workspace.mode == airlock_sandbox::WorkspaceMode::Overlay && keep_bytes > 0 {
            if let Ok(dir) = crate::kept::run_dir(&state_dir, request_id) {
                spec.workspace.keep = Some(dir);
            }
        }
        Ok(spec)
    }

    /// Runs `spec` on the policy's backend (with this execution's own egress
    /// proxy in allowlist mode). The backend calls the gate, which makes the
    /// decision record durable, before the command starts.
    fn execute(
        &self,
        policy: &Policy,
        judged: &Judged,
        spec: &mut SandboxSpec,
        sink: &mut dyn OutputSink,
        mut pending: Option<DecisionSync>,
        prof: &mut Profile,
    ) -> Executed {
        let mut hashing = HashingSink::new(sink, self.ledger.config().audit.output_bytes);
        // The sync runs in the gate, on this thread: the native backend calls
        // its gate while its helper builds the sandbox, and a warm sandbox is
        // built already. A thread of the sync's own, started as the record
        // is written, was no faster on a warm run: its two hand-offs cost
        // what the overlap saved (bench/results/warm-post-2026-12-06.txt).
        // (Backends without a gate of their own call it before they build.)
        let mut first_error = None;
        let mut gate = || {
            let durable = pending.take().map_or(Ok(()), |d| self.decision_durable(d));
            prof.mark("gate: decision record durable");
            durable.map_err(|e| {
                let layer = SandboxError::Layer {
                    layer: airlock_sandbox::Layer::Audit,
                    detail: format!(
                        "the decision record could not be made durable, so the command was not started: {e}"
                    ),
                };
                first_error = Some(e);
                layer
            })
        };
        let (egress, mut result) = match crate::egress::open(
            policy,
            &judged.request.loosening,
            spec,
            self.ledger.state_dir(),
        ) {
            Ok(egress) => (
                egress,
                self.backends.for_policy(policy).and_then(|backend| {
                    crate::backends::check_then_run(
                        policy,
                        backend.as_ref(),
                        spec,
                        &mut hashing,
                        &mut gate,
                    )
                }),
            ),
            Err(e) => (
                None,
                Err(SandboxError::Layer {
                    layer: airlock_sandbox::Layer::Network,
                    detail: e.to_string(),
                }),
            ),
        };
        // Still pending when the run failed before its gate.
        let durable = match pending.take().map_or(Ok(()), |d| self.decision_durable(d)) {
            Ok(()) => first_error.map_or(Ok(()), Err),
            Err(e) => Err(e),
        };
        prof.mark("backend returned the outcome");
        crate::egress::finish(egress, result.as_mut().ok());
        let (stdout, stderr) = hashing.finish();
        Executed {
            result,
            durable,
            stdout,
            stderr,
        }
    }

    /// After a run that kept its change set: record who made it, then hold
    /// all kept sets to their bound (which may drop this one, said in the outcome).
    fn register_kept(
        &self,
        caller: &Caller,
        policy: &Policy,
        judged: &Judged,
        request_id: &str,
        outcome: &mut Outcome,
    ) {
        let Some(summary) = outcome.change_summary.as_mut() else {
            return;
        };
        if !summary.kept {
            return;
        }
        let state_dir = self.ledger.state_dir();
        let Ok(dir) = crate::kept::run_dir(state_dir, request_id) else {
            return;
        };
        let info = crate::kept::RunInfo {
            run_id: request_id.to_string(),
            who: caller.clone(),
            tenant: caller.tenant(),
            request: RequestRecord {
                command: judged.request.command.clone(),
                cwd: judged.request.cwd.clone(),
            },
            policy_sha256: policy.sha256.clone(),
            policy_file: (policy.source != airlock_policy::load::BUILTIN_ORIGIN).then(|| {
                airlock_policy::load::absolute_lexical(&judged.request.cwd.join(&policy.source))
            }),
        };
        let (keep_for, keep_bytes) = crate::kept::bounds(&policy.changes);
        let dropped = match crate::kept::write_info(&dir, &info) {
            Ok(()) => {
                crate::kept::prune(state_dir, keep_for, keep_bytes, crate::clock::now_ms());
                !dir.join(crate::kept::RUN_FILE).exists()
            }
            Err(_) => {
                let _ = airlock_sandbox::workspace::kept::remove(&dir);
                true
            }
        };
        if dropped {
            summary.kept = false;
            outcome.violations.push(airlock_sandbox::Violation {
                kind: airlock_sandbox::ViolationKind::Filesystem,
                detail: format!(
                    "the change set was not kept for a later apply: kept change sets may take at most {keep_bytes} bytes together ([changes] keep_bytes); rerun the command to get it again"
                ),
                data: serde_json::Value::Null,
            });
        }
    }

    /// Gate the request as asked; if grants of this tenant, made for this
    /// policy, cover it, gate it again loosened. A caller's own `loosening` is
    /// discarded: only grants loosen.
    fn judge(
        &self,
        tenant: &crate::TenantId,
        policy: &Policy,
        request: &Request,
    ) -> Result<Judged, EngineError> {
        let mut request = request.clone();
        request.loosening = Loosening::default();
        let first = airlock_policy::decide(policy, &request);
        let network_ok =
            NETWORK_ALLOWLIST_ENFORCED && policy.network.mode == NetworkMode::Allowlist;
        let grants: Vec<Grant> = self
            .ledger
            .covering_grants(tenant, &policy.sha256, &first)?
            .into_iter()
            .filter(|g| network_ok || !matches!(g.boundary, Boundary::Network { .. }))
            .collect();
        if grants.is_empty() {
            return Ok(Judged {
                request,
                decision: first,
                grants,
            });
        }
        for grant in &grants {
            grant.loosen(&mut request.loosening);
        }
        let mut decision = airlock_policy::decide(policy, &request);
        for id in &request.loosening.grant_ids {
            if !decision.loosened_by.contains(id) {
                decision.loosened_by.push(id.clone());
            }
        }
        Ok(Judged {
            request,
            decision,
            grants,
        })
    }

    /// Wait for, or ask for, an answer to a fresh pending approval.
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    fn settle(
        &self,
        caller: &Caller,
        request_id: &str,
        asked: &RequestRecord,
        stdin: Option<&crate::approvals::StdinPin>,
        policy: &Policy,
        decision: &Decision,
        pending: Approval,
        options: &mut RunOptions<'_>,
    ) -> Result<Result<Approval, (RunStatus, Approval, Option<Refusal>)>, EngineError> {
        if let Some(notify) = options.on_pending.as_mut() {
            notify(&pending);
        }
        let id = pending.id.clone();
        let answered = if let Some(prompt) = options.prompt.as_mut() {
            let approver = prompt.approver();
            match prompt.ask(&pending) {
                PromptAnswer::Approve { note } => self.ledger.approve(&id, &approver, note)?,
                PromptAnswer::Deny { note } => self.ledger.deny(&id, &approver, note)?,
            }
        } else if let Some(wait) = options.wait_approval {
            let deadline = Instant::now() + wait;
            loop {
                let current = self.ledger.approval(&id)?;
                if current.status != ApprovalStatus::Pending {
                    break current;
                }
                if Instant::now() >= deadline {
                    let refusal = Refusal {
                        code: RefusalCode::Timeout,
                        message: RefusalCode::Timeout.message(&id),
                    };
                    return Ok(Err((RunStatus::ApprovalPending, current, Some(refusal))));
                }
                std::thread::sleep(
                    Duration::from_millis(200)
                        .min(deadline.saturating_duration_since(Instant::now())),
                );
            }
        } else {
            return Ok(Err((RunStatus::ApprovalPending, pending, None)));
        };
        match answered.status {
            ApprovalStatus::Approved => {
                let content = crate::content::pins(policy, &asked.cwd, decision);
                let presented = Presented {
                    request: asked,
                    stdin,
                    policy_sha256: &policy.sha256,
                    content: &content,
                };
                match self
                    .ledger
                    .use_approval(&id, caller, request_id, &presented)?
                {
                    ApprovalCheck::Accepted(approval) => Ok(Ok(approval)),
                    ApprovalCheck::Refused(code, approval) => {
                        let refusal = Refusal {
                            code,
                            message: code.message_for(&id, approval.as_ref(), &presented),
                        };
                        Ok(Err((
                            RunStatus::ApprovalRefused,
                            approval.unwrap_or(answered),
                            Some(refusal),
                        )))
                    }
                }
            }
            ApprovalStatus::Denied => Ok(Err((RunStatus::ApprovalDenied, answered, None))),
            _ => {
                let code = if answered.status == ApprovalStatus::Expired {
                    RefusalCode::Expired
                } else {
                    RefusalCode::Replayed
                };
                let refusal = Refusal {
                    code,
                    message: code.message(&id),
                };
                Ok(Err((RunStatus::ApprovalRefused, answered, Some(refusal))))
            }
        }
    }

    /// Files airlock lives by beyond the policy: this engine's state
    /// directory (wherever it was opened) and what the config named.
    pub fn owned(&self) -> Vec<PathBuf> {
        let state = self.ledger.state_dir().to_path_buf();
        let real = std::fs::canonicalize(&state).ok();
        std::iter::once(state)
            .chain(real)
            .chain(self.owned.iter().cloned())
            .collect()
    }

    /// Refuses a run whose workspace, or one of whose read or write paths
    /// (the policy's or a grant's), is the state directory or lies inside it.
    /// The state directory is hidden from a run only when it lies inside
    /// what the run is shown; the other way round the run would see the live
    /// audit log, approvals and grants, and could rewrite them.
    fn refuse_state_exposure(
        &self,
        policy: &Policy,
        loosening: &Loosening,
    ) -> Result<(), EngineError> {
        let state = self.ledger.state_dir();
        let granted = (loosening
            .read_paths
            .iter()
            .map(|p| ("granted read path", p)))
        .chain(
            loosening
                .write_paths
                .iter()
                .map(|p| ("granted write path", p)),
        );
        let trees = crate::state::shown_trees(policy).chain(granted);
        for (what, tree) in trees {
            crate::state::refuse_tree_in_state_dir(state, what, tree)
                .map_err(EngineError::StateDirExposed)?;
        }
        Ok(())
    }

    fn adjust_spec(&self, spec: &mut SandboxSpec, loosening: &Loosening, options: &RunOptions<'_>) {
        for p in self.owned() {
            if !spec.workspace.owned.contains(&p) {
                spec.workspace.owned.push(p);
            }
        }
        if let Some(apply) = options.apply {
            spec.workspace.apply = apply;
        }
        if let Some(stdin) = &options.stdin {
            spec.stdin = Some(stdin.clone());
        }
        // Make sure a write grant reaches the sandbox even if spec derivation
        // does not read the loosening itself.
        for path in &loosening.write_paths {
            if !spec.write_paths.contains(path) {
                spec.write_paths.push(path.clone());
            }
        }
        // A change set longer than its audit record lists: its full list.
        spec.workspace.list = Some(crate::ledger::change_list_path(
            self.ledger.state_dir(),
            &spec.request_id,
        ));
        // The state directory (audit log, approvals, grants, kept sets) is
        // never visible to a run, whichever tree would show it: the
        // workspace, a `filesystem.read` or `filesystem.write` entry, a
        // grant; named as written, resolved, and resolved under the root as
        // written. Hidden last, over any bind.
        // The same for the audit signing key and checkpoint file: a run that
        // could read the key could re-sign a rewritten log, and whatever it
        // prints lands in the log itself.
        let state = self.ledger.state_dir().to_path_buf();
        let audit_files = crate::ledger::audit_files_from_env();
        let hidden =
            std::iter::once(state.as_path()).chain(audit_files.iter().map(|(_, p)| p.as_path()));
        for p in hidden {
            for form in crate::spec::owned_forms(&spec.workspace.root, &spec.cwd, p) {
                if !spec.workspace.owned.contains(&form) {
                    spec.workspace.owned.push(form.clone());
                }
                if crate::spec::shown_by(spec, &form) && !spec.hide_paths.contains(&form) {
                    spec.hide_paths.push(form);
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn record_decision(
        &self,
        caller: &Caller,
        policy: &Policy,
        request_id: &str,
        judged: &Judged,
        operation: Operation,
        disposition: Proceeding,
        approval: Option<ApprovalUse>,
    ) -> Result<String, EngineError> {
        let event = self.decision_event(
            caller,
            policy,
            request_id,
            judged,
            operation,
            disposition,
            approval,
        );
        Ok(self.ledger.audit().append(event)?.id)
    }

    #[allow(clippy::too_many_arguments)]
    fn decision_event(
        &self,
        caller: &Caller,
        policy: &Policy,
        request_id: &str,
        judged: &Judged,
        operation: Operation,
        disposition: Proceeding,
        approval: Option<ApprovalUse>,
    ) -> Event {
        let d = &judged.decision;
        let mut matched_rules: Vec<String> = Vec::new();
        for rule in d
            .rule
            .iter()
            .chain(d.segments.iter().filter_map(|s| s.rule.as_ref()))
        {
            if !matched_rules.contains(rule) {
                matched_rules.push(rule.clone());
            }
        }
        let event = DecisionEvent {
            request_id: request_id.to_string(),
            operation,
            who: caller.clone(),
            tenant: caller.tenant(),
            request: RequestRecord {
                command: judged.request.command.clone(),
                cwd: judged.request.cwd.clone(),
            },
            segments: d.segments.clone(),
            matched_rules,
            decision: d.decision,
            reason: d.reason.clone(),
            step: d.step,
            policy_sha256: policy.sha256.clone(),
            policy_source: policy.source.clone(),
            loosened_by: d.loosened_by.clone(),
            loosening: judged.request.loosening.clone(),
            disposition,
            approval,
        };
        Event::Decision(event)
    }

    #[allow(clippy::too_many_arguments)]
    fn execution_event(
        &self,
        caller: &Caller,
        policy: &Policy,
        request_id: &str,
        judged: &Judged,
        spec: &SandboxSpec,
        approval: Option<&Approval>,
        result: &Result<Outcome, SandboxError>,
        stdout: StreamTally,
        stderr: StreamTally,
    ) -> ExecutionEvent {
        let limit = self.ledger.config().audit.output_bytes;
        let (outcome, stdout, stderr, changes, applied, violations, error) = match result {
            Ok(o) => (
                Some(OutcomeRecord {
                    exit_code: o.exit_code,
                    signal: o.signal,
                    killed_by: o.killed_by,
                    duration_ms: o.duration_ms,
                    cpu_ms: o.cpu_ms,
                    peak_memory_bytes: o.peak_memory_bytes,
                    output_capped: o.truncated,
                }),
                output_record(stdout, &o.stdout, limit),
                output_record(stderr, &o.stderr, limit),
                o.changes
                    .iter()
                    .take(AUDIT_CHANGES_LISTED)
                    .cloned()
                    .collect(),
                o.applied,
                o.violations.clone(),
                None,
            ),
            Err(e) => (
                None,
                output_record(stdout, "", limit),
                output_record(stderr, "", limit),
                vec![],
                false,
                vec![],
                Some(e.to_string()),
            ),
        };
        ExecutionEvent {
            request_id: request_id.to_string(),
            who: caller.clone(),
            tenant: caller.tenant(),
            request: RequestRecord {
                command: judged.request.command.clone(),
                cwd: judged.request.cwd.clone(),
            },
            policy_sha256: policy.sha256.clone(),
            backend: self.backends.name_for(policy).to_string(),
            argv: spec.argv.clone(),
            env_names: spec.env.iter().map(|(name, _)| name.clone()).collect(),
            limits: spec.limits.clone(),
            network: match &spec.network {
                airlock_sandbox::NetworkSpec::None => "none",
                airlock_sandbox::NetworkSpec::Proxy { .. } => "proxy",
                airlock_sandbox::NetworkSpec::Open => "open",
            }
            .to_string(),
            workspace_mode: format!("{:?}", spec.workspace.mode).to_lowercase(),
            outcome,
            stdout,
            stderr,
            stdin: stdin_record(spec, result, limit),
            changes,
            change_summary: result
                .as_ref()
                .ok()
                .and_then(|o| o.change_summary.clone())
                .map(audit_summary),
            applied,
            violations,
            loosened_by: judged.decision.loosened_by.clone(),
            approval_id: approval.map(|a| a.id.clone()),
            approver: approval
                .and_then(|a| a.decided_by.as_ref())
                .map(|c| c.to_string()),
            error,
        }
    }
}

/// What a run whose execution record failed did, for the error that says so.
fn unrecorded(
    result: &Result<Outcome, SandboxError>,
    audit_ids: &[String],
    source: AuditError,
) -> EngineError {
    let what = match result {
        Ok(o) => {
            let status = match (o.exit_code, o.signal, o.killed_by) {
                (_, _, Some(k)) => format!("was stopped by airlock ({k:?} limit)").to_lowercase(),
                (Some(code), _, _) => format!("exited with code {code}"),
                (None, Some(sig), _) => format!("was killed by signal {sig}"),
                _ => "ended".to_string(),
            };
            let changes = o
                .change_summary
                .as_ref()
                .map_or(o.changes.len() as u64, |s| s.total);
            let applied = if o.applied {
                format!("its changes ({changes} file(s)) WERE applied to the host")
            } else if changes > 0 {
                format!("its changes ({changes} file(s)) were not applied")
            } else {
                "it changed no files".to_string()
            };
            format!("the command ran and {status}; {applied}")
        }
        Err(e) => format!("the run failed in the sandbox ({e})"),
    };
    let why = if source.is_disk_full() {
        "no space left on device".to_string()
    } else {
        source.to_string()
    };
    EngineError::ExecutionUnrecorded(Box::new(Unrecorded {
        what,
        decision: audit_ids.last().cloned().unwrap_or_else(|| "?".into()),
        why,
        source,
    }))
}

/// A bound on an execution record's size, for the room held before a run
/// ([`crate::audit::AuditLog::reserve`]): three streams (stdout, stderr,
/// stdin) of `output_bytes` each, every byte escaped as `\u00XX` in the
/// worst case; [`AUDIT_CHANGES_LISTED`] changes of 1 KiB; 64 KiB for the
/// rest (request, argv, limits, violations).
pub fn execution_record_bound(config: &crate::audit::AuditConfig) -> u64 {
    let streams = 3 * 6 * config.output_bytes as u64;
    let changes = AUDIT_CHANGES_LISTED as u64 * 1024;
    streams + changes + 64 * 1024
}

/// Changes listed one by one in an audit record; the record's `change_summary`
/// counts all of them and holds the SHA-256 of the full list.
pub const AUDIT_CHANGES_LISTED: usize = airlock_sandbox::workspace::AUDIT_LISTED;

/// A change summary as an audit record holds it: `listed` counts the changes
/// that record lists, not the run's report.
pub(crate) fn audit_summary(
    mut s: airlock_sandbox::ChangeSummary,
) -> airlock_sandbox::ChangeSummary {
    s.listed = s.listed.min(AUDIT_CHANGES_LISTED as u64);
    s
}

/// What the command was given on stdin: the request's text (`request`), or
/// what the caller's own stdin streamed in by the command's end (`caller`).
/// What [`Engine::admit`] decided.
enum Admission {
    /// Run, with the approval that allowed it, if one did.
    Admitted(Option<Approval>),
    /// Answer without running.
    Refused(Answer),
}

/// An answer's own part; [`Answer::respond`] adds the request's.
struct Answer {
    status: RunStatus,
    message: String,
    approval: Option<Approval>,
    refusal: Option<Refusal>,
}

impl Answer {
    fn respond(self, request_id: &str, audit_ids: Vec<String>, decision: Decision) -> RunResponse {
        RunResponse {
            request_id: request_id.to_string(),
            status: self.status,
            decision,
            message: self.message,
            approval: self.approval.as_ref().map(ApprovalRef::from),
            refusal: self.refusal,
            outcome: None,
            audit_ids,
            apply: None,
        }
    }
}

/// What [`Engine::execute`] brings back: the backend's result, whether the
/// decision record became durable, and the two streams' tallies.
struct Executed {
    result: Result<Outcome, SandboxError>,
    durable: Result<(), AuditError>,
    stdout: StreamTally,
    stderr: StreamTally,
}

/// A run's one-line summary: how it ended, what was blocked, which grant
/// loosened it.
fn ran_message(outcome: &Outcome, decision: &Decision) -> String {
    let mut message = match (outcome.exit_code, outcome.signal, outcome.killed_by) {
        (_, _, Some(k)) => format!("ran; stopped by airlock: {k:?} limit").to_lowercase(),
        (Some(code), _, _) => format!("ran; exit code {code}"),
        (None, Some(sig), _) => format!("ran; killed by signal {sig}"),
        _ => "ran".to_string(),
    };
    let blocked = crate::egress::blocked_summary(&outcome.violations);
    if !blocked.is_empty() {
        message.push_str(&format!("; {blocked}"));
    }
    if !decision.loosened_by.is_empty() {
        message.push_str(&format!(
            " (loosened by grant {})",
            decision.loosened_by.join(", ")
        ));
    }
    message
}

fn stdin_record(
    spec: &SandboxSpec,
    result: &Result<Outcome, SandboxError>,
    keep: usize,
) -> Option<StreamRecord> {
    if let Some(bytes) = spec.stdin.as_deref() {
        let mut given = StreamTally::default();
        given.feed(bytes, keep);
        return Some(record_of(&given, "request"));
    }
    // An empty stream (`/dev/null`, a pipe closed at once) reads as none did.
    let streamed = result
        .as_ref()
        .ok()?
        .stdin_streamed
        .as_ref()
        .filter(|s| s.bytes > 0)?;
    let head = &streamed.head[..keep.min(streamed.head.len())];
    Some(stream_record(
        head,
        streamed.bytes,
        streamed.sha256.clone(),
        "caller",
    ))
}

/// A stream's record from what a sink passed through; if the backend streamed
/// nothing, from the output it captured instead.
fn output_record(passed: StreamTally, captured: &str, keep: usize) -> StreamRecord {
    if passed.bytes() == 0 && !captured.is_empty() {
        let mut c = StreamTally::default();
        c.feed(captured.as_bytes(), keep);
        return record_of(&c, "captured");
    }
    record_of(&passed, "stream")
}

fn record_of(t: &StreamTally, source: &str) -> StreamRecord {
    stream_record(t.head(), t.bytes(), t.sha256_hex(), source)
}

fn stream_record(head: &[u8], bytes: u64, sha256: String, source: &str) -> StreamRecord {
    StreamRecord {
        text: String::from_utf8_lossy(head).into_owned(),
        truncated: (head.len() as u64) < bytes,
        bytes,
        sha256,
        source: source.to_string(),
    }
}

/// Forwards output to the caller's sink and measures it for the audit record.
struct HashingSink<'a> {
    inner: &'a mut dyn OutputSink,
    keep: usize,
    stdout: StreamTally,
    stderr: StreamTally,
}

impl<'a> HashingSink<'a> {
    fn new(inner: &'a mut dyn OutputSink, keep: usize) -> Self {
        HashingSink {
            inner,
            keep,
            stdout: StreamTally::default(),
            stderr: StreamTally::default(),
        }
    }

    fn finish(self) -> (StreamTally, StreamTally) {
        (self.stdout, self.stderr)
    }
}

impl OutputSink for HashingSink<'_> {
    fn stdout(&mut self, chunk: &[u8]) {
        self.stdout.feed(chunk, self.keep);
        self.inner.stdout(chunk);
    }

    fn stderr(&mut self, chunk: &[u8]) {
        self.stderr.feed(chunk, self.keep);
        self.inner.stderr(chunk);
    }

    fn cancelled(&self) -> bool {
        self.inner.cancelled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn engine_is_send_and_sync() {
        assert_send_sync::<Engine>();
    }

    #[test]
    fn a_stream_record_hashes_everything_and_keeps_the_head() {
        let mut c = StreamTally::default();
        c.feed(b"hello ", 8);
        c.feed(b"world", 8);
        let r = output_record(c, "", 8);
        assert_eq!(r.bytes, 11);
        assert_eq!(r.text, "hello wo");
        assert!(r.truncated);
        assert_eq!(r.sha256, hex::encode(Sha256::digest(b"hello world")));
        assert_eq!(r.source, "stream");
    }
}
