//! `decide`: the flowchart of DESIGN.md §3 applied to every segment of a request.
//!
//! For each simple command:
//! 0. can it be known at all (else `on_unknown`)?
//! 1. does everything stay inside the workspace?
//! 2. does it reach the network while the policy forbids it?
//! 3. does an approval prefix match?
//! 4. is it allowlisted (and not on the deny list)?
//!
//! The strictest segment decides.

use crate::knowledge::{normalize, Action, Finding, Kb, Normalized, Word};
use crate::network::{host_matches, named_hosts, touches_network_shaped};
use crate::paths::{system_program, Boundary};
use crate::rules::{prefix_matches, ArgvShape, RuleIndex};
use crate::shell::{self, Access, Analysis, Context, Cwd, Segment};
use crate::{
    Command, Decision, NetworkMode, Policy, Request, Rule, SegmentDecision, Step, Verdict,
};
use std::path::Path;

mod links;

/// One line of an explanation: what a step found for a segment.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TraceEntry {
    pub step: Step,
    /// `pass`, or the verdict the step gave.
    pub outcome: String,
    pub detail: String,
}

/// A decision with, for every segment, the trace through the steps.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Explanation {
    pub decision: Decision,
    pub traces: Vec<Vec<TraceEntry>>,
}

/// Judge a request. Pure: starts nothing, writes nothing (it reads the
/// filesystem only to resolve symlinks at the workspace boundary).
/// What a path the knowledge base's config files or the return path's
/// default approval list name is, in a reason.
const CONFIGURES_PROGRAMS: &str =
    "a file that configures programs (it can make git, a shell or a package manager run commands)";

/// What a path the policy's own `[changes] approval` names is, in a reason.
const HELD_BY_POLICY: &str = "a path this policy's [changes] approval holds for a person";

pub fn decide(policy: &Policy, request: &Request) -> Decision {
    run(policy, request, false).decision
}

/// Judge a request and keep the trace of every step for every segment.
pub fn explain(policy: &Policy, request: &Request) -> Explanation {
    run(policy, request, true)
}

/// Judge raw bytes as a shell command (the CLI and API may receive non-UTF-8).
pub fn decide_shell_bytes(policy: &Policy, bytes: &[u8], cwd: &Path) -> Decision {
    match std::str::from_utf8(bytes) {
        Ok(text) => decide(
            policy,
            &Request {
                command: Command::Shell {
                    command: text.to_string(),
                },
                cwd: cwd.to_path_buf(),
                loosening: Default::default(),
            },
        ),
        Err(e) => whole(
            policy,
            Verdict::Deny,
            Step::Input,
            format!(
                "the command is not valid UTF-8 (at byte {}); send text",
                e.valid_up_to()
            ),
        ),
    }
}

/// A decision for input that cannot even be looked at (not UTF-8, …): deny.
pub fn reject(policy: &Policy, reason: String) -> Decision {
    whole(policy, Verdict::Deny, Step::Input, reason)
}

fn whole(policy: &Policy, verdict: Verdict, step: Step, reason: String) -> Decision {
    Decision {
        decision: verdict,
        reason,
        rule: None,
        step,
        segments: vec![],
        policy_sha256: policy.sha256.clone(),
        loosened_by: vec![],
    }
}

fn run(policy: &Policy, request: &Request, trace: bool) -> Explanation {
    let early = |verdict, reason: String| Explanation {
        decision: whole(policy, verdict, Step::Input, reason),
        traces: vec![],
    };
    let home = policy
        .env
        .set
        .iter()
        .rev()
        .find(|(k, _)| k == "HOME")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| policy.workspace.root.display().to_string());
    let ctx = Context {
        cwd: request.cwd.clone(),
        home,
        knowledge: policy.knowledge.0.clone(),
    };
    let max = policy.commands.max_command_bytes;
    let analysis = match &request.command {
        Command::Shell { command } => {
            if command.len() > max {
                return early(
                    Verdict::Deny,
                    format!(
                        "the command is too long ({} bytes; this policy accepts at most {max})",
                        command.len()
                    ),
                );
            }
            if command.trim().is_empty() {
                return early(Verdict::Deny, "the command is empty".into());
            }
            if command.contains('\0') {
                return early(Verdict::Deny, "the command contains a NUL byte".into());
            }
            if let Some(c) = shell::hazards::control_character(command) {
                return early(
                    Verdict::Deny,
                    format!(
                        "the command contains the control character U+{:04X}; send plain text (tabs and newlines are fine)",
                        c as u32
                    ),
                );
            }
            shell::analyze(command, &ctx)
        }
        Command::Argv { argv } => {
            let total: usize = argv.iter().map(|a| a.len() + 1).sum();
            if total > max {
                return early(
                    Verdict::Deny,
                    format!("the command is too long ({total} bytes; this policy accepts at most {max})"),
                );
            }
            if argv.first().is_none_or(|a| a.is_empty()) {
                return early(Verdict::Deny, "the command is empty".into());
            }
            if argv.iter().any(|a| a.contains('\0')) {
                return early(Verdict::Deny, "an argument contains a NUL byte".into());
            }
            shell::analyze_argv(argv, &ctx)
        }
        Command::Code { language, source } => {
            if source.len() > max {
                return early(
                    Verdict::Deny,
                    format!(
                        "the code is too long ({} bytes; this policy accepts at most {max})",
                        source.len()
                    ),
                );
            }
            match language.as_str() {
                "sh" | "bash" | "shell" => shell::analyze(source, &ctx),
                _ => {
                    // Code for an interpreter is judged as running that interpreter:
                    // its text is data the gate does not interpret.
                    let interpreter = match language.as_str() {
                        "python" | "python3" => "python3",
                        other => other,
                    };
                    shell::analyze_argv(
                        &[interpreter.to_string(), "-c".into(), source.clone()],
                        &ctx,
                    )
                }
            }
        }
    };
    judge_analysis(policy, request, analysis, trace)
}

fn judge_analysis(
    policy: &Policy,
    request: &Request,
    analysis: Analysis,
    trace: bool,
) -> Explanation {
    let on_unknown = policy.commands.on_unknown;
    if let Some(why) = analysis.unknown {
        let decision = whole(
            policy,
            on_unknown,
            Step::Input,
            format!(
                "{why}; what cannot be analysed gets `{}`",
                on_unknown.as_str()
            ),
        );
        return Explanation {
            decision,
            traces: vec![],
        };
    }
    let read = (policy.filesystem.read.iter())
        .chain(&request.loosening.read_paths)
        .map(std::path::PathBuf::as_path)
        .collect();
    let write = (policy.filesystem.write.iter())
        .chain(&request.loosening.write_paths)
        .map(std::path::PathBuf::as_path)
        .collect();
    let boundary = Boundary::new(
        &policy.workspace.root,
        read,
        write,
        &policy.workspace.protect,
    );
    let links = links::LineLinks::new(&analysis.segments, &boundary, Kb::new(&policy.knowledge.0));
    // Building the index costs about as much as a few scans of the rules.
    let index = (analysis.segments.len() > 4).then(|| RuleIndex::new(&policy.commands.rules));
    let judge = Judge {
        policy,
        boundary,
        extra_hosts: &request.loosening.network_hosts,
        index,
        shown_prefixes: Default::default(),
        links,
        bare_repos: bare_repositories(&analysis.segments),
    };
    let mut segments = Vec::with_capacity(analysis.segments.len());
    let mut traces = Vec::new();
    for (at, seg) in analysis.segments.iter().enumerate() {
        let mut t = Vec::new();
        let d = judge.segment(at, seg, if trace { Some(&mut t) } else { None });
        segments.push(d);
        if trace {
            traces.push(t);
        }
    }
    let worst = segments
        .iter()
        .enumerate()
        .max_by(|(ia, a), (ib, b)| a.decision.cmp(&b.decision).then(ib.cmp(ia)))
        .map(|(_, s)| s.clone());
    let allowed_all = segments.len() > 1 && segments.iter().all(|s| s.decision == Verdict::Allow);
    let decision = match worst {
        Some(w) => Decision {
            decision: w.decision,
            reason: if allowed_all {
                format!(
                    "all {} commands are allowed; the first: {}",
                    segments.len(),
                    w.reason
                )
            } else {
                w.reason
            },
            rule: w.rule,
            step: w.step,
            segments,
            policy_sha256: policy.sha256.clone(),
            loosened_by: request.loosening.grant_ids.clone(),
        },
        None => whole(
            policy,
            Verdict::Deny,
            Step::Input,
            "the command runs nothing".into(),
        ),
    };
    Explanation { decision, traces }
}

struct Judge<'p> {
    policy: &'p Policy,
    boundary: Boundary<'p>,
    extra_hosts: &'p [String],
    /// Rules by program, for requests with many segments.
    index: Option<RuleIndex<'p>>,
    /// See [`Judge::shown_prefix`].
    shown_prefixes: std::cell::RefCell<Vec<(&'p Rule, std::rc::Rc<str>)>>,
    /// The symlinks the line makes, which the host does not show yet.
    links: links::LineLinks,
    /// Directories the line makes bare repositories (`git init --bare DIR`):
    /// git run there obeys their `config` and `hooks/`.
    bare_repos: Vec<std::path::PathBuf>,
}

