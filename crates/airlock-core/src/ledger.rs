//! The state directory's three ledgers together: the audit log, approvals and
//! grants. Every change to an approval or a grant is an audit record, written
//! (and fsynced) before the change is stored, under the store's lock.
//!
//! Layout: `<state>/audit/`, `<state>/approvals/ap-*.json`, `<state>/grants/gr-*.json`.

use crate::approvals::{check_use, Approval, ApprovalStatus, RefusalCode, DEFAULT_TTL};
use crate::audit::record::{
    ApprovalAction, ApprovalEvent, Event, GrantAction, GrantEvent, Record, RequestRecord,
};
use crate::audit::{AuditConfig, AuditError, AuditLog};
use crate::clock::{format_rfc3339, now_ms};
use crate::grants::{Grant, GrantError, GrantRequest, GrantState, Revocation};
use crate::state::{ensure_private_dir, random_id};
use crate::store::{JsonStore, StoreError};
use crate::{Caller, TenantId};
use airlock_policy::{Decision, Policy, Verdict};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct LedgerConfig {
    pub audit: AuditConfig,
    /// How long a pending approval waits for an answer, and an approved one for its run.
    pub approval_ttl: Duration,
}

impl Default for LedgerConfig {
    fn default() -> Self {
        LedgerConfig {
            audit: AuditConfig::default(),
            approval_ttl: DEFAULT_TTL,
        }
    }
}

/// Environment variables that override the defaults, for operators and tests.
pub const ENV_APPROVAL_TTL: &str = "AIRLOCK_APPROVAL_TTL";
pub const ENV_AUDIT_MAX_FILE_BYTES: &str = "AIRLOCK_AUDIT_MAX_FILE_BYTES";
pub const ENV_AUDIT_OUTPUT_BYTES: &str = "AIRLOCK_AUDIT_OUTPUT_BYTES";
/// The most `AIRLOCK_AUDIT_OUTPUT_BYTES` may be: 18 times it, plus the rest
/// of an execution record, stays under what `audit verify` reads in one line.
pub const MAX_AUDIT_OUTPUT_BYTES: u64 = 14 * 1024 * 1024;
/// The operator's ed25519 signing key (PKCS#8 PEM, outside the state directory):
/// with it, checkpoints of the chain's head are signed and exported.
pub const ENV_AUDIT_SIGNING_KEY: &str = "AIRLOCK_AUDIT_SIGNING_KEY";
/// How often a checkpoint is due (`60s` by default).
pub const ENV_AUDIT_CHECKPOINT_INTERVAL: &str = "AIRLOCK_AUDIT_CHECKPOINT_INTERVAL";
/// A file (outside the state directory) each checkpoint is appended to.
pub const ENV_AUDIT_CHECKPOINT_FILE: &str = "AIRLOCK_AUDIT_CHECKPOINT_FILE";
/// A syslog socket each checkpoint is sent to (`1` for `/dev/log`).
pub const ENV_AUDIT_CHECKPOINT_SYSLOG: &str = "AIRLOCK_AUDIT_CHECKPOINT_SYSLOG";

