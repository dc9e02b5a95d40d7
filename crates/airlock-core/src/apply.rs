//! Parked change sets and the apply of a kept change set (`airlock changes
//! RUN_ID`, `airlock apply RUN_ID`, and a run whose change set needs a
//! person): the kept set is judged and applied by the sandbox crate's one
//! return path ([`airlock_sandbox::workspace::kept`]); this module adds who may
//! do it, the approval bound to the set's content hash, and the audit record.

use crate::approvals::{Approval, ApprovalStatus, ChangeSetPin};
use crate::audit::record::{ApplyEvent, Event};
use crate::engine::{ApprovalRef, Refusal, RunOptions, AUDIT_CHANGES_LISTED};
use crate::ledger::ApprovalCheck;
use crate::{Caller, Engine, EngineError, PromptAnswer};
use airlock_policy::changes::{Disposition, EntryType};
use airlock_policy::{Policy, Request};
use airlock_sandbox::workspace::kept as sk;
use airlock_sandbox::workspace::Finished;
use airlock_sandbox::{ChangeSummary, FileChange, Violation};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Changes listed in an apply approval for a person to read.
pub const APPROVAL_CHANGES_LISTED: usize = 50;

/// What happened to an apply request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApplyStatus {
    /// The allowed (and approved) changes were written to the workspace.
    Applied,
    /// Nothing was written: changes were denied, held or over a limit.
    NotApplied,
    /// Changes need a person; `approval` names the pending approval.
    ApprovalPending,
    /// A person denied the apply.
    ApprovalDenied,
    /// The approval presented could not be used; `refusal` says why.
    ApprovalRefused,
    /// The kept set is gone, belongs to another caller, or no longer matches.
    Refused,
    /// Only a report was asked for (`airlock changes RUN_ID`).
    Report,
    /// The kept set was removed without being applied (`--discard`).
    Discarded,
}

impl ApplyStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ApplyStatus::Applied => "applied",
            ApplyStatus::NotApplied => "not_applied",
            ApplyStatus::ApprovalPending => "approval_pending",
            ApplyStatus::ApprovalDenied => "approval_denied",
            ApplyStatus::ApprovalRefused => "approval_refused",
            ApplyStatus::Refused => "refused",
            ApplyStatus::Report => "report",
            ApplyStatus::Discarded => "discarded",
        }
    }
}

/// What `changes` / `apply` of a kept set return.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApplyResponse {
    pub request_id: String,
    pub run_id: String,
    pub status: ApplyStatus,
    /// One line for a person or a model.
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
    /// The hash an approval binds to.
    pub set_sha256: String,
    pub changes: Vec<FileChange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_summary: Option<ChangeSummary>,
    pub applied: bool,
    pub violations: Vec<Violation>,
    pub audit_ids: Vec<String>,
}

/// One kept set, as `airlock changes` lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeptSummary {
    pub run_id: String,
    /// When it was kept, in ms since the epoch.
    pub created_ms: u64,
    /// The bytes its files hold.
    pub bytes: u64,
    pub command: airlock_policy::Command,
    pub cwd: PathBuf,
}

/// A kept set, loaded for one caller.
struct Loaded {
    dir: PathBuf,
    info: crate::kept::RunInfo,
    ws: airlock_sandbox::WorkspaceSpec,
    limits: airlock_sandbox::Limits,
}

impl Engine {
    fn load_kept(&self, caller: &Caller, policy: &Policy, run_id: &str) -> Result<Loaded, String> {
        let dir = crate::kept::run_dir(self.ledger().state_dir(), run_id)?;
        let info = crate::kept::read_info(&dir)?;
        if info.tenant != caller.tenant() {
            // Another tenant's set: neither shown nor applied (nor confirmed to exist).
            return Err("no kept change set by that run id (it was applied, discarded or expired, or the run kept nothing)".into());
        }
        let request = Request {
            command: info.request.command.clone(),
            cwd: info.request.cwd.clone(),
            loosening: Default::default(),
        };
        // The workspace rules as a run under this policy would have them:
        // airlock's own files, protect, [changes], the limits.
        let mut spec = crate::spec::derive(policy, &request, run_id);
        // The run's own policy file too, whatever policy judges the apply.
        let run_policy = info
            .policy_file
            .iter()
            .flat_map(|p| crate::spec::owned_forms(&policy.workspace.root, &info.request.cwd, p));
        for p in self.owned().into_iter().chain(run_policy) {
            if !spec.workspace.owned.contains(&p) {
                spec.workspace.owned.push(p);
            }
        }
        Ok(Loaded {
            dir,
            info,
            ws: spec.workspace,
            limits: spec.limits,
        })
    }