/// The directories `git init --bare`, `git clone --bare`/`--mirror` (or
/// either with `--separate-git-dir`) make git directories, from each
/// working directory the segment may run in. Every operand counts (the
/// gate does not tell a clone's URL from its directory), and a clone's
/// default name too.
fn bare_repositories(segments: &[Segment]) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for seg in segments {
        if seg.argv.first().map(|p| crate::rules::program_name(p)) != Some("git") {
            continue;
        }
        let Cwd::Known(cwds) = &seg.cwd else {
            continue;
        };
        let mut bases: Vec<std::path::PathBuf> = cwds.clone();
        let mut i = 1;
        while let Some(a) = seg.argv.get(i) {
            if a == "-C" {
                if let Some(d) = seg.argv.get(i + 1) {
                    bases = bases.iter().map(|b| b.join(d)).collect();
                }
                i += 2;
            } else if matches!(
                a.as_str(),
                "-c" | "--git-dir" | "--work-tree" | "--namespace"
            ) {
                i += 2;
            } else if a.starts_with('-') {
                i += 1;
            } else {
                break;
            }
        }
        let Some(sub) = seg.argv.get(i).map(String::as_str) else {
            continue;
        };
        if !matches!(sub, "init" | "clone") {
            continue;
        }
        let rest = &seg.argv[i + 1..];
        let bare = rest.iter().any(|a| {
            matches!(a.as_str(), "--bare" | "--mirror") || a.starts_with("--separate-git-dir")
        });
        if !bare {
            continue;
        }
        let mut dirs: Vec<String> = Vec::new();
        for (k, a) in rest.iter().enumerate() {
            if let Some(v) = a.strip_prefix("--separate-git-dir=") {
                dirs.push(v.to_string());
            } else if !a.starts_with('-') {
                dirs.push(a.clone());
            } else if a == "--separate-git-dir" {
                dirs.extend(rest.get(k + 1).cloned());
            }
        }
        if sub == "clone" {
            // `git clone --bare URL` makes `NAME.git` from the URL's last part.
            let names: Vec<String> = dirs
                .iter()
                .filter_map(|u| {
                    let last = u.trim_end_matches('/').rsplit(['/', ':']).next()?;
                    let name = last.trim_end_matches(".git");
                    (!name.is_empty()).then(|| [name.to_string(), format!("{name}.git")])
                })
                .flatten()
                .collect();
            dirs.extend(names);
        }
        if dirs.is_empty() {
            dirs.push(".".into());
        }
        for b in &bases {
            for d in &dirs {
                out.push(crate::load::absolute_lexical(&b.join(d)));
            }
        }
    }
    out
}

/// The trace of one segment, when asked for; its details are only built then.
struct Notes<'t>(Option<&'t mut Vec<TraceEntry>>);

impl Notes<'_> {
    fn add(&mut self, step: Step, outcome: &str, detail: impl FnOnce() -> String) {
        if let Some(t) = self.0.as_deref_mut() {
            t.push(TraceEntry {
                step,
                outcome: outcome.to_string(),
                detail: detail(),
            });
        }
    }
}

/// What a step concluded.
struct Found {
    verdict: Verdict,
    step: Step,
    reason: String,
    rule: Option<String>,
}

fn display_argv(argv: &[String]) -> String {
    shell::words::short(&argv.join(" "))
}