impl LedgerConfig {
    /// This configuration with any of `AIRLOCK_APPROVAL_TTL` (`15m`),
    /// `AIRLOCK_AUDIT_MAX_FILE_BYTES` and `AIRLOCK_AUDIT_OUTPUT_BYTES` (integers)
    /// applied. A malformed value is an error, not ignored.
    pub fn with_env_overrides(mut self) -> Result<LedgerConfig, LedgerError> {
        let get = |name: &'static str| {
            std::env::var(name)
                .ok()
                .filter(|v| !v.trim().is_empty())
                .map(|v| (name, v))
        };
        if let Some((name, value)) = get(ENV_APPROVAL_TTL) {
            self.approval_ttl = crate::clock::parse_duration(&value)
                .filter(|d| !d.is_zero())
                .ok_or(LedgerError::Config {
                    name,
                    value,
                    expected: "a duration such as 15m or 90s",
                })?;
        }
        if let Some((name, value)) = get(ENV_AUDIT_MAX_FILE_BYTES) {
            self.audit.max_file_bytes =
                value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or(LedgerError::Config {
                        name,
                        value,
                        expected: "a positive number of bytes",
                    })?;
        }
        if let Some((name, value)) = get(ENV_AUDIT_OUTPUT_BYTES) {
            // A record keeps up to 18 times this (stdout, stderr, stdin, each
            // escaped), and `verify` reads lines of at most MAX_LINE_BYTES: a
            // larger value would write records nothing can read back (and
            // asks `audit/reserve` for more than a file may hold).
            self.audit.output_bytes = value
                .trim()
                .parse()
                .ok()
                .filter(|n: &usize| (*n as u64) <= MAX_AUDIT_OUTPUT_BYTES)
                .ok_or(LedgerError::Config {
                    name,
                    value,
                    expected: "a number of bytes, at most 14680064 (14 MiB)",
                })?;
        }
        Ok(self)
    }
}

/// The audit files an operator keeps outside the state directory and no run
/// may see or write: the signing key (whoever reads it can re-sign a
/// rewritten log so that `audit verify --key` passes) and the checkpoint
/// export file (rewriting it hides a rollback from `verify --checkpoints`).
/// Named with the variable that set them; empty when neither is set.
pub fn audit_files_from_env() -> Vec<(&'static str, PathBuf)> {
    [
        (
            ENV_AUDIT_SIGNING_KEY,
            "audit signing key (AIRLOCK_AUDIT_SIGNING_KEY)",
        ),
        (
            ENV_AUDIT_CHECKPOINT_FILE,
            "audit checkpoint file (AIRLOCK_AUDIT_CHECKPOINT_FILE)",
        ),
    ]
    .into_iter()
    .filter_map(|(name, what)| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(|v| (what, PathBuf::from(v)))
    })
    .collect()
}

/// The signing side of the audit anchor, from `AIRLOCK_AUDIT_SIGNING_KEY` and
/// its companions; `None` when no key is configured.
pub fn anchor_from_env(
    state_dir: &Path,
) -> Result<Option<crate::audit::anchor::Anchor>, LedgerError> {
    use crate::audit::anchor::{Anchor, Exports, DEFAULT_INTERVAL};
    let get = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let Some(key) = get(ENV_AUDIT_SIGNING_KEY) else {
        return Ok(None);
    };
    let interval = match std::env::var(ENV_AUDIT_CHECKPOINT_INTERVAL) {
        Ok(v) if !v.trim().is_empty() => crate::clock::parse_duration(&v)
            .filter(|d| !d.is_zero())
            .ok_or(LedgerError::Config {
                name: ENV_AUDIT_CHECKPOINT_INTERVAL,
                value: v,
                expected: "a duration such as 60s or 5m",
            })?,
        _ => DEFAULT_INTERVAL,
    };
    let syslog = get(ENV_AUDIT_CHECKPOINT_SYSLOG).map(|v| {
        if v == "1" {
            PathBuf::from("/dev/log")
        } else {
            PathBuf::from(v)
        }
    });
    let exports = Exports {
        file: get(ENV_AUDIT_CHECKPOINT_FILE).map(PathBuf::from),
        syslog,
    };
    Ok(Some(Anchor::load(
        Path::new(&key),
        state_dir,
        interval,
        exports,
    )?))
}

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error(transparent)]
    State(#[from] crate::state::StateError),
    #[error(transparent)]
    Audit(#[from] AuditError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Grant(#[from] GrantError),
    #[error(transparent)]
    Anchor(#[from] crate::audit::anchor::AnchorError),
    #[error("{name}={value:?} is not valid: expected {expected}")]
    Config {
        name: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("no approval {0}")]
    ApprovalNotFound(String),
    #[error("no grant {0}")]
    GrantNotFound(String),
    #[error("approval {id} is {status}, not pending: nothing to {action}")]
    NotPending {
        id: String,
        status: &'static str,
        action: &'static str,
    },
    #[error(
        "approval {id} was requested by token `{name}`; a token cannot answer its own approval"
    )]
    SelfApproval { id: String, name: String },
}