    /// A response for a new request about the kept set of `run_id`, and the
    /// set loaded for `caller`; without it, the response is refused and says
    /// why.
    fn open_kept(
        &self,
        caller: &Caller,
        policy: &Policy,
        run_id: &str,
    ) -> (ApplyResponse, Option<Loaded>) {
        let mut r = empty(&crate::state::new_request_id(), run_id);
        match self.load_kept(caller, policy, run_id) {
            Ok(l) => (r, Some(l)),
            Err(why) => {
                r.status = ApplyStatus::Refused;
                r.message = why;
                (r, None)
            }
        }
    }

    /// What applying the kept set of `run_id` would do now, under `policy`.
    pub fn kept_changes(
        &self,
        caller: &Caller,
        policy: &Policy,
        run_id: &str,
    ) -> Result<ApplyResponse, EngineError> {
        let (mut r, loaded) = self.open_kept(caller, policy, run_id);
        let Some(loaded) = loaded else {
            return Ok(r);
        };
        match sk::report(&loaded.dir, &loaded.ws, &loaded.limits) {
            Ok((f, m)) => {
                r.status = ApplyStatus::Report;
                r.set_sha256 = m.set_sha256;
                r.message = summary_line(&f, false);
                fill(&mut r, f);
            }
            Err(why) => {
                r.status = ApplyStatus::Refused;
                r.message = why;
            }
        }
        Ok(r)
    }

    /// Removes the kept set of `run_id` without applying any of it, and
    /// records that in the audit log (`airlock changes RUN_ID --discard`).
    /// Only the caller's tenant may; a pending approval of the set can then
    /// apply nothing.
    pub fn discard_kept(
        &self,
        caller: &Caller,
        policy: &Policy,
        run_id: &str,
    ) -> Result<ApplyResponse, EngineError> {
        let (mut r, loaded) = self.open_kept(caller, policy, run_id);
        let Some(loaded) = loaded else {
            return Ok(r);
        };
        if let Ok(m) = sk::manifest(&loaded.dir) {
            r.set_sha256 = m.set_sha256;
        }
        match sk::remove(&loaded.dir) {
            Ok(()) => {
                r.status = ApplyStatus::Discarded;
                r.message = format!(
                    "discarded the kept change set of run {run_id}; none of it was applied"
                );
            }
            Err(e) => {
                r.status = ApplyStatus::Refused;
                r.message = format!(
                    "cannot remove the kept change set {}: {e}",
                    loaded.dir.display()
                );
            }
        }
        self.record_apply(caller, policy, &mut r, Some(&loaded), None)?;
        Ok(r)
    }

    /// The kept sets the caller's tenant may see, oldest first.
    pub fn kept_list(&self, caller: &Caller) -> Vec<KeptSummary> {
        let root = crate::kept::root(self.ledger().state_dir());
        let Ok(rd) = std::fs::read_dir(&root) else {
            return Vec::new();
        };
        let mut out: Vec<KeptSummary> = rd
            .flatten()
            .filter_map(|e| {
                let dir = e.path();
                let (created_ms, bytes) = sk::stamp(&dir)?;
                let info = crate::kept::read_info(&dir).ok()?;
                (info.tenant == caller.tenant()).then_some(KeptSummary {
                    run_id: info.run_id,
                    created_ms,
                    bytes,
                    command: info.request.command,
                    cwd: info.request.cwd,
                })
            })
            .collect();
        out.sort_by_key(|k| k.created_ms);
        out
    }

