//! `airlock run`: judge a command, and run it in a disposable sandbox if allowed.

use airlock_core::engine::{RunOptions, RunResponse, RunStatus};
use airlock_policy::{Command, Request};
use airlock_sandbox::native::NativeBackend;
use airlock_sandbox::{KillReason, OutputSink};
use anyhow::Context;
use std::io::Write;
use std::path::PathBuf;

/// Exit statuses of `airlock run` other than the command's own.
pub mod exit {
    /// The approval a run asked for could not be used, or a person denied it.
    pub const APPROVAL_REQUIRED: i32 = 75;
    /// The policy gate denied the command; nothing ran.
    pub const DENIED: i32 = 77;
    /// Killed at the output cap.
    pub const OUTPUT: i32 = 120;
    /// Killed at the CPU-time limit.
    pub const CPU_TIME: i32 = 121;
    /// Killed at the pids limit (fork bomb).
    pub const PIDS: i32 = 122;
    /// Killed by the memory limit (OOM).
    pub const MEMORY: i32 = 123;
    /// Killed at the wall-clock timeout.
    pub const TIMEOUT: i32 = 124;
    /// The sandbox could not be built (a layer could not be applied); nothing ran.
    pub const SANDBOX_ERROR: i32 = 125;
}

const AFTER_HELP: &str = "\
Exit status:
  the command's own exit status when it exits by itself;
  128+N  when the command is killed by signal N (as in a shell);
  77     the policy gate denied the command (its reason is printed; nothing ran);
  75     the command needs a person's approval (nothing ran);
  124    killed at the wall-clock timeout (limits.timeout);
  123    killed by the memory limit (limits.memory);
  122    killed at the pids limit (limits.pids);
  121    killed at the CPU-time limit (limits.cpu_time);
  120    killed at the output cap (limits.output);
  125    the sandbox could not be built: a layer could not be applied (nothing ran);
  2      airlock's own usage or setup error.
A command may itself exit with one of these numbers: --json tells them apart.";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Policy file (default: $AIRLOCK_POLICY, ./airlock.toml, or the built-in default).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Working directory of the command (default: the current directory).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Print one JSON object with the decision and the outcome instead of streaming.
    #[arg(long)]
    json: bool,
    /// Copy the overlay workspace's changes back after the run.
    #[arg(long)]
    apply: bool,
    /// Use this approved approval.
    #[arg(long, value_name = "ID")]
    approval: Option<String>,
    /// If the command needs approval, wait up to TIMEOUT (default 15m) for a
    /// person to answer (`airlock approvals approve ID`), then run it.
    #[arg(long, value_name = "TIMEOUT", num_args = 0..=1, default_missing_value = "15m", require_equals = true)]
    wait_approval: Option<String>,
    /// If the command needs approval and stdin is a terminal, ask here.
    #[arg(long)]
    ask: bool,
    /// A shell command line (run with bash -c, judged segment by segment).
    #[arg(short = 'c', value_name = "SHELL", conflicts_with = "argv")]
    command: Option<String>,
    /// The program and its arguments (after `--`).
    #[arg(last = true, value_name = "PROG ARG")]
    argv: Vec<String>,
}

/// Streams the command's output to this process's stdout and stderr as it comes.
struct Live;

impl OutputSink for Live {
    fn stdout(&mut self, chunk: &[u8]) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(chunk);
        let _ = out.flush();
    }
    fn stderr(&mut self, chunk: &[u8]) {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(chunk);
        let _ = err.flush();
    }
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let cwd = match &args.cwd {
        Some(d) => here.join(d),
        None => here.clone(),
    };
    let cwd = std::fs::canonicalize(&cwd).with_context(|| format!("--cwd {}", cwd.display()))?;
    let policy_path = args.policy.as_ref().map(|p| here.join(p));
    let loaded = airlock_policy::load::resolve(policy_path.as_deref(), &cwd)?;
    for w in &loaded.warnings {
        eprintln!("airlock: warning: {w}");
    }
    let policy = loaded.policy;
    let command = match (&args.command, args.argv.is_empty()) {
        (Some(c), true) => Command::Shell { command: c.clone() },
        (None, false) => Command::Argv {
            argv: args.argv.clone(),
        },
        _ => anyhow::bail!("give either -c 'SHELL COMMAND' or -- PROG ARG..."),
    };
    let request = Request {
        command,
        cwd,
        loosening: Default::default(),
    };

    let state_dir = airlock_core::resolve_state_dir()?;
    airlock_core::state::ensure_private_dir(&state_dir)?;
    let mut backend = NativeBackend::current_exe()?;
    backend.runs_dir = state_dir.join("runs");
    let engine = airlock_core::Engine::open(airlock_core::EngineConfig::new(
        state_dir.clone(),
        Box::new(backend),
    ))
    .with_context(|| format!("cannot open the state directory {}", state_dir.display()))?;

    // Approval waiting and asking (audit helper, issue 4).
    let wait_approval = match &args.wait_approval {
        Some(t) => Some(airlock_core::clock::parse_duration(t).with_context(|| {
            format!("--wait-approval takes a duration such as 90s or 15m, not `{t}`")
        })?),
        None => None,
    };
    let mut prompt = if args.ask {
        let prompt = super::approvals::TtyPrompt::new();
        if prompt.is_none() {
            eprintln!("airlock: --ask: stdin is not a terminal, so nobody can be asked here");
        }
        prompt
    } else {
        None
    };
    let mut announce = |a: &airlock_core::approvals::Approval| {
        if wait_approval.is_some() {
            eprintln!(
                "airlock: waiting for approval {} until {} (a person runs `airlock approvals approve {}`)",
                a.id, a.expires_at, a.id
            );
        }
    };
    let options = RunOptions {
        wait_approval,
        prompt: prompt
            .as_mut()
            .map(|p| p as &mut dyn airlock_core::ApprovalPrompt),
        on_pending: Some(&mut announce),
        approval_id: args.approval.clone(),
        apply: if args.apply { Some(true) } else { None },
        ..Default::default()
    };
    let caller = airlock_core::Caller::cli();
    let mut discard = airlock_sandbox::backend::Discard;
    let mut live = Live;
    let sink: &mut dyn OutputSink = if args.json { &mut discard } else { &mut live };
    let response = match engine.run(&caller, &policy, &request, options, sink) {
        Ok(r) => r,
        Err(airlock_core::EngineError::Sandbox(e)) => {
            if args.json {
                println!(
                    "{}",
                    serde_json::json!({ "error": "sandbox", "detail": e.to_string() })
                );
            } else {
                eprintln!("airlock: sandbox error: {e}");
            }
            return Ok(exit::SANDBOX_ERROR);
        }
        Err(e) => return Err(e.into()),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json_view(&response))?);
    } else {
        report_to_terminal(&response);
    }
    Ok(status_of(&response))
}

