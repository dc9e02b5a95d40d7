//! Pending approvals: a request the gate answered `approval_required` for, waiting
//! for a person. An approval is tied to the tenant that asked, the exact command,
//! cwd, stdin and policy hash it was asked for, expires, and runs once.

use crate::audit::record::RequestRecord;
use crate::{Caller, TenantId};
use serde::{Deserialize, Serialize};

/// Default time a person has to answer.
pub const DEFAULT_TTL: std::time::Duration = std::time::Duration::from_secs(15 * 60);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    Pending,
    Approved,
    Denied,
    Expired,
    /// Approved and run: spent.
    Used,
}

impl ApprovalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Denied => "denied",
            ApprovalStatus::Expired => "expired",
            ApprovalStatus::Used => "used",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approval {
    pub id: String,
    pub status: ApprovalStatus,
    /// The exact request: only this command, in this cwd, may use the approval.
    pub request: RequestRecord,
    /// Only under this policy (a changed policy file needs a new approval).
    pub policy_sha256: String,
    pub policy_source: String,
    /// Why the gate asked, one line per segment that needed approval.
    pub reasons: Vec<String>,
    pub requested_by: Caller,
    /// The tenant that asked: only it may run under the approval, and only
    /// approvers configured for it may see and answer it.
    #[serde(default)]
    pub tenant: TenantId,
    /// The request that created the approval.
    pub request_id: String,
    /// What the workspace files the command runs (its program, its script)
    /// held when the approval was asked for: a run under the approval refuses
    /// if any of them changed since.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<crate::content::ContentPin>,
    /// The stdin the command was asked with: a run under the approval must
    /// send the same bytes. None is no stdin (or an empty one), which is also
    /// what an approval stored before stdin was pinned holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<StdinPin>,
    /// For the apply of a kept change set (not a command): the set it covers.
    /// Such an approval can apply exactly that set and never run a command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_set: Option<ChangeSetPin>,
    pub created_at: String,
    pub expires_at: String,
    pub expires_at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<Caller>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The request that ran under the approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_at: Option<String>,
}

/// The change set an apply approval covers: a person sees these lines and
/// approves that exact set (its hash), not whatever the kept copy holds later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeSetPin {
    /// The run whose kept change set this is.
    pub run_id: String,
    /// The set's hash (every change's path, type, mode, link target, content hash).
    pub sha256: String,
    /// One escaped line per change, the first ones, then "… and N more".
    pub changes: Vec<String>,
}

/// What an approval holds of the command's stdin: its hash and length bind
/// the approval to those exact bytes; the preview is for the person deciding
/// (what `xargs rm -rf` reads matters as much as the command).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StdinPin {
    /// `sha256:<hex>` of the bytes.
    pub sha256: String,
    pub bytes: u64,
    /// The first [`STDIN_PREVIEW_BYTES`] bytes as text (invalid UTF-8 as
    /// U+FFFD); shown escaped. The hash, not the preview, is what is compared.
    pub preview: String,
    /// Whether the preview holds only the start of the bytes.
    #[serde(default)]
    pub preview_truncated: bool,
}

/// How much of an approval's stdin is kept for the person to read.
pub const STDIN_PREVIEW_BYTES: usize = 1024;

impl StdinPin {
    /// "no stdin", or its size and the start of its hash, for a refusal's
    /// message.
    pub fn describe(pin: Option<&StdinPin>) -> String {
        match pin {
            None => "no stdin".into(),
            Some(p) => {
                let hash = p.sha256.get(..7 + 12).unwrap_or(&p.sha256);
                format!("{} bytes of stdin ({hash}…)", p.bytes)
            }
        }
    }

    /// The pin for `stdin`; none for no stdin or an empty one (the command
    /// reads nothing either way).
    pub fn of(stdin: Option<&[u8]>) -> Option<StdinPin> {
        use sha2::{Digest, Sha256};
        let bytes = stdin.filter(|b| !b.is_empty())?;
        let digest = Sha256::digest(bytes);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        let head = &bytes[..bytes.len().min(STDIN_PREVIEW_BYTES)];
        Some(StdinPin {
            sha256: format!("sha256:{hex}"),
            bytes: bytes.len() as u64,
            preview: String::from_utf8_lossy(head).into_owned(),
            preview_truncated: head.len() < bytes.len(),
        })
    }

