//! `airlock approvals list|show|approve|deny`, and the terminal prompt behind
//! `airlock run --ask`.

use airlock_core::approvals::{Approval, ApprovalStatus};
use airlock_core::audit::query::command_text;
use airlock_core::terminal::{escape_line, escape_text, json_safe};
use airlock_core::{ApprovalPrompt, Caller, Ledger, LedgerConfig, PromptAnswer};
use std::io::{BufRead, IsTerminal, Write};

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// List approvals (pending and approved by default).
    List {
        /// Also those denied, expired or used.
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// Show one approval in full: the exact command, cwd, policy and reasons.
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Approve a pending request; it may then run once, unchanged.
    Approve {
        id: String,
        /// Why (kept in the audit record).
        #[arg(long)]
        note: Option<String>,
    },
    /// Deny a pending request.
    Deny {
        id: String,
        #[arg(long)]
        note: Option<String>,
    },
}

pub fn open_ledger() -> anyhow::Result<Ledger> {
    let state_dir = airlock_core::resolve_state_dir()?;
    Ok(Ledger::open(&state_dir, LedgerConfig::default())?)
}

pub fn run(cmd: Cmd) -> anyhow::Result<i32> {
    let ledger = open_ledger()?;
    match cmd {
        Cmd::List { all, json } => {
            let approvals: Vec<Approval> = ledger
                .approvals()?
                .into_iter()
                .filter(|a| {
                    all || matches!(a.status, ApprovalStatus::Pending | ApprovalStatus::Approved)
                })
                .collect();
            if json {
                println!("{}", json_safe(&serde_json::to_string_pretty(&approvals)?));
            } else if approvals.is_empty() {
                println!(
                    "no approvals{}",
                    if all {
                        ""
                    } else {
                        " waiting (use --all for past ones)"
                    }
                );
            } else {
                println!(
                    "{:<16} {:<9} {:<25} {:<24} COMMAND",
                    "ID", "STATUS", "EXPIRES", "REQUESTED BY"
                );
                for a in &approvals {
                    // An apply approval names the change set, not a command to run.
                    let what = match &a.change_set {
                        Some(set) => format!(
                            "apply {} change(s) of run {} (made by: {})",
                            set.changes.len(),
                            set.run_id,
                            command_text(&a.request.command)
                        ),
                        None => command_text(&a.request.command),
                    };
                    println!(
                        "{:<16} {:<9} {:<25} {:<24} {}",
                        a.id,
                        a.status.as_str(),
                        a.expires_at,
                        super::audit::clip(&escape_line(&a.requested_by.to_string()), 24),
                        super::audit::clip(&escape_line(&what), 80)
                    );
                }
            }
            Ok(0)
        }
        Cmd::Show { id, json } => {
            let a = ledger.approval(&id)?;
            if json {
                println!("{}", json_safe(&serde_json::to_string_pretty(&a)?));
            } else {
                print!("{}", describe(&a));
            }
            Ok(0)
        }
        Cmd::Approve { id, note } => {
            let a = ledger.approve(&id, &Caller::cli(), note)?;
            if let Some(set) = &a.change_set {
                println!(
                    "approved {}: the change set of run {} (sha256 {}) may be applied once, exactly as reviewed, with `airlock apply {} --approval {}` until {}",
                    a.id, set.run_id, set.sha256, set.run_id, a.id, a.expires_at
                );
                return Ok(0);
            }
            println!(
                "approved {}: it may run once, as `airlock run --approval {} ...` with the same command, cwd and policy, until {}",
                a.id, a.id, a.expires_at
            );
            Ok(0)
        }
        Cmd::Deny { id, note } => {
            let a = ledger.deny(&id, &Caller::cli(), note)?;
            println!("denied {}", a.id);
            Ok(0)
        }
    }
}