impl<'p> Judge<'p> {
    fn kb(&self) -> Kb<'p> {
        Kb::of(self.policy)
    }

    fn held_by_policy_list(&self, pattern: &str) -> bool {
        self.policy.changes.approval.iter().any(|p| p == pattern)
    }

    /// What a path held by `pattern` ([`Kb::config_file`]) is, for a reason,
    /// and the rule that held it.
    fn held(&self, pattern: &str) -> (&'static str, String) {
        if self.held_by_policy_list(pattern) {
            (HELD_BY_POLICY, format!("policy:changes.approval {pattern}"))
        } else {
            (
                CONFIGURES_PROGRAMS,
                format!("knowledge:config_files {pattern}"),
            )
        }
    }

    /// What the knowledge base found, over what the rules decided: a finding
    /// stricter than the rule's verdict decides, naming the option and the entry.
    fn knowledge_findings(&self, seg: &Segment, found: Found, notes: &mut Notes<'_>) -> Found {
        let on_unknown = self.policy.commands.on_unknown;
        let mut best = found;
        let mut deciding = None;
        let config = self.config_file_write(seg);
        let findings: Vec<&Finding> = seg.findings.iter().chain(&config).collect();
        let verdict_of = |f: &Finding| match f.action {
            Action::Judge => None,
            Action::ApprovalRequired => Some(Verdict::ApprovalRequired),
            Action::Deny => Some(Verdict::Deny),
            Action::OnUnknown => Some(on_unknown),
        };
        for (i, f) in findings.iter().enumerate() {
            let Some(verdict) = verdict_of(f) else {
                continue;
            };
            if verdict > best.verdict {
                deciding = Some(i);
                let what = match f.action {
                    Action::ApprovalRequired => "; a human must approve it".to_string(),
                    Action::OnUnknown => format!(
                        "; what the gate cannot judge gets `{}`",
                        on_unknown.as_str()
                    ),
                    _ => String::new(),
                };
                best = Found {
                    verdict,
                    step: if verdict == Verdict::ApprovalRequired {
                        Step::Approval
                    } else {
                        Step::Allowlist
                    },
                    reason: format!("{}{what}", f.sentence()),
                    rule: Some(format!("knowledge:{}", f.entry)),
                };
            }
        }
        // The deciding finding is the step's own line; the others are shown
        // once each, so a reader sees every entry that matched.
        for (i, f) in findings.iter().enumerate() {
            let Some(verdict) = verdict_of(f) else {
                continue;
            };
            if Some(i) != deciding {
                notes.add(Step::Approval, verdict.as_str(), || {
                    format!("finding: {}", f.sentence())
                });
            }
        }
        best
    }

    /// A write to a file that configures programs (`> ~/.gitconfig`), named
    /// in the knowledge base's `config_files`.
    fn config_file_write(&self, seg: &Segment) -> Option<Finding> {
        let kb = self.kb();
        // A pattern (`> .npmr?`) is judged as each name it matches in each
        // working directory the segment may run in.
        let matched = |text: &str| -> Option<(String, &str)> {
            if !seg.glob_args.iter().any(|g| g == text) {
                return None;
            }
            let crate::shell::Cwd::Known(dirs) = &seg.cwd else {
                return None;
            };
            dirs.iter()
                .flat_map(|d| glob_paths(d, text).unwrap_or_default())
                .find_map(|m| kb.config_file(&m).map(|p| (m, p)))
        };
        let found = |text: &str| {
            (kb.config_file(text).map(|p| (text.to_string(), p))).or_else(|| matched(text))
        };
        let mut hit = seg
            .paths
            .iter()
            .filter(|u| u.access == Access::Write)
            .find_map(|u| found(&u.text));
        if hit.is_none() && !seg.data_only && !seg.function_call && seg.argv.len() > 1 {
            let program = crate::rules::program_name(&seg.argv[0]);
            // Only sed and perl edit in place: the others need no reading of
            // their options here (this runs for every segment).
            let in_place = matches!(program, "sed" | "gsed" | "perl")
                && edits_in_place(program, Some(&normalize(&seg.argv, kb)));
            let access = arg_access(program, &seg.argv, in_place);
            hit = (1..seg.argv.len())
                .filter(|&i| access(i) == Access::Write && !seg.data_args.contains(&i))
                .find_map(|i| found(&seg.argv[i]));
        }
        let (text, pattern) = hit?;
        if self.held_by_policy_list(pattern) {
            return Some(Finding {
                action: Action::ApprovalRequired,
                entry: format!("[changes] approval {pattern:?}"),
                origin: self.policy.source.clone(),
                shown: text,
                kind: crate::knowledge::Kind::Config,
                reason: format!("is {HELD_BY_POLICY}; writing it"),
            });
        }
        Some(Finding {
            action: Action::ApprovalRequired,
            entry: format!("config_files {pattern}"),
            origin: crate::knowledge::BUILTIN_KNOWLEDGE_ORIGIN.into(),
            shown: text,
            kind: crate::knowledge::Kind::Config,
            reason: format!("is {CONFIGURES_PROGRAMS}; writing it"),
        })
    }

    fn segment(
        &self,
        at: usize,
        seg: &Segment,
        trace: Option<&mut Vec<TraceEntry>>,
    ) -> SegmentDecision {
        let found = self.steps(at, seg, &mut Notes(trace));
        SegmentDecision {
            argv: seg.argv.clone(),
            normalized: if seg.normalized.len() > 1 && seg.normalized != seg.argv {
                seg.normalized.clone()
            } else {
                Vec::new()
            },
            decision: found.verdict,
            reason: found.reason,
            rule: found.rule,
            step: found.step,
        }
    }

    /// `at`: the segment's place in the line.
    fn steps(&self, at: usize, seg: &Segment, notes: &mut Notes<'_>) -> Found {
        let policy = self.policy;
        let on_unknown = policy.commands.on_unknown;
        // Normalised and split once: the paths, the network step and the
        // rules all read it.
        let normalized = (!seg.argv.is_empty()).then(|| normalize(&seg.argv, self.kb()));
        let shape = normalized
            .as_ref()
            .map(|n| ArgvShape::from_normalized(&seg.argv[0], n));
        let program = shape.as_ref().map_or("", |s| s.program);

        // Step 0: can it be known?
        if let Some(why) = &seg.unknown {
            notes.add(Step::Input, on_unknown.as_str(), || why.clone());
            // A deny rule on what is visible still wins over approval.
            if on_unknown != Verdict::Deny {
                if let Some(f) = self.rule_match(seg, shape.as_ref()) {
                    if f.verdict == Verdict::Deny {
                        return f;
                    }
                }
            }
            return Found {
                verdict: on_unknown,
                step: Step::Input,
                reason: format!(
                    "{why}; the gate cannot know what it would do, so it gets `{}`",
                    on_unknown.as_str()
                ),
                rule: Some("commands.on_unknown".into()),
            };
        }
        notes.add(Step::Input, "pass", || {
            "every word is known before running".into()
        });

        // Step 1: the workspace boundary.
        let mut unknown_path: Option<String> = None;
        match &seg.cwd {
            Cwd::Unknown(why) => {
                let uses_paths = !seg.paths.is_empty() || (!seg.data_only && seg.argv.len() > 1);
                if uses_paths {
                    unknown_path = Some(format!(
                        "{why}, so the paths of `{}` cannot be checked",
                        display_argv(&seg.argv)
                    ));
                }
            }
            Cwd::Known(cwds) => {
                // A finding that needs approval in one cwd may be denied in
                // another: the strictest decides.
                let mut waiting: Option<Found> = None;
                for cwd in cwds {
                    if let Err(o) = self.boundary.check(cwd, ".", Access::Read) {
                        let reason = format!(
                            "the working directory {} is outside the workspace {}",
                            o.resolved.display(),
                            policy.workspace.root.display()
                        );
                        notes.add(Step::Workspace, "deny", || reason.clone());
                        return Found {
                            verdict: Verdict::Deny,
                            step: Step::Workspace,
                            reason,
                            rule: Some("workspace.root".into()),
                        };
                    }
                    if let Some(mut f) =
                        self.check_paths(at, seg, cwd, program, normalized.as_ref())
                    {
                        if cwds.len() > 1 {
                            f.reason.push_str(&one_of_cwds(cwd, cwds.len()));
                        }
                        if f.verdict == Verdict::Deny {
                            notes.add(Step::Workspace, "deny", || f.reason.clone());
                            return f;
                        }
                        waiting.get_or_insert(f);
                    }
                }
                if let Some(f) = waiting {
                    notes.add(Step::Workspace, "deny", || f.reason.clone());
                    return f;
                }
            }
        }
        if !seg.data_only && !seg.function_call {
            if let Some((shown, why)) = seg.unknown_args.first() {
                unknown_path.get_or_insert(format!(
                    "`{shown}` could name a path outside the workspace ({why})"
                ));
            }
        }
        match &unknown_path {
            Some(why) => notes.add(Step::Workspace, on_unknown.as_str(), || why.clone()),
            None => notes.add(Step::Workspace, "pass", || {
                "every path stays inside the workspace".into()
            }),
        }

        // Step 2: the network.
        if let Some(f) = self.network(seg, shape.as_ref()) {
            notes.add(Step::Network, "deny", || f.reason.clone());
            return f;
        }
        notes.add(Step::Network, "pass", || match policy.network.mode {
            NetworkMode::Open => "network mode is open".into(),
            _ => "does not reach the network".into(),
        });

        // Steps 3 and 4.
        let ruled = self.rule_match(seg, shape.as_ref());
        let found = match ruled {
            Some(f) => f,
            None if seg.argv.is_empty() => Found {
                verdict: Verdict::Allow,
                step: Step::Allowlist,
                reason: "only redirections or assignments, all inside the workspace".into(),
                rule: None,
            },
            None if seg.function_call => Found {
                verdict: Verdict::Allow,
                step: Step::Allowlist,
                reason: format!("`{program}` is a function defined in this command; its body is judged on its own"),
                rule: None,
            },
            None if matches!(program, "[[" | "((" | "for" | "case") => Found {
                verdict: Verdict::Allow,
                step: Step::Allowlist,
                reason: "a shell test or loop header".into(),
                rule: None,
            },
            None => Found {
                verdict: Verdict::Deny,
                step: Step::Allowlist,
                reason: not_allowlisted(shape.as_ref().map_or(program, |s| s.program_as_written)),
                rule: None,
            },
        };
        let found = self.knowledge_findings(seg, found, notes);
        match found.step {
            Step::Approval => notes.add(Step::Approval, found.verdict.as_str(), || {
                found.reason.clone()
            }),
            _ => {
                notes.add(Step::Approval, "pass", || {
                    "no approval prefix matches".into()
                });
                notes.add(Step::Allowlist, found.verdict.as_str(), || {
                    found.reason.clone()
                });
            }
        }
        if let Some(why) = unknown_path {
            if on_unknown >= found.verdict {
                return Found {
                    verdict: on_unknown,
                    step: Step::Workspace,
                    reason: format!("{why}; that gets `{}`", on_unknown.as_str()),
                    rule: Some("commands.on_unknown".into()),
                };
            }
        }
        found
    }

    /// Step 1 for one working directory.
    fn check_paths(
        &self,
        at: usize,
        seg: &Segment,
        cwd: &Path,
        program: &str,
        normalized: Option<&Normalized<'_>>,
    ) -> Option<Found> {
        let deny = |what: &str, text: &str, resolved: &Path, access: Access| {
            Found {
            verdict: Verdict::Deny,
            step: Step::Workspace,
            reason: format!(
                "{what} `{text}` resolves to {}, outside the workspace {} (add it to filesystem.{} to allow {} access)",
                resolved.display(),
                self.policy.workspace.root.display(),
                access.as_str(),
                access.as_str()
            ),
            rule: Some("workspace.root".into()),
        }
        };
        // The program itself, when given as a path outside the system directories.
        if let Some(p) = seg.argv.first() {
            if p.contains('/') && !(p.starts_with('/') && system_program(Path::new(p))) {
                if let Err(o) = self.boundary.check_program(cwd, p) {
                    let mut found = deny("the program", p, &o.resolved, Access::Read);
                    let name = crate::rules::program_name(p);
                    if name.starts_with("python") || name.starts_with("pip") || name == "pytest" {
                        // A venv made from pyenv's (or another home's) interpreter.
                        found.reason.push_str(
                            "; a venv's interpreter under a home directory (pyenv) is shown by \
                             `[toolchains] use = [\"python\"]`",
                        );
                    }
                    return Some(found);
                }
            }
        }
        let protected = |text: &str| {
            self.boundary.protected(cwd, text).map(|p| Found {
                verdict: Verdict::Deny,
                step: Step::Workspace,
                reason: format!(
                    "`{text}` writes into {}, which this policy protects (workspace.protect)",
                    p.display()
                ),
                rule: Some("workspace.protect".into()),
            })
        };
        // A write that host git would read as its own metadata: a nested
        // repository's config, `.git/commondir`, a gitfile. Git run there
        // obeys it (core.fsmonitor, hooks), so a person decides.
        // A program that changes a file's mode, owner or attributes does not
        // write it, but makes it what git obeys all the same.
        let verb = if matches!(
            program,
            "chmod" | "chown" | "chgrp" | "setfacl" | "setfattr" | "chattr" | "chcon"
        ) {
            "changes"
        } else {
            "writes"
        };
        let git_metadata = |text: &str| {
            self.boundary
                .git_metadata(cwd, text)
                .or_else(|| self.in_bare_repo(cwd, text))
                .map(|(rel, why)| Found {
                    verdict: Verdict::ApprovalRequired,
                    step: Step::Workspace,
                    reason: format!(
                        "`{text}` {verb} {}, {why}, which git run there obeys; a person must approve it",
                        rel.display()
                    ),
                    rule: Some("builtin.git_metadata".into()),
                })
        };
        // A finding that needs approval waits: a later path may be denied,
        // and the strictest decides.
        let mut pending: Option<Found> = None;
        for u in &seg.paths {
            // A pattern (`>> .git/c?nfig`) is checked as written and as each
            // name it matches here.
            let mut texts = vec![u.text.clone()];
            if seg.glob_args.contains(&u.text) {
                let Some(named) = glob_paths(cwd, &u.text) else {
                    return Some(Found {
                        verdict: Verdict::Deny,
                        step: Step::Workspace,
                        reason: format!(
                            "the {} `{}` is a pattern that names more than {GLOB_MAX} paths here, and the gate checks each path a pattern names; name fewer at a time",
                            u.role, u.text
                        ),
                        rule: None,
                    });
                };
                texts.extend(named);
            }
            for text in &texts {
                if let Err(o) = self.boundary.check(cwd, text, u.access) {
                    return Some(deny(
                        &format!("the {}", u.role),
                        text,
                        &o.resolved,
                        u.access,
                    ));
                }
                if u.access == Access::Write {
                    if let Some(f) = protected(text).or_else(|| self.policy_file(cwd, text)) {
                        return Some(f);
                    }
                    if pending.is_none() {
                        pending = git_metadata(text);
                    }
                    if let Some(f) = self.through_links(at, cwd, text, true) {
                        if f.verdict == Verdict::Deny {
                            return Some(f);
                        }
                        pending.get_or_insert(f);
                    }
                }
            }
        }
        if seg.data_only || seg.function_call {
            return pending;
        }
        // A relative symlink target is resolved from the link's directory,
        // not from here: `ln -s .. d/up` points above d, whatever the cwd.
        let link_targets = symlink_targets(program, &seg.argv);
        for (_, target) in &link_targets {
            if let Err(o) = self.boundary.check(cwd, target, Access::Read) {
                return Some(deny(
                    "the symlink's target",
                    target,
                    &o.resolved,
                    Access::Read,
                ));
            }
        }
        // Archives and diffs name the files they write; the gate sees only
        // the directory they land in. Inside the workspace the run's change
        // review sees each one; into git's metadata, or outside (the
        // sandbox's /tmp is its HOME, where `.gitconfig` or `.ssh/config`
        // would be obeyed), a person decides.
        let dirs = extraction_dirs(program, &seg.argv, normalized);
        if let Some(why) = absolute_members(program, &seg.argv, normalized) {
            pending.get_or_insert(Found {
                verdict: Verdict::ApprovalRequired,
                step: Step::Workspace,
                reason: format!(
                    "`{program}` writes files whose names the archive chooses, and {why}, so it may write anywhere, where the run's change review does not see it (the sandbox's /tmp is its HOME: `.gitconfig`, `.ssh/config`); a person must approve it, or extract with tar -x, which strips the leading `/`"
                ),
                rule: Some("builtin.extraction".into()),
            });
        }
        for dir in dirs {
            if let Err(o) = self.boundary.check(cwd, &dir, Access::Write) {
                return Some(deny(
                    &format!("the directory `{program}` extracts into,"),
                    &dir,
                    &o.resolved,
                    Access::Write,
                ));
            }
            let place = if dir == "." {
                "the working directory".to_string()
            } else {
                format!("`{dir}`")
            };
            let into = |mut f: Found| {
                f.reason = format!(
                    "`{program}` writes files whose names its input chooses into {place}: {}",
                    f.reason
                );
                f
            };
            if let Some(f) = protected(&dir) {
                return Some(into(f));
            }
            if pending.is_none() {
                pending = git_metadata(&dir).map(into);
            }
            if pending.is_none() && !self.boundary.inside_root(cwd, &dir) {
                pending = Some(Found {
                    verdict: Verdict::ApprovalRequired,
                    step: Step::Workspace,
                    reason: format!(
                        "`{program}` writes files whose names the archive or diff chooses into {place}, outside the workspace, where the run's change review does not see them (the sandbox's /tmp is its HOME: `.gitconfig`, `.ssh/config`); a person must approve it, or extract inside the workspace"
                    ),
                    rule: Some("builtin.extraction".into()),
                });
            }
        }
        let in_place = edits_in_place(program, normalized);
        let backup_suffix = if in_place {
            in_place_suffix(normalized)
        } else {
            None
        };
        let access = arg_access(program, &seg.argv, in_place);
        let already: Vec<&str> = seg.paths.iter().map(|p| p.text.as_str()).collect();
        let pattern = grep_pattern(program, &seg.argv);
        // Option words the knowledge base cannot read (a program it does not
        // describe, or a script's own arguments): where a value attached to
        // one starts is not known, so `-o../x` is checked as `../x`.
        let mut opaque = vec![false; seg.argv.len()];
        for w in normalized.iter().flat_map(|n| &n.words) {
            let unread = match w {
                Word::Arg { text, .. } => text.len() > 1 && text.starts_with('-'),
                Word::Short { owner: None, .. } | Word::Long { owner: None, .. } => true,
                _ => false,
            };
            if unread {
                if let Some(o) = opaque.get_mut(w.at()) {
                    *o = true;
                }
            }
        }
        // Arguments count as writes conservatively (`git show HEAD`): git's
        // own files only for programs that write them, or change what they
        // are (a hook made executable runs: `chmod +x sub/.git/hooks/x`).
        // `cmake -E copy|rename|touch|…` is cp, mv and touch in one.
        let writer = in_place
            || (program == "cmake" && seg.argv.get(1).map(String::as_str) == Some("-E"))
            || writes_or_changes_files(program);
        // Deleting a policy file changes it as much as writing one does.
        let deleter = matches!(program, "rm" | "unlink");
        // A copy of a repository's `.git`, or of a `HEAD`, makes a directory
        // that git run there takes for a repository, whose config it obeys
        // (`cp -r .git ev`, then `ev/config` is only a file to the gate).
        let copier = matches!(program, "cp" | "rsync" | "install");
        let git_copy = |text: &str| {
            let last = Path::new(text).file_name()?.to_str()?;
            matches!(last, ".git" | "HEAD").then(|| Found {
                verdict: Verdict::ApprovalRequired,
                step: Step::Workspace,
                reason: format!(
                    "`{text}` is git's metadata: a copy of it makes a directory that git run there takes for a repository and whose config it obeys; a person must approve it"
                ),
                rule: Some("builtin.git_metadata".into()),
            })
        };
        let mode = mode_operand(program, &seg.argv);
        for (i, arg) in seg.argv.iter().enumerate().skip(1) {
            if seg.unknown_args.iter().any(|(shown, _)| shown == arg)
                || pattern == Some(i)
                || mode == Some(i)
                || seg.data_args.contains(&i)
                || link_targets.iter().any(|(at, _)| *at == i)
            {
                continue;
            }
            let a = access(i);
            let check_as = |what: &str, candidate: &str| -> Option<Found> {
                if let Err(o) = self.boundary.check(cwd, candidate, a) {
                    return Some(deny(what, candidate, &o.resolved, a));
                }
                if a == Access::Write {
                    let through = || self.through_links(at, cwd, candidate, writer);
                    let direct = protected(candidate)
                        .or_else(|| {
                            (writer || deleter)
                                .then(|| self.policy_file(cwd, candidate))
                                .flatten()
                        })
                        .or_else(|| writer.then(|| git_metadata(candidate)).flatten());
                    match direct {
                        Some(f) if f.verdict == Verdict::Deny => Some(f),
                        direct => match through() {
                            Some(t) if t.verdict == Verdict::Deny || direct.is_none() => Some(t),
                            _ => direct,
                        },
                    }
                } else if copier {
                    git_copy(candidate)
                } else {
                    None
                }
            };
            // sed and perl keep each file's original under a name made from
            // the suffix (`-i'/tmp/.*'` keeps `gitconfig` as `/tmp/.gitconfig`):
            // a write of its own, checked as one.
            let check = |candidate: &str| -> Option<Found> {
                let own = check_as("the argument", candidate);
                let Some(suffix) = backup_suffix.filter(|_| a == Access::Write) else {
                    return own;
                };
                if own.as_ref().is_some_and(|f| f.verdict == Verdict::Deny) {
                    return own;
                }
                let kept = backup_path(suffix, candidate);
                let what = format!("the backup copy of `{candidate}` that `-i{suffix}` writes,");
                let named = |mut f: Found| {
                    // The boundary's refusal already names the backup copy.
                    if f.rule.as_deref() != Some("workspace.root") {
                        f.reason = format!(
                            "`-i{suffix}` keeps the original of `{candidate}` as `{kept}`: {}",
                            f.reason
                        );
                    }
                    f
                };
                let theirs = check_as(&what, &kept).map(named).or_else(|| {
                    self.kb().config_file(&kept).map(|pattern| {
                        let (what, rule) = self.held(pattern);
                        Found {
                            verdict: Verdict::ApprovalRequired,
                            step: Step::Workspace,
                            reason: format!(
                                "`-i{suffix}` keeps the original of `{candidate}` as `{kept}`, {what}; a person must approve it, or use a suffix that names an ordinary file (`-i.bak`)"
                            ),
                            rule: Some(rule),
                        }
                    })
                });
                match (own, theirs) {
                    (Some(o), Some(t)) if t.verdict > o.verdict => Some(t),
                    (Some(o), _) => Some(o),
                    (None, t) => t,
                }
            };
            // What the shell puts in place of a pattern: `e?/hostname` is
            // `el/hostname` where `el` is a link, and in sh `.?` is `..`.
            if seg.glob_args.iter().any(|g| g == arg) {
                let Some(named) = glob_paths(cwd, arg) else {
                    return Some(Found {
                        verdict: Verdict::Deny,
                        step: Step::Workspace,
                        reason: format!(
                            "`{arg}` is a pattern that names more than {GLOB_MAX} paths here, and the gate checks each path a pattern names; name fewer at a time"
                        ),
                        rule: None,
                    });
                };
                for f in named.iter().filter_map(|p| check(p)) {
                    if f.verdict == Verdict::Deny {
                        return Some(f);
                    }
                    pending.get_or_insert(f);
                }
            }
            for candidate in path_candidates(arg, opaque[i]) {
                if already.contains(&candidate) {
                    continue;
                }
                if let Some(f) = check(candidate) {
                    if f.verdict == Verdict::Deny {
                        return Some(f);
                    }
                    pending.get_or_insert(f);
                }
            }
        }
        if let Some(t) = links::transfer(&seg.argv, normalized) {
            let found = self.transfer_writes(at, seg, cwd, &t);
            if let Some(f) = found {
                if f.verdict == Verdict::Deny {
                    return Some(f);
                }
                pending.get_or_insert(f);
            }
        }
        pending
    }

    /// Where `text` lands in a git directory the line makes bare
    /// (`git init --bare DIR`), when git obeys it there.
    fn in_bare_repo(&self, cwd: &Path, text: &str) -> Option<(std::path::PathBuf, &'static str)> {
        if self.bare_repos.is_empty() {
            return None;
        }
        let path = crate::load::absolute_lexical(&crate::paths::joined(cwd, text));
        self.bare_repos.iter().find_map(|repo| {
            let rel = path.strip_prefix(repo).ok()?;
            let why = crate::paths::bare_git_obeys(rel)?;
            Some((path.clone(), why))
        })
    }

    /// A write to `text` from `cwd`, judged where it lands through the
    /// symlinks this line makes: the host does not show them yet, so the
    /// boundary alone would see only a new name in the workspace.
    fn through_links(&self, at: usize, cwd: &Path, text: &str, git: bool) -> Option<Found> {
        if self.links.is_empty() {
            return None;
        }
        let on_unknown = self.policy.commands.on_unknown;
        let joined = crate::paths::joined(cwd, text);
        let landings = match self.links.through(at, &joined, &self.boundary) {
            Ok(l) => l,
            Err(why) => {
                return Some(Found {
                    verdict: on_unknown,
                    step: Step::Workspace,
                    reason: format!(
                        "`{text}` is written through {why}, so the gate cannot tell where the write lands; that gets `{}`",
                        on_unknown.as_str()
                    ),
                    rule: Some("commands.on_unknown".into()),
                })
            }
        };
        let root = Path::new("/");
        let mut pending = None;
        for l in &landings {
            let via = format!(
                "`{text}` is written through `{}`, a symlink this command makes to `{}`",
                l.link, l.target
            );
            let shown = l.path.to_string_lossy();
            if let Err(o) = self.boundary.check(root, &shown, Access::Write) {
                return Some(Found {
                    verdict: Verdict::Deny,
                    step: Step::Workspace,
                    reason: format!(
                        "{via}; the write lands at {}, outside the workspace {} (add it to filesystem.write to allow write access)",
                        o.resolved.display(),
                        self.policy.workspace.root.display()
                    ),
                    rule: Some("workspace.root".into()),
                });
            }
            if let Some(p) = self.boundary.protected(root, &shown) {
                return Some(Found {
                    verdict: Verdict::Deny,
                    step: Step::Workspace,
                    reason: format!(
                        "{via}; the write lands in {}, which this policy protects (workspace.protect); nothing allows it but taking it out of workspace.protect",
                        p.display()
                    ),
                    rule: Some("workspace.protect".into()),
                });
            }
            if let Some(mut f) = git.then(|| self.policy_file(root, &shown)).flatten() {
                f.reason = format!("{via}; {}", f.reason);
                return Some(f);
            }
            if pending.is_some() {
                continue;
            }
            if let Some((rel, why)) = git
                .then(|| self.boundary.git_metadata(root, &shown))
                .flatten()
            {
                pending = Some(Found {
                    verdict: Verdict::ApprovalRequired,
                    step: Step::Workspace,
                    reason: format!(
                        "{via}; the write lands at {}, {why}, which git run there obeys; a person must approve it",
                        rel.display()
                    ),
                    rule: Some("builtin.git_metadata".into()),
                });
            } else if let Some(pattern) = self.kb().config_file(&shown) {
                let (what, rule) = self.held(pattern);
                pending = Some(Found {
                    verdict: Verdict::ApprovalRequired,
                    step: Step::Workspace,
                    reason: format!(
                        "{via}; the write lands at {shown}, {what}; a person must approve it"
                    ),
                    rule: Some(rule),
                });
            }
        }
        pending
    }

    /// What `ln`, `link`, `cp` and `mv` write besides their plain operands:
    /// the directory of `-tDIR`, the file a hard link shares, and a symlink
    /// to where a write is held.
    fn transfer_writes(
        &self,
        at: usize,
        seg: &Segment,
        cwd: &Path,
        t: &links::Transfer,
    ) -> Option<Found> {
        let root = Path::new("/");
        let shown = display_argv(&seg.argv);
        // A write judged as any other: outside, protected, git's, a config.
        let write = |text: &str, config: bool| -> Option<Found> {
            if let Err(o) = self.boundary.check(cwd, text, Access::Write) {
                return Some(Found {
                    verdict: Verdict::Deny,
                    step: Step::Workspace,
                    reason: format!(
                        "`{text}` resolves to {}, outside the workspace {} (add it to filesystem.write to allow write access)",
                        o.resolved.display(),
                        self.policy.workspace.root.display()
                    ),
                    rule: Some("workspace.root".into()),
                });
            }
            if let Some(p) = self.boundary.protected(cwd, text) {
                return Some(Found {
                    verdict: Verdict::Deny,
                    step: Step::Workspace,
                    reason: format!(
                        "`{text}` is in {}, which this policy protects (workspace.protect); nothing allows it but taking it out of workspace.protect",
                        p.display()
                    ),
                    rule: Some("workspace.protect".into()),
                });
            }
            if let Some(f) = self.policy_file(cwd, text) {
                return Some(f);
            }
            let through = self.through_links(at, cwd, text, true);
            if through.as_ref().is_some_and(|f| f.verdict == Verdict::Deny) {
                return through;
            }
            if let Some((rel, why)) = self.boundary.git_metadata(cwd, text) {
                return Some(Found {
                    verdict: Verdict::ApprovalRequired,
                    step: Step::Workspace,
                    reason: format!(
                        "`{text}` is {}, {why}, which git run there obeys; a person must approve it",
                        rel.display()
                    ),
                    rule: Some("builtin.git_metadata".into()),
                });
            }
            if let Some(pattern) = self.kb().config_file(text).filter(|_| config) {
                let (what, rule) = self.held(pattern);
                return Some(Found {
                    verdict: Verdict::ApprovalRequired,
                    step: Step::Workspace,
                    reason: format!("`{text}` is {what}; a person must approve it"),
                    rule: Some(rule),
                });
            }
            through
        };
        let mut pending: Option<Found> = None;
        let mut keep = |f: Option<Found>| -> Option<Found> {
            let f = f?;
            if f.verdict == Verdict::Deny {
                return Some(f);
            }
            pending.get_or_insert(f);
            None
        };
        // The place is an argument the knowledge base's config check sees,
        // but not a name made inside it (`cp x/.gitconfig ~`).
        if let Some((_, dir)) = &t.place {
            if let Some(f) = keep(write(dir, false)) {
                return Some(f);
            }
        }
        for (_, name, _) in t.names(&seg.argv).into_iter().filter(|n| !n.2) {
            let f = self.kb().config_file(&name).map(|pattern| {
                let (what, rule) = self.held(pattern);
                Found {
                    verdict: Verdict::ApprovalRequired,
                    step: Step::Workspace,
                    reason: format!("`{shown}` makes `{name}`, {what}; a person must approve it"),
                    rule: Some(rule),
                }
            });
            if let Some(f) = keep(f) {
                return Some(f);
            }
        }
        if t.kind == links::Kind::Hard {
            for &s in &t.sources {
                let text = &seg.argv[s];
                let f = write(text, true).map(|mut f| {
                    f.reason = format!(
                        "a hard link shares its file, so `{shown}` writes `{text}` as much as any write to the new name: {}",
                        f.reason
                    );
                    f
                });
                if let Some(f) = keep(f) {
                    return Some(f);
                }
            }
        }
        for link in self.links.made_by(at) {
            let Some(target) = link.target_path() else {
                continue;
            };
            let written = link.target.as_deref().unwrap_or("");
            let mut places = vec![target.clone()];
            match self.links.through(at, &target, &self.boundary) {
                Ok(l) => places.extend(l.into_iter().map(|l| l.path)),
                Err(why) => {
                    let on_unknown = self.policy.commands.on_unknown;
                    let f = Found {
                        verdict: on_unknown,
                        step: Step::Workspace,
                        reason: format!(
                            "`{shown}` makes `{}` a symlink to `{written}`, which leads through {why}; that gets `{}`",
                            link.shown,
                            on_unknown.as_str()
                        ),
                        rule: Some("commands.on_unknown".into()),
                    };
                    if let Some(f) = keep(Some(f)) {
                        return Some(f);
                    }
                    continue;
                }
            }
            let kb = self.kb();
            let held = places.iter().find_map(|p| {
                let text = p.to_string_lossy();
                if let Some(pp) = self.boundary.protected(root, &text) {
                    return Some(format!(
                        "{}, which this policy protects (workspace.protect)",
                        pp.display()
                    ));
                }
                if let Some(rel) = self.boundary.in_git_dir(p) {
                    return Some(format!(
                        "{}, inside git's metadata, which git obeys",
                        rel.display()
                    ));
                }
                kb.config_file(&text)
                    .or_else(|| kb.config_file(written))
                    .map(|pattern| format!("{text}, {}", self.held(pattern).0))
            });
            if let Some(what) = held {
                let f = Found {
                    verdict: Verdict::ApprovalRequired,
                    step: Step::Workspace,
                    reason: format!(
                        "`{shown}` makes `{}` a symlink to `{written}`, which leads to {what}: any write through the link changes it; a person must approve it (a link to anything else needs no approval)",
                        link.shown
                    ),
                    rule: Some("builtin.link_target".into()),
                };
                if let Some(f) = keep(Some(f)) {
                    return Some(f);
                }
            }
        }
        pending
    }

    /// A write to a policy file in the workspace: any file named like one
    /// (`airlock.toml`, which airlock reads from the working directory) or
    /// the file this policy was loaded from. The next run would obey it, and
    /// the run's change review refuses every change to one
    /// (`builtin.policy_file`), so the gate refuses it up front.
    fn policy_file(&self, cwd: &Path, text: &str) -> Option<Found> {
        let name = crate::load::POLICY_FILE_NAME;
        let joined = crate::paths::joined(cwd, text);
        if !self.boundary.inside_root(cwd, text) {
            return None;
        }
        let resolved = self.boundary.resolve(&joined);
        let named = |p: &Path| p.file_name().is_some_and(|n| n == name);
        let source = Path::new(&self.policy.source);
        let active = source.is_absolute() && self.boundary.resolve(source) == resolved;
        (named(Path::new(text)) || named(&joined) || named(&resolved) || active).then(|| Found {
            verdict: Verdict::Deny,
            step: Step::Workspace,
            reason: format!(
                "`{text}` is {}, which the next run would obey; the run's change review never lets a run change one, so it is refused here too; edit the policy on the host instead",
                if active {
                    "the policy file airlock is using".to_string()
                } else {
                    format!("named like airlock's policy file ({name})")
                }
            ),
            rule: Some("builtin.policy_file".into()),
        })
    }

    /// Step 2.
    fn network(&self, seg: &Segment, shape: Option<&ArgvShape<'_>>) -> Option<Found> {
        let policy = self.policy;
        let mode = policy.network.mode;
        if mode == NetworkMode::Open {
            return None;
        }
        let mut why =
            shape.and_then(|shape| touches_network_shaped(&seg.argv, shape, &policy.network));
        if why.is_none() {
            if let Some(r) = seg.net_redirects.first() {
                why = Some(format!(
                    "the redirection to `{r}` opens a network connection"
                ));
            }
        }
        let why = why?;
        if mode == NetworkMode::Allowlist {
            let mut hosts = named_hosts(&seg.argv);
            for r in &seg.net_redirects {
                let mut parts = r.split('/').skip(3);
                if let (Some(h), p) = (parts.next(), parts.next()) {
                    hosts.push((h.to_string(), p.and_then(|p| p.parse().ok())));
                }
            }
            let allowed = |host: &str, port| {
                let listed = policy
                    .network
                    .allow
                    .iter()
                    .chain(self.extra_hosts.iter())
                    .any(|p| host_matches(p, host, port));
                let denied = policy
                    .network
                    .deny
                    .iter()
                    .any(|p| host_matches(p, host, port));
                listed && !denied
            };
            if !hosts.is_empty() && hosts.iter().all(|(h, p)| allowed(h, *p)) {
                return None;
            }
            let reason = match hosts.iter().find(|(h, p)| !allowed(h, *p)) {
                Some((h, _)) => format!("{why}, and `{h}` is not in this policy's network.allow"),
                None => format!("{why}, and the gate cannot tell which host; this policy only allows the hosts in network.allow"),
            };
            return Some(Found {
                verdict: Verdict::Deny,
                step: Step::Network,
                reason,
                rule: Some("network.allow".into()),
            });
        }
        Some(Found {
            verdict: Verdict::Deny,
            step: Step::Network,
            reason: format!("{why} and this policy has network mode none"),
            rule: Some("network.mode".into()),
        })
    }

    /// A rule's prefix as a reason shows it. A compound's segments match the
    /// same few rules again and again, so the last few are kept.
    fn shown_prefix(&self, rule: &'p Rule) -> std::rc::Rc<str> {
        let mut kept = self.shown_prefixes.borrow_mut();
        if let Some((_, shown)) = kept.iter().find(|(r, _)| std::ptr::eq(*r, rule)) {
            return shown.clone();
        }
        let shown: std::rc::Rc<str> = crate::load::display_prefix(&rule.prefix).into();
        if kept.len() >= 16 {
            kept.remove(0);
        }
        kept.push((rule, shown.clone()));
        shown
    }

    /// Steps 3 and 4: the strictest matching rule, on the command and on the
    /// wrappers around it (a deny or approval rule on a wrapper counts too).
    fn rule_match(&self, seg: &Segment, shape: Option<&ArgvShape<'_>>) -> Option<Found> {
        let rules: &'p [Rule] = &self.policy.commands.rules;
        let mut best: Option<&'p Rule> = None;
        let mut consider = |shape: &ArgvShape<'_>, inner: bool| {
            let judge_rule = |i: usize| {
                let rule = &rules[i];
                if !inner && rule.decision == Verdict::Allow {
                    return;
                }
                if prefix_matches(&rule.prefix, shape)
                    && best.is_none_or(|b| rule.decision > b.decision)
                {
                    best = Some(rule);
                }
            };
            // In policy order either way: the first of the strictest wins.
            match &self.index {
                Some(index) => index.candidates(shape).into_iter().for_each(judge_rule),
                None => (0..rules.len()).for_each(judge_rule),
            }
        };
        if let Some(shape) = shape {
            consider(shape, true);
        }
        for w in &seg.wrappers {
            if let Some(shape) = ArgvShape::with(w, self.kb()) {
                consider(&shape, false);
            }
        }
        let rule = best?;
        let shown = display_argv(&seg.argv);
        let prefix = self.shown_prefix(rule);
        let (step, default_reason) = match rule.decision {
            Verdict::Allow => (
                Step::Allowlist,
                format!("`{shown}` is allowlisted by `{prefix}`"),
            ),
            Verdict::ApprovalRequired => (
                Step::Approval,
                format!(
                    "`{shown}` matches the approval prefix `{prefix}`; a human must approve it"
                ),
            ),
            Verdict::Deny => (
                Step::Allowlist,
                format!("`{shown}` matches the deny rule `{prefix}`"),
            ),
        };
        Some(Found {
            verdict: rule.decision,
            step,
            reason: match &rule.reason {
                Some(r) => format!("{r} (`{shown}` matches `{prefix}`)"),
                None => default_reason,
            },
            rule: Some(rule.name.clone()),
        })
    }
}