/// The exit status for a response (see [`exit`]).
pub fn status_of(r: &RunResponse) -> i32 {
    match r.status {
        RunStatus::Denied => exit::DENIED,
        RunStatus::ApprovalPending | RunStatus::ApprovalDenied | RunStatus::ApprovalRefused => {
            exit::APPROVAL_REQUIRED
        }
        RunStatus::Ran => {
            let Some(o) = &r.outcome else {
                return exit::SANDBOX_ERROR;
            };
            match o.killed_by {
                Some(KillReason::Timeout) => exit::TIMEOUT,
                Some(KillReason::Memory) => exit::MEMORY,
                Some(KillReason::Pids) => exit::PIDS,
                Some(KillReason::CpuTime) => exit::CPU_TIME,
                Some(KillReason::Output) => exit::OUTPUT,
                None => match (o.exit_code, o.signal) {
                    (Some(c), _) => c,
                    (None, Some(s)) => 128 + s,
                    (None, None) => exit::SANDBOX_ERROR,
                },
            }
        }
    }
}

fn json_view(r: &RunResponse) -> serde_json::Value {
    let o = r.outcome.as_ref();
    serde_json::json!({
        "request_id": r.request_id,
        "status": r.status.as_str(),
        "decision": r.decision.decision.as_str(),
        "reason": r.decision.reason,
        "rule": r.decision.rule,
        "message": r.message,
        "approval": r.approval,
        "exit_code": o.and_then(|o| o.exit_code),
        "signal": o.and_then(|o| o.signal),
        "killed_by": o.and_then(|o| o.killed_by),
        "duration_ms": o.map(|o| o.duration_ms),
        "cpu_ms": o.map(|o| o.cpu_ms),
        "peak_memory_bytes": o.map(|o| o.peak_memory_bytes),
        "stdout": o.map(|o| o.stdout.as_str()),
        "stderr": o.map(|o| o.stderr.as_str()),
        "truncated": o.map(|o| o.truncated),
        "changes": o.map(|o| &o.changes),
        "applied": o.map(|o| o.applied),
        "violations": o.map(|o| &o.violations),
        "audit_ids": r.audit_ids,
    })
}

fn report_to_terminal(r: &RunResponse) {
    match r.status {
        RunStatus::Ran => {}
        RunStatus::Denied => {
            eprintln!("airlock: denied: {}", r.decision.reason);
            return;
        }
        _ => {
            eprintln!("airlock: {}: {}", r.status.as_str(), r.message);
            return;
        }
    }
    let Some(o) = &r.outcome else { return };
    if o.truncated {
        eprintln!("airlock: output truncated at the limit");
    }
    if let Some(k) = o.killed_by {
        let what = match k {
            KillReason::Timeout => "the wall-clock timeout",
            KillReason::Memory => "the memory limit",
            KillReason::Pids => "the pids limit",
            KillReason::Output => "the output cap",
            KillReason::CpuTime => "the CPU-time limit",
        };
        eprintln!("airlock: killed by {what} after {} ms", o.duration_ms);
    }
    if !o.changes.is_empty() {
        let verb = if o.applied {
            "applied"
        } else {
            "discarded (rerun with --apply to keep them)"
        };
        eprintln!("airlock: {} workspace change(s) {verb}:", o.changes.len());
        for c in o.changes.iter().take(50) {
            let kind = match c.kind {
                airlock_sandbox::ChangeKind::Added => "added",
                airlock_sandbox::ChangeKind::Modified => "modified",
                airlock_sandbox::ChangeKind::Deleted => "deleted",
            };
            eprintln!("  {kind:8} {}", c.path);
        }
    }
    for v in &o.violations {
        eprintln!("airlock: {}: {}", v.kind, v.detail);
    }
}