    /// Whether `other` pins the same bytes.
    fn same(this: Option<&StdinPin>, other: Option<&StdinPin>) -> bool {
        match (this, other) {
            (None, None) => true,
            (Some(a), Some(b)) => a.sha256 == b.sha256 && a.bytes == b.bytes,
            _ => false,
        }
    }
}

impl Approval {
    pub fn is_due(&self, now_ms: u64) -> bool {
        matches!(
            self.status,
            ApprovalStatus::Pending | ApprovalStatus::Approved
        ) && now_ms >= self.expires_at_ms
    }
}

/// Why an approval could not be used. Each has its own code, for a program, and
/// its own message, for a person or a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalCode {
    NotFound,
    Pending,
    Denied,
    Replayed,
    Expired,
    CommandChanged,
    CwdChanged,
    PolicyChanged,
    /// `--wait-approval` gave up before anyone answered.
    Timeout,
    /// Another tenant asked for it: an approval is usable only by its own.
    OtherTenant,
    /// A file the command runs (its program or script) changed since the
    /// approval was asked for.
    ContentChanged,
    /// An apply approval presented for a command, a command approval for an
    /// apply, or an apply approval for another run's change set.
    WrongKind,
    /// The kept change set is no longer the one the person approved.
    ChangeSetChanged,
    /// The request's stdin is not the one the approval was asked with.
    StdinChanged,
}

impl RefusalCode {
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalCode::NotFound => "not_found",
            RefusalCode::Pending => "pending",
            RefusalCode::Denied => "denied",
            RefusalCode::Replayed => "replayed",
            RefusalCode::Expired => "expired",
            RefusalCode::CommandChanged => "command_changed",
            RefusalCode::CwdChanged => "cwd_changed",
            RefusalCode::PolicyChanged => "policy_changed",
            RefusalCode::Timeout => "timeout",
            RefusalCode::OtherTenant => "other_tenant",
            RefusalCode::ContentChanged => "content_changed",
            RefusalCode::WrongKind => "wrong_kind",
            RefusalCode::ChangeSetChanged => "change_set_changed",
            RefusalCode::StdinChanged => "stdin_changed",
        }
    }

    pub fn message(self, id: &str) -> String {
        match self {
            RefusalCode::NotFound => format!("approval {id} does not exist"),
            RefusalCode::Pending => {
                format!("approval {id} is still pending: nobody has approved it yet")
            }
            RefusalCode::Denied => format!("approval {id} was denied"),
            RefusalCode::Replayed => {
                format!("approval {id} was already used: an approval runs once")
            }
            RefusalCode::Expired => format!("approval {id} has expired"),
            RefusalCode::CommandChanged => {
                format!("approval {id} was given for a different command; an approval covers only the exact command it was asked for")
            }
            RefusalCode::CwdChanged => {
                format!("approval {id} was given for a different working directory")
            }
            RefusalCode::PolicyChanged => {
                format!("approval {id} was given under a different policy (its SHA-256 changed); ask again")
            }
            RefusalCode::Timeout => {
                format!("approval {id} was not answered in time; it stays pending")
            }
            RefusalCode::OtherTenant => format!(
                "approval {id} was asked for by another tenant; an approval runs only for the caller that asked for it (ask for your own)"
            ),
            RefusalCode::ContentChanged => format!(
                "a file the command runs changed since approval {id} was given; ask again"
            ),
            RefusalCode::WrongKind => format!(
                "approval {id} covers something else: an approval of a change set applies only that run's set and never runs a command, and a command's approval never applies a change set"
            ),
            RefusalCode::ChangeSetChanged => format!(
                "the kept change set is not the one approval {id} was given for (its content hash changed); review it again with `airlock changes RUN_ID`"
            ),
            RefusalCode::StdinChanged => format!(
                "approval {id} was given for the command with other stdin: an approval covers the exact stdin it was asked with (compared by SHA-256 and length; no stdin and empty stdin are the same); send that stdin, or ask again with this one (run without the approval id)"
            ),
        }
    }

    /// The message, naming the changed file when the code is `ContentChanged`
    /// and both stdins (size and hash) when it is `StdinChanged`.
    pub fn message_for(
        self,
        id: &str,
        approval: Option<&Approval>,
        presented: &Presented<'_>,
    ) -> String {
        if self == RefusalCode::StdinChanged {
            if let Some(approval) = approval {
                return format!(
                    "approval {id} was given for the command with {}, and this request sends {}: an approval covers the exact stdin it was asked with; send that stdin, or ask again with this one (run without the approval id)",
                    StdinPin::describe(approval.stdin.as_ref()),
                    StdinPin::describe(presented.stdin),
                );
            }
        }
        if self == RefusalCode::ContentChanged {
            if let Some(pin) =
                approval.and_then(|a| crate::content::first_change(&a.content, presented.content))
            {
                let name = approval
                    .and_then(|a| pin.path.strip_prefix(a.request.cwd.as_path()).ok())
                    .unwrap_or(pin.path.as_path());
                return format!(
                    "{} changed since it was approved (approval {id} covers the content it had then); ask again",
                    name.display()
                );
            }
        }
        self.message(id)
    }
}