/// Why a program is denied at step 4, with the line that would allow it. A
/// program given as a path (a script in the workspace) is matched as written.
fn not_allowlisted(written: &str) -> String {
    if written.contains('/') {
        format!(
            "`{written}` is a program given by its path, and no rule allows it; to allow it, add \
             \"{written}\" to [commands] allow (a path is matched as written)"
        )
    } else {
        format!("`{written}` is not on this policy's allowlist; to allow it, add \"{written}\" to [commands] allow")
    }
}

/// The strings in an argument that may name a path: the word, the value of
/// `--opt=value` / `key=value` (and of `--opt=key=value`: rustc's
/// `--emit=link=PATH`), and with `opaque` (an option word whose letters the
/// knowledge base does not know) a path attached to a single-dash word:
/// `-o../x`.
fn path_candidates(arg: &str, opaque: bool) -> Vec<&str> {
    if arg.is_empty() {
        return vec![];
    }
    if let Some(body) = arg.strip_prefix('-') {
        return match arg.split_once('=') {
            Some((_, v)) if !v.is_empty() => {
                let mut out = vec![v];
                out.extend(assigned_path(v));
                out
            }
            _ if opaque && !body.starts_with('-') => attached_path(body).into_iter().collect(),
            _ => vec![],
        };
    }
    let mut out = vec![arg];
    out.extend(assigned_path(arg));
    // A URL names a host, not a local path.
    if arg.contains("://") {
        out.retain(|c| !c.contains("://"));
    }
    out
}

