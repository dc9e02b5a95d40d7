//! `decide`: the flowchart of DESIGN.md §3 applied to every segment of a request.

use crate::rules::{prefix_matches, ArgvShape};
use crate::{Command, Decision, Policy, Request, SegmentDecision, Step, Verdict};

/// Judge a request. Pure: starts nothing, writes nothing.
pub fn decide(policy: &Policy, request: &Request) -> Decision {
    let argvs = match &request.command {
        Command::Argv { argv } => vec![argv.clone()],
        Command::Shell { command } => match crate::shell::example_argvs(command) {
            Ok(a) => a,
            Err(e) => return input_decision(policy, policy.commands.on_unknown, e),
        },
        Command::Code { language, source } => {
            vec![vec![language.clone(), "-c".into(), source.clone()]]
        }
    };
    let segments: Vec<SegmentDecision> = argvs.into_iter().map(|a| judge_argv(policy, a)).collect();
    let worst = segments.iter().max_by_key(|s| s.decision).cloned();
    match worst {
        Some(w) => Decision {
            decision: w.decision,
            reason: w.reason.clone(),
            rule: w.rule.clone(),
            step: w.step,
            segments,
            policy_sha256: policy.sha256.clone(),
            loosened_by: vec![],
        },
        None => input_decision(policy, Verdict::Deny, "the command is empty".into()),
    }
}

fn input_decision(policy: &Policy, verdict: Verdict, reason: String) -> Decision {
    Decision {
        decision: verdict,
        reason,
        rule: None,
        step: Step::Input,
        segments: vec![],
        policy_sha256: policy.sha256.clone(),
        loosened_by: vec![],
    }
}

fn judge_argv(policy: &Policy, argv: Vec<String>) -> SegmentDecision {
    let Some(shape) = ArgvShape::new(&argv) else {
        return SegmentDecision {
            argv,
            decision: Verdict::Deny,
            reason: "empty command".into(),
            rule: None,
            step: Step::Input,
        };
    };
    let mut best: Option<&crate::Rule> = None;
    for rule in &policy.commands.rules {
        if prefix_matches(&rule.prefix, &shape) && best.is_none_or(|b| rule.decision > b.decision) {
            best = Some(rule);
        }
    }
    let (decision, reason, rule, step) = match best {
        Some(r) => (
            r.decision,
            r.reason
                .clone()
                .unwrap_or_else(|| format!("`{}` matches {}", shape.program, r.name)),
            Some(r.name.clone()),
            if r.decision == Verdict::ApprovalRequired {
                Step::Approval
            } else {
                Step::Allowlist
            },
        ),
        None => (
            Verdict::Deny,
            format!("`{}` is not on this policy's allowlist", shape.program),
            None,
            Step::Allowlist,
        ),
    };
    SegmentDecision {
        argv,
        decision,
        reason,
        rule,
        step,
    }
}