/// The outcome of presenting an approval with a request.
#[derive(Debug)]
pub enum ApprovalCheck {
    Accepted(Approval),
    Refused(RefusalCode, Option<Approval>),
}

/// Where the full list of a request's change set is kept, when its audit
/// record lists only the first [`airlock_sandbox::workspace::AUDIT_LISTED`]:
/// `<state>/changes/<request id>.list`, one line per change, the lines whose
/// SHA-256 is the record's `change_summary.sha256`.
pub fn change_list_path(state_dir: &std::path::Path, request_id: &str) -> std::path::PathBuf {
    state_dir.join("changes").join(format!("{request_id}.list"))
}

pub struct Ledger {
    root: PathBuf,
    audit: AuditLog,
    approvals: JsonStore,
    grants: JsonStore,
    config: LedgerConfig,
}

impl Ledger {
    /// Open the ledgers in `state_dir` (created 0700). The environment overrides
    /// of [`LedgerConfig::with_env_overrides`] apply.
    pub fn open(state_dir: &Path, config: LedgerConfig) -> Result<Ledger, LedgerError> {
        let mut config = config.with_env_overrides()?;
        ensure_private_dir(state_dir)?;
        if config.audit.anchor.is_none() {
            config.audit.anchor = anchor_from_env(state_dir)?.map(std::sync::Arc::new);
        }
        Ok(Ledger {
            root: state_dir.to_path_buf(),
            audit: AuditLog::open(&state_dir.join("audit"), config.audit.clone())?,
            approvals: JsonStore::open(&state_dir.join("approvals"), "ap")?,
            grants: JsonStore::open(&state_dir.join("grants"), "gr")?,
            config,
        })
    }

    pub fn state_dir(&self) -> &Path {
        &self.root
    }

    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    pub fn config(&self) -> &LedgerConfig {
        &self.config
    }

    // ---- approvals ----

    /// A new id for an approval that [`Ledger::create_approval`] will store.
    pub fn new_approval_id(&self) -> String {
        random_id("ap")
    }

    /// Store a pending approval for a request the gate answered `approval_required`.
    #[allow(clippy::too_many_arguments)]
    pub fn create_approval(
        &self,
        id: String,
        who: &Caller,
        request_id: &str,
        request: RequestRecord,
        stdin: Option<crate::approvals::StdinPin>,
        policy: &Policy,
        decision: &Decision,
    ) -> Result<Approval, LedgerError> {
        // What the files the command runs hold now: the approval covers that.
        let content = crate::content::pins(policy, &request.cwd, decision);
        let now = now_ms();
        let expires = now + self.config.approval_ttl.as_millis() as u64;
        let mut reasons: Vec<String> = decision
            .segments
            .iter()
            .filter(|s| s.decision == Verdict::ApprovalRequired)
            .map(|s| s.reason.clone())
            .collect();
        if reasons.is_empty() {
            reasons.push(decision.reason.clone());
        }
        let approval = Approval {
            id,
            status: ApprovalStatus::Pending,
            request,
            policy_sha256: policy.sha256.clone(),
            policy_source: policy.source.clone(),
            reasons,
            requested_by: who.clone(),
            tenant: who.tenant(),
            request_id: request_id.to_string(),
            content,
            stdin,
            change_set: None,
            created_at: format_rfc3339(now),
            expires_at: format_rfc3339(expires),
            expires_at_ms: expires,
            decided_by: None,
            decided_at: None,
            note: None,
            used_by: None,
            used_at: None,
        };
        self.store_new(approval, who, request_id)
    }

    fn store_new(
        &self,
        approval: Approval,
        who: &Caller,
        request_id: &str,
    ) -> Result<Approval, LedgerError> {
        self.approvals.check_id(&approval.id)?;
        self.approvals.locked(|| {
            self.audit_approval(
                ApprovalAction::Created,
                &approval,
                who,
                Some(request_id),
                None,
            )?;
            self.approvals.put(&approval.id, &approval)?;
            Ok::<_, LedgerError>(())
        })??;
        Ok(approval)
    }

