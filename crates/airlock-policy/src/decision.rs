//! What the gate answers.

use serde::{Deserialize, Serialize};

/// The three answers, ordered by strictness so that `max()` picks the strictest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Allow,
    ApprovalRequired,
    Deny,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::ApprovalRequired => "approval_required",
            Verdict::Deny => "deny",
        }
    }
}

/// Which step of the flowchart (DESIGN.md §3) decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// The input itself: empty, not UTF-8, too long, too deep, or not analysable.
    Input,
    /// Step 1: the workspace boundary.
    Workspace,
    /// Step 2: the network mode.
    Network,
    /// Step 3: approval prefixes.
    Approval,
    /// Step 4: the allowlist (and the deny list).
    Allowlist,
}

/// The judgement of one simple command inside a (possibly compound) request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentDecision {
    /// The argv after quote removal and wrapper unwrapping, as judged.
    pub argv: Vec<String>,
    /// The argv in the normalised form the rules and the knowledge base
    /// matched (`rm -Rf x` is `rm -r -f x`; `--rec` is `--recursive`; an
    /// option's value follows it). Empty when it equals `argv`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub normalized: Vec<String>,
    pub decision: Verdict,
    pub reason: String,
    pub rule: Option<String>,
    pub step: Step,
}

/// The gate's answer for a whole request: the strictest of its segments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub decision: Verdict,
    /// One line, written for a model to read and act on.
    pub reason: String,
    pub rule: Option<String>,
    pub step: Step,
    pub segments: Vec<SegmentDecision>,
    pub policy_sha256: String,
    /// Grant ids that loosened this decision, if any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loosened_by: Vec<String>,
}