/// Everything a person needs to decide: the full command, where, under which
/// policy, why the gate asked, who asked. Agent text is escaped: the person
/// answering must see exactly what would run, and the terminal must not act on it.
pub fn describe(a: &Approval) -> String {
    let e = |s: &str| escape_line(s).into_owned();
    let mut out = String::new();
    out.push_str(&format!("approval   {}\n", a.id));
    out.push_str(&format!("status     {}\n", a.status.as_str()));
    out.push_str(&format!(
        "requested  {} by {}\n",
        a.created_at,
        e(&a.requested_by.to_string())
    ));
    out.push_str(&format!("expires    {}\n", a.expires_at));
    out.push_str(&format!(
        "cwd        {}\n",
        e(&a.request.cwd.display().to_string())
    ));
    out.push_str(&format!(
        "policy     {} (sha256 {})\n",
        e(&a.policy_source),
        a.policy_sha256
    ));
    for reason in &a.reasons {
        out.push_str(&format!("reason     {}\n", e(reason)));
    }
    if let Some(set) = &a.change_set {
        // Lines are escaped when made; escape again for the terminal all the same.
        out.push_str(&format!(
            "apply      the kept change set of run {} (sha256 {}); nothing runs\n",
            set.run_id, set.sha256
        ));
        out.push_str("changes:\n");
        for line in &set.changes {
            out.push_str(&format!("    {}\n", e(line)));
        }
        out.push_str("made by the command:\n");
    } else {
        out.push_str("command:\n");
    }
    for line in escape_text(&command_text_full(&a.request.command)).split('\n') {
        out.push_str(&format!("    {line}\n"));
    }
    if a.change_set.is_none() {
        match &a.stdin {
            Some(stdin) => out.push_str(&format!(
                "stdin      {} bytes ({}); a run under the approval must send exactly these{}:\n    {}\n",
                stdin.bytes,
                stdin.sha256,
                if stdin.preview_truncated { " (the start shown)" } else { "" },
                e(&stdin.preview)
            )),
            None => out.push_str("stdin      none; a run under the approval must send none\n"),
        }
    }
    if !a.content.is_empty() {
        // Only the files named on the command line: what they import, source
        // or load is not pinned, and the person must know that.
        out.push_str(
            "pinned     files the command runs, which must still hold this (not what they import or load):\n",
        );
        for pin in &a.content {
            let name = pin.path.strip_prefix(&a.request.cwd).unwrap_or(&pin.path);
            out.push_str(&format!(
                "    {}  {}\n",
                e(&name.display().to_string()),
                e(&pin.content)
            ));
        }
    }
    if let Some(by) = &a.decided_by {
        out.push_str(&format!(
            "answered   {} by {}\n",
            a.decided_at.as_deref().unwrap_or("?"),
            e(&by.to_string())
        ));
    }
    if let Some(note) = &a.note {
        out.push_str(&format!("note       {}\n", e(note)));
    }
    if let Some(used) = &a.used_by {
        out.push_str(&format!(
            "used by    request {used} at {}\n",
            a.used_at.as_deref().unwrap_or("?")
        ));
    }
    out
}

fn command_text_full(command: &airlock_policy::Command) -> String {
    match command {
        airlock_policy::Command::Code { language, source } => {
            format!("<{language} code>\n{source}")
        }
        other => command_text(other),
    }
}

/// `airlock run --ask`: asks the person at the terminal. Only usable when stdin
/// is a terminal ([`TtyPrompt::new`] checks).
pub struct TtyPrompt {
    approver: Caller,
}

impl TtyPrompt {
    /// `None` when stdin is not a terminal: then nobody is there to ask.
    pub fn new() -> Option<TtyPrompt> {
        if !std::io::stdin().is_terminal() {
            return None;
        }
        let mut approver = Caller::cli();
        approver.name.push_str(" at the terminal");
        Some(TtyPrompt { approver })
    }
}

impl ApprovalPrompt for TtyPrompt {
    fn ask(&mut self, approval: &Approval) -> PromptAnswer {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "\nairlock: this command needs your approval\n{}",
            describe(approval)
        );
        let _ = write!(err, "Run it once? [y/N] ");
        let _ = err.flush();
        let mut line = String::new();
        let answered = std::io::stdin().lock().read_line(&mut line).is_ok();
        let yes = answered && matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes");
        if yes {
            PromptAnswer::Approve {
                note: Some("approved at the terminal (--ask)".into()),
            }
        } else {
            PromptAnswer::Deny {
                note: Some("denied at the terminal (--ask)".into()),
            }
        }
    }

    fn approver(&self) -> Caller {
        self.approver.clone()
    }
}
