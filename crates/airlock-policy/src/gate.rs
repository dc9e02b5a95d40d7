//! `decide`: the flowchart of DESIGN.md §3 applied to every segment of a request.

use crate::{Decision, Policy, Request, Step, Verdict};

/// Judge a request. Pure: starts nothing, writes nothing.
pub fn decide(policy: &Policy, _request: &Request) -> Decision {
    // Placeholder until the analysis lands: fail closed.
    Decision {
        decision: Verdict::Deny,
        reason: "the policy gate is not implemented yet".into(),
        rule: None,
        step: Step::Input,
        segments: vec![],
        policy_sha256: policy.sha256.clone(),
        loosened_by: vec![],
    }
}