/// The most paths one pattern may name for the gate to check them all.
const GLOB_MAX: usize = 256;

/// The paths an unquoted pattern names when the shell expands it in `cwd`:
/// each component holding `*`, `?` or `[...]` matched against its
/// directory's entries as sh matches them (a leading `.` only by a literal
/// one, and `.` and `..` among the entries, as dash lists them; bash leaves
/// those two out). Empty: nothing matches, and the shell passes the word as
/// it is. `None`: more than [`GLOB_MAX`] names.
pub(crate) fn glob_paths(cwd: &Path, pattern: &str) -> Option<Vec<String>> {
    let absolute = pattern.starts_with('/');
    let mut prefixes = vec![if absolute {
        "/".to_string()
    } else {
        String::new()
    }];
    for comp in pattern.split('/').filter(|c| !c.is_empty()) {
        let mut next = Vec::new();
        for prefix in &prefixes {
            if !comp.contains(['*', '?', '[']) {
                next.push(format!("{prefix}{comp}/"));
                continue;
            }
            let dir = cwd.join(if prefix.is_empty() { "." } else { prefix });
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let names = entries
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .chain([".".to_string(), "..".to_string()]);
            for name in names {
                if shell_match(comp.as_bytes(), name.as_bytes()) {
                    next.push(format!("{prefix}{name}/"));
                    if next.len() > GLOB_MAX {
                        return None;
                    }
                }
            }
        }
        prefixes = next;
    }
    Some(
        prefixes
            .into_iter()
            .map(|p| match p.strip_suffix('/') {
                Some("") | None => p,
                Some(s) => s.to_string(),
            })
            .collect(),
    )
}

