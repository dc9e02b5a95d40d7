//! `airlock changes RUN_ID` and `airlock apply RUN_ID`: a kept change set
//! (an overlay run's changes that were not applied), shown and applied later
//! through the same return path a run uses, without running the command again.

use airlock_core::apply::{ApplyResponse, ApplyStatus};
use airlock_core::engine::RunOptions;
use airlock_core::terminal::{escape_line, json_safe};
use anyhow::Context;
use std::path::PathBuf;

/// Exit status when nothing was applied (denied, held, refused).
pub const NOT_APPLIED: i32 = 1;

#[derive(clap::Args)]
#[command(after_help = "\
Without RUN_ID, lists the kept change sets (newest last). Exit status: 0
shown, listed or discarded; 1 no such kept set (applied, discarded, expired,
or another tenant's); 2 usage or setup error.")]
pub struct ChangesArgs {
    /// The run's request id (`request_id` in `airlock run --json`); without
    /// it, the kept sets are listed.
    run_id: Option<String>,
    /// Remove the kept set without applying any of it (recorded in the audit log).
    #[arg(long, requires = "run_id")]
    discard: bool,
    /// Policy file (default: $AIRLOCK_POLICY, ./airlock.toml, or the built-in default).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Directory the policy is looked up from (default: the current directory).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Print one JSON object instead of the report.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
#[command(after_help = "\
Exit status: 0 applied; 1 nothing applied (denied, over a limit, or the kept
set no longer matches); 75 changes need a person (an approval is pending, was
denied, or could not be used); 2 usage or setup error.")]
pub struct ApplyArgs {
    /// The run's request id (`request_id` in `airlock run --json`).
    run_id: String,
    /// Policy file (default: $AIRLOCK_POLICY, ./airlock.toml, or the built-in default).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Directory the policy is looked up from (default: the current directory).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Use this approved approval of the change set.
    #[arg(long, value_name = "ID")]
    approval: Option<String>,
    /// If changes need a person, wait up to TIMEOUT (default 15m) for an answer.
    #[arg(long, value_name = "TIMEOUT", num_args = 0..=1, default_missing_value = "15m", require_equals = true)]
    wait_approval: Option<String>,
    /// Print one JSON object instead of the report.
    #[arg(long)]
    json: bool,
}

fn open(
    policy: Option<&PathBuf>,
    cwd: Option<&PathBuf>,
) -> anyhow::Result<(airlock_core::Engine, airlock_policy::Policy)> {
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let cwd = match cwd {
        Some(d) => here.join(d),
        None => here.clone(),
    };
    let cwd = std::fs::canonicalize(&cwd).with_context(|| format!("--cwd {}", cwd.display()))?;
    let policy_path = policy.map(|p| here.join(p));
    let loaded = airlock_core::toolchains::resolve(policy_path.as_deref(), &cwd)?;
    for w in &loaded.warnings {
        eprintln!("airlock: warning: {w}");
    }
    let state_dir = airlock_core::resolve_state_dir()?;
    airlock_core::state::ensure_private_dir(&state_dir)?;
    // No command runs: the factory is never asked to open a backend.
    let opts = airlock_sandbox::OpenOptions::new(state_dir.clone());
    let engine = airlock_core::Engine::open(airlock_core::EngineConfig::per_policy(
        state_dir.clone(),
        opts,
    ))
    .with_context(|| format!("cannot open the state directory {}", state_dir.display()))?;
    Ok((engine, loaded.policy))
}

pub fn changes(args: ChangesArgs) -> anyhow::Result<i32> {
    let (engine, policy) = open(args.policy.as_ref(), args.cwd.as_ref())?;
    let caller = airlock_core::Caller::cli();
    let Some(run_id) = &args.run_id else {
        return list(&engine, &caller, args.json);
    };
    let r = if args.discard {
        engine.discard_kept(&caller, &policy, run_id)?
    } else {
        engine.kept_changes(&caller, &policy, run_id)?
    };
    print(&r, args.json)?;
    Ok(if r.status == ApplyStatus::Refused {
        NOT_APPLIED
    } else {
        0
    })
}

/// The caller's kept sets: one line each, or a JSON array.
fn list(
    engine: &airlock_core::Engine,
    caller: &airlock_core::Caller,
    json: bool,
) -> anyhow::Result<i32> {
    let sets = engine.kept_list(caller);
    if json {
        println!("{}", json_safe(&serde_json::to_string_pretty(&sets)?));
        return Ok(0);
    }
    if sets.is_empty() {
        eprintln!("airlock: no kept change sets");
    }
    for k in &sets {
        let command = match &k.command {
            airlock_policy::Command::Shell { command } => command.clone(),
            airlock_policy::Command::Argv { argv } => argv.join(" "),
            airlock_policy::Command::Code { language, .. } => format!("({language} code)"),
        };
        println!(
            "{}  {}  {:>9} bytes  {}",
            k.run_id,
            airlock_core::clock::format_rfc3339(k.created_ms),
            k.bytes,
            escape_line(&command)
        );
    }
    Ok(0)
}

pub fn apply(args: ApplyArgs) -> anyhow::Result<i32> {
    let (engine, policy) = open(args.policy.as_ref(), args.cwd.as_ref())?;
    let wait_approval = match &args.wait_approval {
        Some(t) => Some(airlock_core::clock::parse_duration(t).with_context(|| {
            format!("--wait-approval takes a duration such as 90s or 15m, not `{t}`")
        })?),
        None => None,
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
        approval_id: args.approval.clone(),
        wait_approval,
        on_pending: Some(&mut announce),
        ..Default::default()
    };
    let caller = airlock_core::Caller::cli();
    let r = engine.apply_kept(&caller, &policy, &args.run_id, options)?;
    print(&r, args.json)?;
    Ok(status_of(&r))
}

/// The exit status of an apply.
pub fn status_of(r: &ApplyResponse) -> i32 {
    match r.status {
        ApplyStatus::Applied | ApplyStatus::Report | ApplyStatus::Discarded => 0,
        ApplyStatus::NotApplied | ApplyStatus::Refused => NOT_APPLIED,
        ApplyStatus::ApprovalPending
        | ApplyStatus::ApprovalDenied
        | ApplyStatus::ApprovalRefused => super::run::exit::APPROVAL_REQUIRED,
    }
}

fn print(r: &ApplyResponse, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", json_safe(&serde_json::to_string_pretty(r)?));
        return Ok(());
    }
    report_to_terminal(r);
    Ok(())
}

/// The escaped report of a kept set or its apply (also printed by `airlock
/// run` for a parked change set).
pub fn report_to_terminal(r: &ApplyResponse) {
    if r.status == ApplyStatus::Refused && r.change_summary.is_none() {
        eprintln!("airlock: refused: {}", escape_line(&r.message));
        return;
    }
    eprintln!(
        "airlock: run {}: {}",
        escape_line(&r.run_id),
        escape_line(&r.message)
    );
    let total = r
        .change_summary
        .as_ref()
        .map(|s| s.total - s.discarded)
        .unwrap_or(r.changes.len() as u64);
    for c in r.changes.iter().take(50) {
        eprintln!("  {}", airlock_core::apply::change_line(c));
    }
    if total > 50 {
        eprintln!("  … and {} more (--json lists the first 1000)", total - 50);
    }
    if !r.set_sha256.is_empty() {
        eprintln!("airlock: change set sha256 {}", r.set_sha256);
    }
    for v in &r.violations {
        eprintln!("airlock: {}: {}", v.kind.as_str(), escape_line(&v.detail));
    }
}