    /// Store a pending approval for applying a kept change set that holds
    /// changes needing a person. `request` is the command that made the set
    /// (shown to the person); the approval binds the set's hash and the policy.
    #[allow(clippy::too_many_arguments)]
    pub fn create_apply_approval(
        &self,
        who: &Caller,
        request_id: &str,
        request: RequestRecord,
        policy: &Policy,
        reasons: Vec<String>,
        pin: crate::approvals::ChangeSetPin,
    ) -> Result<Approval, LedgerError> {
        let now = now_ms();
        let expires = now + self.config.approval_ttl.as_millis() as u64;
        let approval = Approval {
            id: self.new_approval_id(),
            status: ApprovalStatus::Pending,
            request,
            policy_sha256: policy.sha256.clone(),
            policy_source: policy.source.clone(),
            reasons,
            requested_by: who.clone(),
            tenant: who.tenant(),
            request_id: request_id.to_string(),
            content: Vec::new(),
            stdin: None,
            change_set: Some(pin),
            created_at: format_rfc3339(now),
            expires_at: format_rfc3339(expires),
            expires_at_ms: expires,
            decided_by: None,
            decided_at: None,
            note: None,
            used_by: None,
            used_at: None,
        };
        self.store_new(approval, who, request_id)
    }

    /// Present an apply approval for the kept set of `run_id` (hash
    /// `set_sha256` now): accepted and spent, or refused with a code.
    pub fn use_apply_approval(
        &self,
        id: &str,
        who: &Caller,
        request_id: &str,
        run_id: &str,
        set_sha256: &str,
        policy_sha256: &str,
    ) -> Result<ApprovalCheck, LedgerError> {
        self.spend(id, who, request_id, |approval| {
            crate::approvals::check_apply(
                approval,
                &who.tenant(),
                run_id,
                set_sha256,
                policy_sha256,
            )
        })
    }

    /// Every approval, after recording the expiry of those whose time has passed.
    pub fn approvals(&self) -> Result<Vec<Approval>, LedgerError> {
        self.approvals.locked(|| {
            let mut all: Vec<Approval> = self.approvals.list()?;
            for approval in all.iter_mut() {
                self.expire_if_due(approval)?;
            }
            Ok(all)
        })?
    }

    /// One approval, after recording its expiry if its time has passed.
    pub fn approval(&self, id: &str) -> Result<Approval, LedgerError> {
        self.approvals.check_id(id)?;
        self.approvals.locked(|| {
            let mut approval: Approval = self
                .approvals
                .get(id)?
                .ok_or_else(|| LedgerError::ApprovalNotFound(id.to_string()))?;
            self.expire_if_due(&mut approval)?;
            Ok(approval)
        })?
    }

    pub fn approve(
        &self,
        id: &str,
        who: &Caller,
        note: Option<String>,
    ) -> Result<Approval, LedgerError> {
        self.answer(id, who, note, ApprovalStatus::Approved)
    }

    pub fn deny(
        &self,
        id: &str,
        who: &Caller,
        note: Option<String>,
    ) -> Result<Approval, LedgerError> {
        self.answer(id, who, note, ApprovalStatus::Denied)
    }