/// sh's pattern match of one path component: `*`, `?`, `[...]` (with `!`
/// or `^`, and ranges), `\\` quoting the next byte; a leading `.` of the
/// name only by a literal one. Linear backtracking to the last `*`, so no
/// pattern costs more than its length times the name's.
fn shell_match(pattern: &[u8], name: &[u8]) -> bool {
    if name.first() == Some(&b'.') && pattern.first() != Some(&b'.') {
        return false;
    }
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if pattern.get(p) == Some(&b'*') {
            star = Some((p + 1, n));
            p += 1;
            continue;
        }
        if let Some(len) = one_char(&pattern[p..], name[n]) {
            p += len;
            n += 1;
            continue;
        }
        match star {
            Some((sp, sn)) => {
                p = sp;
                n = sn + 1;
                star = Some((sp, sn + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|b| *b == b'*')
}

/// How many pattern bytes match the name byte `c` at the start of `p`
/// (`?`, a bracket expression, an escaped or a plain byte); `None`: no match.
fn one_char(p: &[u8], c: u8) -> Option<usize> {
    match p.first()? {
        b'?' => Some(1),
        b'\\' if p.len() > 1 => (p[1] == c).then_some(2),
        b'[' => {
            let (negate, start) = match p.get(1) {
                Some(b'!' | b'^') => (true, 2),
                _ => (false, 1),
            };
            // A `]` right after the opening is a member; no closing `]`:
            // a literal `[`.
            let Some(close) = p
                .iter()
                .skip(start + 1)
                .position(|b| *b == b']')
                .map(|i| i + start + 1)
            else {
                return (c == b'[').then_some(1);
            };
            let set = &p[start..close];
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == b'-' {
                    hit |= set[i] <= c && c <= set[i + 2];
                    i += 3;
                } else {
                    hit |= set[i] == c;
                    i += 1;
                }
            }
            (hit != negate).then_some(close + 1)
        }
        b => (*b == c).then_some(1),
    }
}

/// The value of `key=value` when it starts as an absolute or climbing path
/// does (a key with a `/` is a path itself).
fn assigned_path(word: &str) -> Option<&str> {
    let (k, v) = word.split_once('=')?;
    (!k.contains('/') && (v.starts_with('/') || v.starts_with('~') || v.starts_with("..")))
        .then_some(v)
}

/// A path attached to one option letter (`-o../x`, `-I/usr/include`): what
/// follows the letter, when it starts as a path does. Only one letter: in
/// `-obuild/out` the value is `build/out`, and reading it as the cluster
/// `-obuild` with the value `/out` would refuse everyday commands. A cluster
/// before a path (`-xf/abs`) of a program the knowledge base does not
/// describe is therefore not seen here; the sandbox's mounts still hold it.
fn attached_path(body: &str) -> Option<&str> {
    let rest = &body[body.chars().next()?.len_utf8()..];
    let pathlike =
        ["/", "~/", "./", "../"].iter().any(|p| rest.starts_with(p)) || matches!(rest, ".." | "~");
    pathlike.then_some(rest)
}

/// The index of grep's pattern operand, which is data, not a path
/// (`grep ../x notes.txt` reads only notes.txt). Only when every option is a
/// known flag that takes no separate value (long options spelled in full):
/// with `-e`/`-f`, an option taking a separate value, `--`, an abbreviation or
/// anything unknown, every operand is checked as a path.
fn grep_pattern(program: &str, argv: &[String]) -> Option<usize> {
    const FLAGS: &str = "EFGPiyvwxcLloqsbHhnTZzrRaIU";
    const LONG_FLAGS: &[&str] = &[
        "--extended-regexp",
        "--fixed-strings",
        "--basic-regexp",
        "--perl-regexp",
        "--ignore-case",
        "--no-ignore-case",
        "--invert-match",
        "--word-regexp",
        "--line-regexp",
        "--count",
        "--files-with-matches",
        "--files-without-match",
        "--only-matching",
        "--quiet",
        "--silent",
        "--no-messages",
        "--byte-offset",
        "--with-filename",
        "--no-filename",
        "--line-number",
        "--initial-tab",
        "--null",
        "--null-data",
        "--recursive",
        "--dereference-recursive",
        "--text",
        "--color",
        "--colour",
    ];
    const LONG_WITH_VALUE: &[&str] = &[
        "--color",
        "--colour",
        "--include",
        "--exclude",
        "--exclude-dir",
        "--exclude-from",
        "--max-count",
        "--context",
        "--after-context",
        "--before-context",
        "--binary-files",
        "--label",
        "--directories",
        "--devices",
    ];
    if !matches!(program, "grep" | "egrep" | "fgrep") {
        return None;
    }
    let mut pattern = None;
    for (i, arg) in argv.iter().enumerate().skip(1) {
        let flag = match arg.split_once('=') {
            // `--name=value` consumes no other word, and its value is still
            // checked as a path; `--regexp=` and `--file=` give the pattern.
            Some((name, _)) if name.starts_with("--") => LONG_WITH_VALUE.contains(&name),
            _ if arg.starts_with("--") => LONG_FLAGS.contains(&arg.as_str()),
            _ => match arg.strip_prefix('-') {
                Some(short) if !short.is_empty() => short.chars().all(|c| FLAGS.contains(c)),
                _ => {
                    pattern.get_or_insert(i);
                    continue;
                }
            },
        };
        if !flag {
            return None;
        }
    }
    pattern
}

/// For `ln -s`: each relative target joined to the directory its link is
/// made in, as the kernel resolves it. The link's own directory is taken as
/// the parent of the last argument even where that is an existing directory
/// (the link then lies one level deeper): starting one level higher only
/// ever climbs further out, so the check is never looser than the link.
fn symlink_targets(program: &str, argv: &[String]) -> Vec<(usize, String)> {
    if program != "ln" {
        return Vec::new();
    }
    let mut symbolic = false;
    let mut into: Option<String> = None;
    let mut positional: Vec<(usize, &str)> = Vec::new();
    let mut only_args = false;
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].as_str();
        if only_args || !a.starts_with('-') || a == "-" {
            positional.push((i, a));
        } else if a == "--" {
            only_args = true;
        } else if a == "--symbolic" || a.starts_with("--sym") {
            symbolic = true;
        } else if let Some(d) = a.strip_prefix("--target-directory=") {
            into = Some(d.to_string());
        } else if a == "-t" || a.starts_with("--target") {
            into = argv.get(i + 1).cloned();
            i += 1;
        } else if !a.starts_with("--") {
            let letters = &a[1..];
            if let Some(k) = letters.find('t') {
                symbolic |= letters[..k].contains('s');
                into = Some(letters[k + 1..].to_string())
                    .filter(|d| !d.is_empty())
                    .or_else(|| {
                        i += 1;
                        argv.get(i).cloned()
                    });
            } else {
                symbolic |= letters.contains('s');
            }
        }
        i += 1;
    }
    if !symbolic || positional.is_empty() {
        return Vec::new();
    }
    let (targets, dir): (&[(usize, &str)], String) = match into {
        Some(d) => (&positional[..], d),
        None if positional.len() == 1 => (&positional[..], ".".into()),
        None => {
            let ((_, last), targets) = positional.split_last().unwrap_or((&(0, "."), &[]));
            let dir = if positional.len() > 2 || last.ends_with('/') {
                last.to_string()
            } else {
                Path::new(last)
                    .parent()
                    .map(|p| p.to_string_lossy().into_owned())
                    .filter(|p| !p.is_empty())
                    .unwrap_or_else(|| ".".into())
            };
            (targets, dir)
        }
    };
    // Absolute targets are judged by the ordinary check of the argument.
    targets
        .iter()
        .filter(|(_, t)| !t.starts_with('/'))
        .map(|(i, t)| (*i, format!("{}/{t}", dir.trim_end_matches('/'))))
        .collect()
}