    /// Applies the kept set of `run_id` through the return path. Changes that
    /// need a person park as an approval bound to the set's hash (waited for
    /// with `options.wait_approval` or asked with `options.prompt`); an
    /// approval given applies exactly the reviewed set, or nothing.
    pub fn apply_kept(
        &self,
        caller: &Caller,
        policy: &Policy,
        run_id: &str,
        mut options: RunOptions<'_>,
    ) -> Result<ApplyResponse, EngineError> {
        let (mut r, loaded) = self.open_kept(caller, policy, run_id);
        let Some(loaded) = loaded else {
            self.record_apply(caller, policy, &mut r, None, None)?;
            return Ok(r);
        };
        let request_id = r.request_id.clone();
        // What the set is now, and whether it needs a person.
        let (preview, manifest) = match sk::report(&loaded.dir, &loaded.ws, &loaded.limits) {
            Ok(x) => x,
            Err(why) => {
                r.status = ApplyStatus::Refused;
                r.message = why;
                self.record_apply(caller, policy, &mut r, Some(&loaded), None)?;
                return Ok(r);
            }
        };
        r.set_sha256 = manifest.set_sha256.clone();
        let mut approved: Option<Approval> = None;
        if preview.summary.held > 0 {
            let id = match options.approval_id.clone() {
                Some(id) => id,
                None => {
                    let pending =
                        self.park(caller, policy, &request_id, &loaded, &preview, &manifest)?;
                    if let Some(notify) = options.on_pending.as_mut() {
                        notify(&pending);
                    }
                    match self.answer(&pending, &mut options)? {
                        Some(answered) if answered.status == ApprovalStatus::Approved => {
                            answered.id
                        }
                        Some(answered) if answered.status == ApprovalStatus::Denied => {
                            r.status = ApplyStatus::ApprovalDenied;
                            r.message = format!(
                                "approval {} was denied: nothing applied; the change set stays kept until it expires",
                                answered.id
                            );
                            r.approval = Some(ApprovalRef::from(&answered));
                            fill(&mut r, preview);
                            self.record_apply(caller, policy, &mut r, Some(&loaded), None)?;
                            return Ok(r);
                        }
                        other => {
                            let a = other.unwrap_or(pending);
                            r.status = ApplyStatus::ApprovalPending;
                            r.message = format!(
                                "{} change(s) need a person; approval {} is pending until {}: a person reviews them with `airlock changes {run_id}` and runs `airlock approvals approve {}`, then `airlock apply {run_id} --approval {}` applies exactly that set",
                                preview.summary.held, a.id, a.expires_at, a.id, a.id
                            );
                            r.approval = Some(ApprovalRef::from(&a));
                            fill(&mut r, preview);
                            self.record_apply(caller, policy, &mut r, Some(&loaded), None)?;
                            return Ok(r);
                        }
                    }
                }
            };
            match self.ledger().use_apply_approval(
                &id,
                caller,
                &request_id,
                run_id,
                &manifest.set_sha256,
                &policy.sha256,
            )? {
                ApprovalCheck::Accepted(a) => approved = Some(a),
                ApprovalCheck::Refused(code, a) => {
                    r.status = ApplyStatus::ApprovalRefused;
                    r.message = format!("{}; nothing applied", code.message(&id));
                    r.refusal = Some(Refusal {
                        code,
                        message: code.message(&id),
                    });
                    r.approval = a.as_ref().map(ApprovalRef::from);
                    fill(&mut r, preview);
                    self.record_apply(caller, policy, &mut r, Some(&loaded), None)?;
                    return Ok(r);
                }
            }
        }
        let pin = approved
            .as_ref()
            .and_then(|a| a.change_set.as_ref())
            .map(|p| p.sha256.as_str());
        // A set longer than the apply record lists: its full list, as a run's.
        let mut ws = loaded.ws.clone();
        ws.list = Some(crate::ledger::change_list_path(
            self.ledger().state_dir(),
            &request_id,
        ));
        match sk::apply(&loaded.dir, &ws, &loaded.limits, pin) {
            Ok((f, _)) => {
                // A set whose every change was denied wrote nothing: not applied.
                r.status = if f.applied && f.summary.allowed() > 0 {
                    ApplyStatus::Applied
                } else {
                    ApplyStatus::NotApplied
                };
                r.message = summary_line(&f, true);
                fill(&mut r, f);
            }
            Err(why) => {
                r.status = ApplyStatus::Refused;
                r.message = why;
            }
        }
        r.approval = approved.as_ref().map(ApprovalRef::from);
        self.record_apply(caller, policy, &mut r, Some(&loaded), approved.as_ref())?;
        Ok(r)
    }

