//! `airlock check`: judge a command against the policy without running it. The
//! decision is recorded in the audit log (`operation: "check"`), as every check
//! through the API is.
//!
//! Exit status: 0 allow, 1 deny, 3 approval_required, 2 usage or policy error,
//! or a log that cannot be written.

use airlock_policy::{gate, Command, Decision, Request, Verdict};
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(
    override_usage = "airlock check [--policy FILE] [--cwd DIR] [--json] -- PROG [ARG]...\n       airlock check [--policy FILE] [--cwd DIR] [--json] -c 'SHELL STRING'"
)]
pub struct Args {
    /// Policy file (else $AIRLOCK_POLICY, else ./airlock.toml, else the built-in default).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Directory the command would start in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Print the decision as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// A shell string to judge (parsed as bash).
    #[arg(short = 'c', value_name = "SHELL STRING", conflicts_with = "argv")]
    pub command: Option<OsString>,
    /// The argv to judge (after `--`).
    #[arg(last = true, value_name = "PROG ARG")]
    pub argv: Vec<OsString>,
}

/// The exit status for a verdict.
pub fn exit_code(v: Verdict) -> i32 {
    match v {
        Verdict::Allow => 0,
        Verdict::Deny => 1,
        Verdict::ApprovalRequired => 3,
    }
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let here = std::env::current_dir()?;
    let cwd = match &args.cwd {
        Some(d) => std::path::absolute(here.join(d))?,
        None => here.clone(),
    };
    let loaded = match airlock_core::toolchains::resolve(args.policy.as_deref(), &here) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("airlock: policy error:\n{e}");
            return Ok(2);
        }
    };
    let policy = loaded.policy;
    // What was asked, as a request; text that is not UTF-8 is refused by the
    // gate's input step and recorded as sent (lossily).
    let lossy = |s: &OsString| s.to_string_lossy().into_owned();
    let (request, refusal) = match (&args.command, args.argv.is_empty()) {
        (Some(text), _) => {
            let command = Command::Shell {
                command: lossy(text),
            };
            let refusal = text
                .to_str()
                .is_none()
                .then(|| gate::decide_shell_bytes(&policy, text.as_encoded_bytes(), &cwd));
            (command, refusal)
        }
        (None, false) => {
            let bad = args.argv.iter().position(|a| a.to_str().is_none());
            let refusal = bad.map(|i| {
                gate::reject(
                    &policy,
                    format!("argument {i} of the command is not valid UTF-8; send text"),
                )
            });
            let argv = args.argv.iter().map(lossy).collect();
            (Command::Argv { argv }, refusal)
        }
        (None, true) => {
            eprintln!("airlock check: give a command after `--` or a shell string with -c");
            return Ok(2);
        }
    };
    let request = Request {
        command: request,
        cwd,
        loosening: Default::default(),
    };
    // Every check is on the audit record, as through the API (grants of this
    // user apply, as they would to `airlock run`). No record, no answer.
    let recorded = crate::serve::backend::open_engine().and_then(|engine| {
        let caller = airlock_core::Caller::cli();
        Ok(match refusal {
            Some(decision) => engine.record_check(&caller, &policy, &request, decision)?,
            None => engine.check(&caller, &policy, &request)?,
        })
    });
    let decision: Decision = match recorded {
        Ok(checked) => checked.decision,
        Err(e) => {
            // A malformed AIRLOCK_AUDIT_* (or AIRLOCK_APPROVAL_TTL) names its
            // variable itself; the state directory is not what is wrong then.
            let bad_variable = e.chain().any(|c| {
                matches!(
                    c.downcast_ref::<airlock_core::LedgerError>(),
                    Some(airlock_core::LedgerError::Config { .. })
                ) || matches!(
                    c.downcast_ref::<airlock_core::EngineError>(),
                    Some(airlock_core::EngineError::Ledger(
                        airlock_core::LedgerError::Config { .. }
                    ))
                )
            });
            eprintln!(
                "airlock: error: the check could not be recorded in the audit log, so it is not answered: {}\nHint: {}",
                airlock_core::terminal::escape_line(&format!("{e:#}")),
                if bad_variable {
                    "fix or unset the environment variable named above"
                } else {
                    "set AIRLOCK_STATE_DIR to a writable directory"
                }
            );
            return Ok(2);
        }
    };
    let text = if args.json {
        airlock_core::terminal::json_safe(&serde_json::to_string(&decision)?).into_owned() + "\n"
    } else {
        human(&decision)
    };
    // A closed stdout (`| head`) must not turn a decision into a crash.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
    Ok(exit_code(decision.decision))
}

fn human(d: &Decision) -> String {
    let rule = d
        .rule
        .as_deref()
        .map(|r| format!(" [{r}]"))
        .unwrap_or_default();
    use airlock_core::terminal::escape_line;
    // The reason and the segments quote the command: agent text.
    let mut out = format!(
        "{}: {}{}\n",
        d.decision.as_str(),
        escape_line(&d.reason),
        escape_line(&rule)
    );
    if d.segments.len() > 1 {
        for s in &d.segments {
            out.push_str(&format!(
                "  {:<17} {}\n",
                s.decision.as_str(),
                escape_line(&airlock_policy::shell::words::short(&s.argv.join(" ")))
            ));
        }
    }
    out
}