/// Programs that write the files they are given, or change their metadata
/// (mode, owner, ACLs, attributes, times): each argument that lands in git's
/// metadata is judged as a write there ([`Boundary::git_metadata`]).
fn writes_or_changes_files(program: &str) -> bool {
    matches!(
        program,
        "cp" | "mv"
            | "ln"
            | "install"
            | "rsync"
            | "tee"
            | "touch"
            | "truncate"
            | "mkdir"
            | "shred"
            | "chmod"
            | "chown"
            | "chgrp"
            | "setfacl"
            | "setfattr"
            | "chattr"
            | "chcon"
            | "vi"
            | "vim"
            | "nvim"
            | "nano"
            | "emacs"
            | "ed"
            | "ex"
    )
}

/// Whether sed or perl edits its files in place: `-i` however spelled, as the
/// knowledge base reads it (`-si`, `-ni`, `-i.bak`, `--in`, `--in-p=.b`).
fn edits_in_place(program: &str, normalized: Option<&Normalized<'_>>) -> bool {
    matches!(program, "sed" | "gsed" | "perl")
        && normalized.is_some_and(|n| {
            n.words
                .iter()
                .any(|w| w.owner().is_some() && w.key().as_deref() == Some("-i"))
        })
}

/// The operand of chmod, chown or chgrp that is the new mode or owner, not a
/// file (`+x`, `755`, `u=rw,go-w`, `user:group`): the first word that is no
/// option (for chmod, a `-x` that reads as a mode is one too), unless
/// `--reference` gives it instead.
fn mode_operand(program: &str, argv: &[String]) -> Option<usize> {
    if !matches!(program, "chmod" | "chown" | "chgrp")
        || argv.iter().any(|a| a.starts_with("--reference"))
    {
        return None;
    }
    let symbolic = |a: &str| {
        a.split(',').all(|clause| {
            let ops = clause.trim_start_matches(['u', 'g', 'o', 'a']);
            ops.starts_with(['+', '-', '=']) && ops.chars().all(|c| "+-=rwxXstugo".contains(c))
        })
    };
    let mut only_operands = false;
    for (i, a) in argv.iter().enumerate().skip(1) {
        if !only_operands && a == "--" {
            only_operands = true;
            continue;
        }
        if program == "chmod" && !only_operands && a.starts_with('-') && symbolic(a) {
            return Some(i);
        }
        if only_operands || !a.starts_with('-') {
            return Some(i);
        }
    }
    None
}

/// 7-Zip's command (its first word that is no switch, `x`) and its switches
/// (`-o.git`), as 7-Zip reads them: switches anywhere until `--`, each with
/// its value attached, and both in any case.
fn seven_zip(argv: &[String]) -> (Option<String>, Vec<&str>) {
    let mut command = None;
    let mut switches = Vec::new();
    let mut only_args = false;
    for a in argv.iter().skip(1) {
        if !only_args && a == "--" {
            only_args = true;
        } else if !only_args && a.len() > 1 && a.starts_with('-') {
            switches.push(&a[1..]);
        } else if command.is_none() {
            command = Some(a.to_ascii_lowercase());
        }
    }
    (command, switches)
}

/// Why an extractor may write outside the directory it writes into: it
/// keeps a member's absolute name (`/tmp/.gitconfig`) as it is.
fn absolute_members(
    program: &str,
    argv: &[String],
    normalized: Option<&Normalized<'_>>,
) -> Option<&'static str> {
    let words = normalized.map_or(&[][..], |n| &n.words[..]);
    let has = |key: &str| words.iter().any(|w| w.key().as_deref() == Some(key));
    match program {
        "cpio" if has("-i") && !has("-t") && !has("--to-stdout") => {
            (!has("--no-absolute-filenames")).then_some(
                "GNU cpio keeps each member's absolute name unless given `--no-absolute-filenames`",
            )
        }
        "pax" if has("-r") && !has("-w") => Some(
            "pax writes each member at the name the archive gives it, an absolute one included",
        ),
        "7z" | "7za" | "7zr" | "7zz" => {
            let (command, switches) = seven_zip(argv);
            (matches!(command.as_deref(), Some("x" | "e"))
                && switches
                    .iter()
                    .any(|s| s.to_ascii_lowercase().starts_with("spf")))
            .then_some("`-spf` keeps each member's absolute path")
        }
        _ => None,
    }
}