    /// Creates the pending approval of a kept set's held changes.
    fn park(
        &self,
        caller: &Caller,
        policy: &Policy,
        request_id: &str,
        loaded: &Loaded,
        preview: &Finished,
        manifest: &sk::Manifest,
    ) -> Result<Approval, EngineError> {
        let mut lines: Vec<String> = preview
            .changes
            .iter()
            .take(APPROVAL_CHANGES_LISTED)
            .map(change_line)
            .collect();
        let shown = preview.changes.len();
        let total = (preview.summary.total - preview.summary.discarded) as usize;
        if total > shown.min(APPROVAL_CHANGES_LISTED) {
            lines.push(format!(
                "… and {} more (`airlock changes {}` lists them)",
                total - shown.min(APPROVAL_CHANGES_LISTED),
                loaded.info.run_id
            ));
        }
        let reasons: Vec<String> = preview
            .violations
            .iter()
            .filter(|v| {
                v.data.get("disposition").and_then(|d| d.as_str()) == Some("approval_required")
            })
            .map(|v| v.detail.clone())
            .collect();
        let pin = ChangeSetPin {
            run_id: loaded.info.run_id.clone(),
            sha256: manifest.set_sha256.clone(),
            changes: lines,
        };
        Ok(self.ledger().create_apply_approval(
            caller,
            request_id,
            loaded.info.request.clone(),
            policy,
            reasons,
            pin,
        )?)
    }

    /// A person's answer to a fresh pending approval: asked at a terminal,
    /// waited for, or none (`None`: still pending).
    fn answer(
        &self,
        pending: &Approval,
        options: &mut RunOptions<'_>,
    ) -> Result<Option<Approval>, EngineError> {
        if let Some(prompt) = options.prompt.as_mut() {
            let approver = prompt.approver();
            let a = match prompt.ask(pending) {
                PromptAnswer::Approve { note } => {
                    self.ledger().approve(&pending.id, &approver, note)?
                }
                PromptAnswer::Deny { note } => self.ledger().deny(&pending.id, &approver, note)?,
            };
            return Ok(Some(a));
        }
        let Some(wait) = options.wait_approval else {
            return Ok(None);
        };
        let deadline = Instant::now() + wait;
        loop {
            let current = self.ledger().approval(&pending.id)?;
            if current.status != ApprovalStatus::Pending || Instant::now() >= deadline {
                return Ok(Some(current));
            }
            std::thread::sleep(
                Duration::from_millis(200).min(deadline.saturating_duration_since(Instant::now())),
            );
        }
    }

    fn record_apply(
        &self,
        caller: &Caller,
        policy: &Policy,
        r: &mut ApplyResponse,
        loaded: Option<&Loaded>,
        approval: Option<&Approval>,
    ) -> Result<(), EngineError> {
        let event = ApplyEvent {
            request_id: r.request_id.clone(),
            run_id: r.run_id.clone(),
            who: caller.clone(),
            tenant: caller.tenant(),
            workspace: loaded
                .map(|l| l.ws.root.clone())
                .unwrap_or_else(|| policy.workspace.root.clone()),
            policy_sha256: policy.sha256.clone(),
            set_sha256: r.set_sha256.clone(),
            disposition: r.status.as_str().to_string(),
            applied: r.applied,
            changes: r
                .changes
                .iter()
                .take(AUDIT_CHANGES_LISTED)
                .cloned()
                .collect(),
            change_summary: r.change_summary.clone().map(crate::engine::audit_summary),
            violations: r.violations.clone(),
            approval_id: approval
                .map(|a| a.id.clone())
                .or_else(|| r.approval.as_ref().map(|a| a.id.clone())),
            approver: approval
                .and_then(|a| a.decided_by.as_ref())
                .map(|c| c.to_string()),
            detail: (r.status == ApplyStatus::Refused).then(|| r.message.clone()),
        };
        let record = self
            .ledger()
            .audit()
            .append(Event::Apply(Box::new(event)))?;
        r.audit_ids.push(record.id);
        Ok(())
    }
}