    fn answer(
        &self,
        id: &str,
        who: &Caller,
        note: Option<String>,
        to: ApprovalStatus,
    ) -> Result<Approval, LedgerError> {
        self.approvals.check_id(id)?;
        let action = if to == ApprovalStatus::Approved {
            "approve"
        } else {
            "deny"
        };
        self.approvals.locked(|| {
            let mut approval: Approval = self
                .approvals
                .get(id)?
                .ok_or_else(|| LedgerError::ApprovalNotFound(id.to_string()))?;
            self.expire_if_due(&mut approval)?;
            if approval.status != ApprovalStatus::Pending {
                return Err(LedgerError::NotPending {
                    id: id.to_string(),
                    status: approval.status.as_str(),
                    action,
                });
            }
            if who.kind == crate::CallerKind::Token && who.tenant() == approval.tenant {
                return Err(LedgerError::SelfApproval {
                    id: id.to_string(),
                    name: who.name.clone(),
                });
            }
            approval.status = to;
            approval.decided_by = Some(who.clone());
            approval.decided_at = Some(format_rfc3339(now_ms()));
            approval.note = note.clone();
            let event = if to == ApprovalStatus::Approved {
                ApprovalAction::Approved
            } else {
                ApprovalAction::Denied
            };
            self.audit_approval(event, &approval, who, None, note)?;
            self.approvals.put(id, &approval)?;
            Ok(approval)
        })?
    }

    /// Spend an approval on a request: it must be the caller's tenant's, approved,
    /// unexpired, unused, and for the same command, cwd, stdin and policy, with
    /// the files it runs unchanged. Each refusal
    /// has its own code.
    pub fn use_approval(
        &self,
        id: &str,
        who: &Caller,
        request_id: &str,
        presented: &crate::approvals::Presented<'_>,
    ) -> Result<ApprovalCheck, LedgerError> {
        self.spend(id, who, request_id, |approval| {
            check_use(approval, &who.tenant(), presented)
        })
    }

    /// The one way an approval is spent: it must exist and be the caller's
    /// tenant's (another tenant's is neither expired nor revealed), is expired
    /// first if its time has passed, then must pass `check` (which names the
    /// refusal); only then is it marked used, audited and stored, all under the
    /// store's lock so that it is spent at most once.
    fn spend(
        &self,
        id: &str,
        who: &Caller,
        request_id: &str,
        check: impl FnOnce(&Approval) -> Result<(), RefusalCode>,
    ) -> Result<ApprovalCheck, LedgerError> {
        if self.approvals.check_id(id).is_err() {
            return Ok(ApprovalCheck::Refused(RefusalCode::NotFound, None));
        }
        self.approvals.locked(|| {
            let Some(mut approval) = self.approvals.get::<Approval>(id)? else {
                return Ok(ApprovalCheck::Refused(RefusalCode::NotFound, None));
            };
            if approval.tenant != who.tenant() {
                return Ok(ApprovalCheck::Refused(RefusalCode::OtherTenant, None));
            }
            self.expire_if_due(&mut approval)?;
            if let Err(code) = check(&approval) {
                return Ok(ApprovalCheck::Refused(code, Some(approval)));
            }
            approval.status = ApprovalStatus::Used;
            approval.used_by = Some(request_id.to_string());
            approval.used_at = Some(format_rfc3339(now_ms()));
            self.audit_approval(
                ApprovalAction::Consumed,
                &approval,
                who,
                Some(request_id),
                None,
            )?;
            self.approvals.put(id, &approval)?;
            Ok(ApprovalCheck::Accepted(approval))
        })?
    }

    /// Called with the store locked.
    fn expire_if_due(&self, approval: &mut Approval) -> Result<(), LedgerError> {
        if approval.is_due(now_ms()) {
            approval.status = ApprovalStatus::Expired;
            let airlock = Caller::airlock();
            self.audit_approval(ApprovalAction::Expired, approval, &airlock, None, None)?;
            self.approvals.put(&approval.id, approval)?;
        }
        Ok(())
    }

    fn audit_approval(
        &self,
        action: ApprovalAction,
        approval: &Approval,
        who: &Caller,
        request_id: Option<&str>,
        note: Option<String>,
    ) -> Result<Record, LedgerError> {
        Ok(self.audit.append(Event::Approval(ApprovalEvent {
            action,
            approval_id: approval.id.clone(),
            request_id: request_id.map(str::to_string),
            who: who.clone(),
            tenant: approval.tenant.clone(),
            request: approval.request.clone(),
            policy_sha256: approval.policy_sha256.clone(),
            reasons: approval.reasons.clone(),
            expires_at: approval.expires_at.clone(),
            note,
        }))?)
    }