/// Where an extractor writes files named by its input (`tar -x`, `unzip`,
/// `ar x`, `cmake -E tar x`, `patch`, `cpio -i`/`-p`, `7z x`/`e`, `pax -r`):
/// its target directories as written, `.` for the working directory.
fn extraction_dirs(
    program: &str,
    argv: &[String],
    normalized: Option<&Normalized<'_>>,
) -> Vec<String> {
    let words = normalized.map_or(&[][..], |n| &n.words[..]);
    let has = |key: &str| words.iter().any(|w| w.key().as_deref() == Some(key));
    let operands = || {
        words.iter().filter_map(|w| match w {
            Word::Arg { text, .. } => Some(text.to_string()),
            _ => None,
        })
    };
    let values = |key: &str| -> Vec<String> {
        words
            .iter()
            .filter(|w| w.key().as_deref() == Some(key))
            .filter_map(|w| match w {
                Word::Short { value, .. } | Word::Long { value, .. } => value.map(String::from),
                _ => None,
            })
            .collect()
    };
    let (extracts, dir_key) = match program {
        "tar" | "gtar" | "bsdtar" => (has("-x"), "-C"),
        "unzip" => (
            !["-l", "-v", "-t", "-z", "-p", "-c", "-Z"]
                .iter()
                .any(|k| has(k)),
            "-d",
        ),
        "patch" => (true, "-d"),
        // ar's operation is its first word that is no `--option` (`x`, `xv`, `-x`).
        "ar" | "gcc-ar" | "llvm-ar" => (
            argv.iter()
                .skip(1)
                .find(|a| !a.starts_with("--"))
                .is_some_and(|op| op.trim_start_matches('-').contains('x')),
            "--output",
        ),
        "cmake" => (
            argv.get(1).map(String::as_str) == Some("-E")
                && argv.get(2).map(String::as_str) == Some("tar")
                && argv.get(3).is_some_and(|op| op.contains('x')),
            "",
        ),
        // Copy-in writes into `-D` (or here); copy-pass into its operand,
        // after `-D` too, so both are judged.
        "cpio" if has("-p") => {
            let mut dirs = values("-D");
            dirs.extend(operands().take(1));
            return dirs;
        }
        "cpio" => (has("-i") && !has("-t") && !has("--to-stdout"), "-D"),
        // Read mode writes here; read-write (copy) mode into its last operand.
        "pax" if has("-r") && has("-w") => return operands().next_back().into_iter().collect(),
        "pax" => (has("-r"), ""),
        "7z" | "7za" | "7zr" | "7zz" => {
            let (command, switches) = seven_zip(argv);
            if !matches!(command.as_deref(), Some("x" | "e")) {
                return Vec::new();
            }
            // `-o` takes its value attached; the last one counts, and an
            // empty one (`-o dir` is `-o` and an archive name) is here.
            let out = switches
                .iter()
                .rev()
                .find_map(|s| s.strip_prefix('o').or_else(|| s.strip_prefix('O')))
                .filter(|d| !d.is_empty());
            return vec![out.map_or_else(|| ".".to_string(), String::from)];
        }
        _ => (false, ""),
    };
    if !extracts {
        return Vec::new();
    }
    let dirs = if dir_key.is_empty() {
        Vec::new()
    } else {
        values(dir_key)
    };
    if dirs.is_empty() {
        vec![".".to_string()]
    } else {
        dirs
    }
}

/// The backup suffix of sed's or perl's in-place edit (`-i.bak`,
/// `--in-place=bak/*`); none when the edit keeps no backup (`-i`).
fn in_place_suffix<'a>(normalized: Option<&'a Normalized<'_>>) -> Option<&'a str> {
    normalized?
        .words
        .iter()
        .filter(|w| w.owner().is_some() && w.key().as_deref() == Some("-i"))
        .filter_map(|w| match w {
            Word::Short { value, .. } | Word::Long { value, .. } => *value,
            _ => None,
        })
        .rfind(|v| !v.is_empty())
}

/// Where sed or perl keeps the original of a file it edits in place: each
/// `*` of the suffix stands for the file's name as written (`bak/*` keeps
/// `d/f` as `bak/d/f`), and a suffix without one follows the name (`d/f.bak`).
/// Relative to the working directory; GNU sed 4.9 and perl 5.36 both do this.
fn backup_path(suffix: &str, operand: &str) -> String {
    if suffix.contains('*') {
        suffix.replace('*', operand)
    } else {
        format!("{operand}{suffix}")
    }
}

/// Read or write, for the argument at an index of this program's argv.
fn arg_access<'a>(
    program: &'a str,
    argv: &'a [String],
    in_place: bool,
) -> impl Fn(usize) -> Access + 'a {
    let last = argv.len().saturating_sub(1);
    move |i| match program {
        "cp" | "install" | "ln" => {
            if i == last {
                Access::Write
            } else {
                Access::Read
            }
        }
        "sed" | "gsed" | "perl" if in_place => Access::Write,
        // Where these write (`sort -o`, uniq's and xxd's second operand) the
        // knowledge base names the path.
        "sed" | "gsed" | "sort" | "uniq" => Access::Read,
        p if shell::reads_only(p) => Access::Read,
        _ => Access::Write,
    }
}

/// What a path finding adds when the line may stand in more than one working
/// directory here: the model sees which one fails and how to keep to the other.
fn one_of_cwds(cwd: &Path, n: usize) -> String {
    format!(
        "; that is with the working directory {}, one of the {n} the line may have here \
         (an earlier `cd` may fail or be skipped and the line goes on; `cd DIR && …` runs \
         what follows only where the `cd` worked)",
        cwd.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_sh_matches_them() {
        let m = |p: &str, n: &str| shell_match(p.as_bytes(), n.as_bytes());
        assert!(m(".?", ".."));
        assert!(m(".*", ".."));
        assert!(m(".[.]", ".."));
        assert!(m(".[!a]", ".."));
        assert!(!m("*", ".."), "a leading dot only by a literal one");
        assert!(!m("?.", ".."));
        assert!(!m(".env*", ".."));
        assert!(m("e?", "el"));
        assert!(m("*.py", "a.py"));
        assert!(!m("*.py", "a.pyc"));
        assert!(m("[a-c]x", "bx"));
        assert!(!m("[!a-c]x", "bx"));
        assert!(m("[]]", "]"));
        assert!(m("a[", "a["));
        assert!(m("\\*", "*"));
        assert!(!m("\\*", "x"));
        assert!(m("*a*b*c", "xxaxxbxxc"));
        // Many stars against a long name stay cheap.
        let long = "a".repeat(255);
        assert!(!m(&format!("{}b", "*a".repeat(40)), &long));
    }

    #[test]
    fn a_pattern_names_what_the_shell_would_put_in_its_place() {
        let t = tempfile::tempdir().unwrap();
        let ws = t.path();
        std::fs::create_dir(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/a.py"), "").unwrap();
        std::fs::write(ws.join("src/b.py"), "").unwrap();
        std::os::unix::fs::symlink("/etc", ws.join("el")).unwrap();
        let mut got = glob_paths(ws, "src/*.py").unwrap();
        got.sort();
        assert_eq!(got, ["src/a.py", "src/b.py"]);
        assert_eq!(glob_paths(ws, "e?/hostname").unwrap(), ["el/hostname"]);
        let mut dots = glob_paths(ws, ".?").unwrap();
        dots.sort();
        assert_eq!(dots, [".."]);
        assert!(glob_paths(ws, "nothing*").unwrap().is_empty());
        for i in 0..300 {
            std::fs::write(ws.join(format!("f{i}")), "").unwrap();
        }
        assert!(glob_paths(ws, "f*").is_none(), "more than GLOB_MAX");
    }

    #[test]
    fn a_path_attached_to_an_opaque_option_is_a_candidate() {
        assert_eq!(path_candidates("-o../x", true), ["../x"]);
        assert_eq!(path_candidates("-I/usr/include", true), ["/usr/include"]);
        assert!(path_candidates("-obuild/out", true).is_empty());
        assert_eq!(path_candidates("-o./out", true), ["./out"]);
        assert_eq!(path_candidates("-o~/x", true), ["~/x"]);
        assert!(path_candidates("-Isrc", true).is_empty());
        assert!(path_candidates("-a..b", true).is_empty());
        assert!(path_candidates("--out/x", true).is_empty());
        // Options the knowledge base reads are its business (`awk -F/`).
        assert!(path_candidates("-F/", false).is_empty());
        assert_eq!(path_candidates("--out=/x", false), ["/x"]);
    }

    /// The trace's details are built only when explaining; both paths decide alike.
    #[test]
    fn explain_traces_every_step_and_agrees_with_decide() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("README.md"), "hi").unwrap();
        let policy = crate::load::builtin_default(&root);
        let request = Request::shell("cat README.md && cat /etc/passwd", &root);
        let e = explain(&policy, &request);
        assert_eq!(e.decision, decide(&policy, &request));
        assert_eq!(e.decision.decision, Verdict::Deny);
        let steps = |t: &[TraceEntry]| -> Vec<(Step, String)> {
            t.iter().map(|x| (x.step, x.outcome.clone())).collect()
        };
        assert_eq!(e.traces.len(), 2);
        assert_eq!(
            steps(&e.traces[0]),
            [
                (Step::Input, "pass".to_string()),
                (Step::Workspace, "pass".into()),
                (Step::Network, "pass".into()),
                (Step::Approval, "pass".into()),
                (Step::Allowlist, "allow".into()),
            ]
        );
        assert!(e.traces[0].iter().all(|x| !x.detail.is_empty()));
        assert!(e.traces[0][4].detail.contains("allowlisted"));
        assert_eq!(
            steps(&e.traces[1]),
            [
                (Step::Input, "pass".to_string()),
                (Step::Workspace, "deny".into()),
            ]
        );
        assert!(e.traces[1][1].detail.contains("outside the workspace"));
    }
}