fn empty(request_id: &str, run_id: &str) -> ApplyResponse {
    ApplyResponse {
        request_id: request_id.to_string(),
        run_id: run_id.to_string(),
        status: ApplyStatus::Refused,
        message: String::new(),
        approval: None,
        refusal: None,
        set_sha256: String::new(),
        changes: Vec::new(),
        change_summary: None,
        applied: false,
        violations: Vec::new(),
        audit_ids: Vec::new(),
    }
}

fn fill(r: &mut ApplyResponse, f: Finished) {
    r.applied = f.applied;
    r.changes = f.changes;
    r.change_summary = Some(f.summary);
    r.violations = f.violations;
}

fn summary_line(f: &Finished, apply: bool) -> String {
    let s = &f.summary;
    let n = s.total - s.discarded;
    if apply && f.applied && s.allowed() == 0 {
        format!("nothing applied: the {n} change(s) were all denied")
    } else if apply && f.applied {
        format!(
            "applied: {} change(s), {} bytes written{}",
            s.allowed(),
            s.applied_bytes,
            if s.denied > 0 {
                format!("; {} denied change(s) left out", s.denied)
            } else {
                String::new()
            }
        )
    } else if apply {
        format!(
            "not applied: {n} change(s), {} denied, {} need a person",
            s.denied, s.held
        )
    } else {
        format!(
            "{n} change(s) kept: {} would apply, {} denied, {} need a person",
            n - s.denied - s.held,
            s.denied,
            s.held
        )
    }
}

/// One escaped line for a change: kind, path, link target, type, mode, verdict.
pub fn change_line(c: &FileChange) -> String {
    let kind = match c.kind {
        airlock_sandbox::ChangeKind::Added => "added",
        airlock_sandbox::ChangeKind::Modified => "modified",
        airlock_sandbox::ChangeKind::Deleted => "deleted",
    };
    let mut line = format!("{kind:8} {}", c.path);
    if let Some(t) = &c.target {
        line.push_str(" -> ");
        line.push_str(t);
    }
    if !matches!(c.file_type, EntryType::File | EntryType::Dir) {
        line.push_str(&format!(" ({})", c.file_type.as_str()));
    }

    if let Some(m) = &c.mode {
        line.push_str(&format!(" [{m}]"));
    }
    if let Some(t) = c.replaces {
        // A file where a directory was takes the directory's whole tree.
        let all = if t == EntryType::Dir {
            " and everything in it"
        } else {
            ""
        };
        line.push_str(&format!(" (replaces a {}{all})", t.as_str()));
    }
    match c.disposition {
        Some(Disposition::Deny) => line.push_str(" DENIED"),
        Some(Disposition::ApprovalRequired) => line.push_str(" NEEDS APPROVAL"),
        _ => {}
    }
    crate::terminal::escape_line(&line).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(kind: airlock_sandbox::ChangeKind, replaces: Option<EntryType>) -> FileChange {
        FileChange {
            path: "/w/src".into(),
            kind,
            file_type: EntryType::File,
            size: 3,
            mode: Some("0644".into()),
            target: None,
            replaces,
            disposition: Some(Disposition::Allow),
            reason: None,
        }
    }

    /// A file where a directory was takes the directory's tree: the line says so.
    #[test]
    fn a_line_says_what_a_change_replaces() {
        use airlock_sandbox::ChangeKind::Modified;
        assert_eq!(
            change_line(&change(Modified, Some(EntryType::Dir))),
            "modified /w/src [0644] (replaces a dir and everything in it)"
        );
        assert_eq!(
            change_line(&change(Modified, None)),
            "modified /w/src [0644]"
        );
    }
}