/// What every use of an approval needs first: it is `tenant`'s (checked first,
/// so another tenant learns nothing of its state) and approved, not pending,
/// denied, used or expired.
fn check_spendable(approval: &Approval, tenant: &TenantId) -> Result<(), RefusalCode> {
    if approval.tenant != *tenant || tenant.is_unknown() {
        return Err(RefusalCode::OtherTenant);
    }
    match approval.status {
        ApprovalStatus::Pending => return Err(RefusalCode::Pending),
        ApprovalStatus::Denied => return Err(RefusalCode::Denied),
        ApprovalStatus::Used => return Err(RefusalCode::Replayed),
        ApprovalStatus::Expired => return Err(RefusalCode::Expired),
        ApprovalStatus::Approved => {}
    }
    Ok(())
}

/// What a request presents when it spends an approval, to be compared with
/// what the approval was asked with.
#[derive(Debug, Clone, Copy)]
pub struct Presented<'a> {
    pub request: &'a RequestRecord,
    pub stdin: Option<&'a StdinPin>,
    pub policy_sha256: &'a str,
    /// What the files the command runs hold now.
    pub content: &'a [crate::content::ContentPin],
}

/// Whether `tenant` may run what it `presented` with `approval`, ignoring
/// expiry (checked by the ledger, which also records it). The tenant is
/// checked first: another tenant learns nothing of its state.
pub fn check_use(
    approval: &Approval,
    tenant: &TenantId,
    presented: &Presented<'_>,
) -> Result<(), RefusalCode> {
    check_spendable(approval, tenant)?;
    if approval.change_set.is_some() {
        return Err(RefusalCode::WrongKind);
    }
    if approval.request.command != presented.request.command {
        return Err(RefusalCode::CommandChanged);
    }
    if approval.request.cwd != presented.request.cwd {
        return Err(RefusalCode::CwdChanged);
    }
    if !StdinPin::same(approval.stdin.as_ref(), presented.stdin) {
        return Err(RefusalCode::StdinChanged);
    }
    if approval.policy_sha256 != presented.policy_sha256 {
        return Err(RefusalCode::PolicyChanged);
    }
    if crate::content::first_change(&approval.content, presented.content).is_some() {
        return Err(RefusalCode::ContentChanged);
    }
    Ok(())
}

/// Whether `tenant` may apply the kept change set of `run_id`, whose hash is
/// now `set_sha256`, under the policy `policy_sha256` with `approval`.
pub fn check_apply(
    approval: &Approval,
    tenant: &TenantId,
    run_id: &str,
    set_sha256: &str,
    policy_sha256: &str,
) -> Result<(), RefusalCode> {
    check_spendable(approval, tenant)?;
    let Some(pin) = &approval.change_set else {
        return Err(RefusalCode::WrongKind);
    };
    if pin.run_id != run_id {
        return Err(RefusalCode::WrongKind);
    }
    if approval.policy_sha256 != policy_sha256 {
        return Err(RefusalCode::PolicyChanged);
    }
    if pin.sha256 != set_sha256 {
        return Err(RefusalCode::ChangeSetChanged);
    }
    Ok(())
}