    // ---- grants ----

    pub fn create_grant(&self, who: &Caller, request: GrantRequest) -> Result<Grant, LedgerError> {
        request.validate()?;
        let now = now_ms();
        let expires = now + request.ttl.as_millis() as u64;
        let grant = Grant {
            id: random_id("gr"),
            boundary: request.boundary,
            tenant: request.tenant,
            policy_sha256: request.policy_sha256.to_ascii_lowercase(),
            for_prefix: request
                .for_prefix
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            created_by: who.clone(),
            created_at: format_rfc3339(now),
            expires_at: format_rfc3339(expires),
            expires_at_ms: expires,
            max_uses: request.max_uses,
            uses: 0,
            revoked: None,
        };
        self.grants.locked(|| {
            self.audit_grant(GrantAction::Created, &grant, who, None)?;
            self.grants.put(&grant.id, &grant)?;
            Ok::<_, LedgerError>(())
        })??;
        Ok(grant)
    }

    pub fn grants(&self) -> Result<Vec<Grant>, LedgerError> {
        Ok(self.grants.list()?)
    }

    pub fn revoke_grant(&self, id: &str, who: &Caller) -> Result<Grant, LedgerError> {
        self.grants.check_id(id)?;
        self.grants.locked(|| {
            let mut grant: Grant = self
                .grants
                .get(id)?
                .ok_or_else(|| LedgerError::GrantNotFound(id.to_string()))?;
            if grant.revoked.is_some() {
                return Err(GrantError::NotActive {
                    id: id.to_string(),
                    state: "already revoked",
                }
                .into());
            }
            grant.revoked = Some(Revocation {
                by: who.clone(),
                at: format_rfc3339(now_ms()),
            });
            self.audit_grant(GrantAction::Revoked, &grant, who, None)?;
            self.grants.put(id, &grant)?;
            Ok(grant)
        })?
    }

    /// Active grants of this tenant, made for this policy, that cover this
    /// decision (nothing is spent).
    pub fn covering_grants(
        &self,
        tenant: &TenantId,
        policy_sha256: &str,
        decision: &Decision,
    ) -> Result<Vec<Grant>, LedgerError> {
        let now = now_ms();
        Ok(self
            .grants()?
            .into_iter()
            .filter(|g| {
                g.state(now) == GrantState::Active && g.covers(tenant, policy_sha256, decision)
            })
            .collect())
    }

    /// Spend one use of each grant for a request that is about to run loosened.
    /// All or nothing: if one was revoked, expired or used up meanwhile, none is
    /// spent and the error names it.
    pub fn spend_grants(
        &self,
        ids: &[String],
        who: &Caller,
        request_id: &str,
    ) -> Result<Vec<Grant>, LedgerError> {
        if ids.is_empty() {
            return Ok(vec![]);
        }
        self.grants.locked(|| {
            let now = now_ms();
            let mut grants = Vec::new();
            for id in ids {
                let grant: Grant = self
                    .grants
                    .get(id)?
                    .ok_or_else(|| LedgerError::GrantNotFound(id.clone()))?;
                let state = grant.state(now);
                if state != GrantState::Active {
                    return Err(GrantError::NotActive {
                        id: id.clone(),
                        state: state.as_str(),
                    }
                    .into());
                }
                grants.push(grant);
            }
            for grant in grants.iter_mut() {
                grant.uses += 1;
                self.audit_grant(GrantAction::Used, grant, who, Some(request_id))?;
                self.grants.put(&grant.id, grant)?;
            }
            Ok(grants)
        })?
    }

    fn audit_grant(
        &self,
        action: GrantAction,
        grant: &Grant,
        who: &Caller,
        request_id: Option<&str>,
    ) -> Result<Record, LedgerError> {
        Ok(self.audit.append(Event::Grant(GrantEvent {
            action,
            grant_id: grant.id.clone(),
            who: who.clone(),
            tenant: grant.tenant.clone(),
            grant: grant.clone(),
            request_id: request_id.map(str::to_string),
        }))?)
    }
}
