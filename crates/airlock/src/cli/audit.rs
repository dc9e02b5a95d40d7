//! `airlock audit tail|show|query|verify|repair`: reading and checking the log.

use airlock_core::audit::query::{command_of, command_text, Filter};
use airlock_core::audit::record::{Event, TestEvent};
use airlock_core::audit::{self, Record};
use airlock_core::terminal::{escape_line, json_safe};
use airlock_core::{Ledger, LedgerConfig};
use anyhow::Context;
use std::io::Write;

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Print the newest records (and, with -f, new ones as they arrive).
    Tail {
        /// How many records to print.
        #[arg(short = 'n', long, default_value_t = 10)]
        lines: usize,
        /// Keep printing records as they are appended.
        #[arg(short = 'f', long)]
        follow: bool,
        /// One JSON record per line instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print one record (by record id, `a42`) or every record of a request,
    /// approval or grant (by its id), as JSON.
    Show { id: String },
    /// Search the log.
    Query {
        /// Only decisions with this verdict: allow, deny, approval_required.
        #[arg(long)]
        decision: Option<String>,
        /// Only records this recent (`1h`, `30m`) or since a time (`2026-11-29T10:00:00Z`).
        #[arg(long)]
        since: Option<String>,
        /// Only records whose command starts with these words (`git`, `git push`).
        #[arg(long)]
        command_prefix: Option<String>,
        /// Only records of this kind: decision, execution, approval, grant, repair.
        #[arg(long)]
        kind: Option<String>,
        /// Only records of this request id.
        #[arg(long)]
        request: Option<String>,
        /// At most this many (the newest).
        #[arg(long)]
        limit: Option<usize>,
        /// JSON lines instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Check the hash chain across every file; names the first bad record.
    /// With --key, also every checkpoint signature: a rewrite the key holder
    /// did not sign fails.
    Verify {
        #[arg(long)]
        json: bool,
        /// The operator's public key (PEM): checkpoints must verify with it, and
        /// at least one must exist.
        #[arg(long, value_name = "PUB")]
        key: Option<std::path::PathBuf>,
        /// Exported checkpoints (the export file, or `audit checkpoints` output
        /// kept elsewhere): each must match the log (needs --key).
        #[arg(long, value_name = "FILE", requires = "key")]
        checkpoints: Option<std::path::PathBuf>,
    },
    /// Make an ed25519 key pair for signing checkpoints: FILE (private, 0600;
    /// keep it outside the state directory) and FILE.pub (for `verify --key`).
    Keygen {
        #[arg(long, value_name = "FILE")]
        out: std::path::PathBuf,
    },
    /// Sign a checkpoint of the chain's head now, with the key named by
    /// AIRLOCK_AUDIT_SIGNING_KEY (for cron, or before shipping the log).
    Checkpoint,
    /// Print every checkpoint in the log, one JSON line each (to ship elsewhere
    /// and give back to `verify --checkpoints`).
    Checkpoints,
    /// Cut an incomplete last record left by a crashed writer (recording the
    /// repair); with --reanchor, also accept a log that no longer matches its
    /// head anchor, recording that too.
    Repair {
        #[arg(long)]
        reanchor: bool,
    },
    /// Test hook: append COUNT test records through the normal writer, printing
    /// each acknowledged record id once it is on disk.
    #[command(hide = true)]
    AppendTest {
        #[arg(long, default_value_t = 1)]
        count: u64,
        #[arg(long, default_value = "test")]
        writer: String,
        /// Make each record this many bytes larger (to widen the window in
        /// which a kill lands inside a write).
        #[arg(long, default_value_t = 0)]
        pad: usize,
    },
}

pub fn run(cmd: Cmd) -> anyhow::Result<i32> {
    let state_dir = airlock_core::resolve_state_dir()?;
    let dir = state_dir.join("audit");
    match cmd {
        Cmd::Tail {
            lines,
            follow,
            json,
        } => tail(&dir, lines, follow, json),
        Cmd::Show { id } => show(&dir, &id),
        Cmd::Query {
            decision,
            since,
            command_prefix,
            kind,
            request,
            limit,
            json,
        } => {
            let filter = Filter {
                decision: decision.as_deref().map(parse_verdict).transpose()?,
                since_ms: since.as_deref().map(parse_since).transpose()?,
                command_prefix,
                kind,
                request_id: request,
                limit,
            };
            let records = filter.apply(&dir)?;
            print_records(&records, json)?;
            Ok(0)
        }
        Cmd::Verify {
            json,
            key: None,
            checkpoints: _,
        } => verify(&dir, json),
        Cmd::Verify {
            json,
            key: Some(key),
            checkpoints,
        } => verify_with_key(&dir, json, &key, checkpoints.as_deref()),
        Cmd::Keygen { out } => {
            let (public, id) = airlock_core::audit::anchor::generate(&out)?;
            println!(
                "wrote {} (private, 0600) and {} (public); key id {id}\nKeep the private key outside the state directory and set AIRLOCK_AUDIT_SIGNING_KEY={} for airlock; give {} to `airlock audit verify --key`",
                out.display(),
                public.display(),
                out.display(),
                public.display()
            );
            Ok(0)
        }
        Cmd::Checkpoint => {
            let ledger = Ledger::open(&state_dir, LedgerConfig::default())?;
            if ledger.audit().config().anchor.is_none() {
                anyhow::bail!("no signing key: set AIRLOCK_AUDIT_SIGNING_KEY to the private key file (`airlock audit keygen --out FILE` makes one)");
            }
            match ledger.audit().checkpoint(true)? {
                Some(r) => println!("{}: signed the head a{}", r.id, r.seq - 1),
                None => println!("nothing new to sign: the last record is already a checkpoint"),
            }
            Ok(0)
        }
        Cmd::Checkpoints => {
            let mut out = std::io::stdout().lock();
            for r in audit::read_all(&dir)? {
                if let Event::Checkpoint(c) = &r.event {
                    writeln!(out, "{}", json_safe(&serde_json::to_string(c)?))?;
                }
            }
            Ok(0)
        }
        Cmd::Repair { reanchor } => {
            let before = audit::read_all(&dir)?.last().map_or(0, |r| r.seq);
            let log = if reanchor {
                let log = audit::AuditLog::open_unchecked(
                    &dir,
                    LedgerConfig::default().with_env_overrides()?.audit,
                )?;
                let record = log.reanchor()?;
                println!("accepted the log as it is; recorded as {}", record.id);
                log
            } else {
                // Opening cuts a torn tail and records the repair.
                audit::AuditLog::open(&dir, LedgerConfig::default().with_env_overrides()?.audit)?
            };
            drop(log);
            let repairs: Vec<Record> = audit::read_all(&dir)?
                .into_iter()
                .filter(|r| r.seq > before && matches!(r.event, Event::Repair(_)))
                .collect();
            for r in &repairs {
                let (_, what) = summary(r);
                println!("{}: {}", r.id, escape_line(&what));
            }
            if repairs.is_empty() && !reanchor {
                println!("nothing to repair");
            }
            Ok(0)
        }
        Cmd::AppendTest { count, writer, pad } => {
            let writer = format!("{writer}{}", " ".repeat(pad));
            let ledger = Ledger::open(&state_dir, LedgerConfig::default())?;
            let stdout = std::io::stdout();
            for n in 0..count {
                let record = ledger.audit().append(Event::Test(TestEvent {
                    writer: writer.clone(),
                    n,
                }))?;
                let mut out = stdout.lock();
                writeln!(out, "{}", record.id)?;
                out.flush()?;
            }
            Ok(0)
        }
    }
}

fn parse_verdict(text: &str) -> anyhow::Result<airlock_policy::Verdict> {
    serde_json::from_value(serde_json::Value::String(text.to_string())).map_err(|_| {
        anyhow::anyhow!("--decision must be allow, deny or approval_required, not `{text}`")
    })
}

fn parse_since(text: &str) -> anyhow::Result<u64> {
    if let Some(ms) = airlock_core::clock::parse_rfc3339(text) {
        return Ok(ms);
    }
    let ago = airlock_core::clock::parse_duration(text)
        .with_context(|| format!("--since takes a duration (`1h`, `30m`) or a UTC time (`2026-11-29T10:00:00Z`), not `{text}`"))?;
    Ok(airlock_core::clock::now_ms().saturating_sub(ago.as_millis() as u64))
}

fn verify(dir: &std::path::Path, json: bool) -> anyhow::Result<i32> {
    match audit::verify(dir) {
        Ok(report) => {
            if json {
                let last = report
                    .last
                    .as_ref()
                    .map(|(id, hash)| serde_json::json!({"id": id, "sha256": hash}));
                println!(
                    "{}",
                    json_safe(&serde_json::json!({"ok": true, "files": report.files, "records": report.records, "last": last, "warnings": report.warnings}).to_string())
                );
            } else {
                match &report.last {
                    Some((id, hash)) => println!(
                        "ok: {} records in {} file(s), chain intact; last {id} sha256 {hash}",
                        report.records, report.files
                    ),
                    None => println!("ok: the log is empty"),
                }
                print_warnings(&report.warnings);
            }
            Ok(0)
        }
        Err(failure) => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({"ok": false, "file": failure.file, "line": failure.line, "record": failure.record_id, "problem": failure.problem})
                );
            } else {
                let record = failure
                    .record_id
                    .as_deref()
                    .map(|id| format!(" (record {id})"))
                    .unwrap_or_default();
                eprintln!(
                    "FAILED: first bad record at {}{}",
                    escape_line(&failure.to_string()),
                    escape_line(&record)
                );
            }
            Ok(1)
        }
    }
}

fn print_warnings(warnings: &[String]) {
    for w in warnings {
        println!("warning: {}", escape_line(w));
    }
}

fn verify_with_key(
    dir: &std::path::Path,
    json: bool,
    key: &std::path::Path,
    checkpoints: Option<&std::path::Path>,
) -> anyhow::Result<i32> {
    let public = airlock_core::audit::anchor::load_public_key(key)?;
    let external = match checkpoints {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("--checkpoints {}", path.display()))?;
            audit::verify::read_checkpoints(&text)
                .map_err(|e| anyhow::anyhow!("--checkpoints {}: {e}", path.display()))?
        }
        None => vec![],
    };
    match audit::verify::verify_anchored(dir, &public, &external) {
        Ok(r) => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({"ok": true, "files": r.chain.files, "records": r.chain.records,
                        "checkpoints": r.checkpoints, "external_checkpoints": r.external,
                        "anchored_through": r.anchored_through, "unanchored": r.unanchored,
                        "warnings": r.chain.warnings,
                        "key_id": airlock_core::audit::anchor::key_id(&public)})
                );
            } else {
                println!(
                    "ok: {} records in {} file(s), chain intact; {} checkpoint(s) signed by key {}{}; anchored through a{}",
                    r.chain.records,
                    r.chain.files,
                    r.checkpoints,
                    airlock_core::audit::anchor::key_id(&public),
                    if r.external > 0 { format!(", {} exported checkpoint(s) match", r.external) } else { String::new() },
                    r.anchored_through
                );
                if r.unanchored > 0 {
                    println!(
                        "note: the last {} record(s) come after the last signed checkpoint; nothing can tell them from a rewrite until the next checkpoint (`airlock audit checkpoint`); a rewrite that also deleted the checkpoints after it looks the same here: `--checkpoints FILE` with the exported checkpoints tells them apart",
                        r.unanchored
                    );
                }
                print_warnings(&r.chain.warnings);
            }
            Ok(0)
        }
        Err(failure) => {
            if json {
                println!(
                    "{}",
                    json_safe(&serde_json::json!({"ok": false, "file": failure.file, "line": failure.line, "record": failure.record_id, "problem": failure.problem}).to_string())
                );
            } else {
                eprintln!("FAILED: {}", escape_line(&failure.to_string()));
            }
            Ok(1)
        }
    }
}

fn show(dir: &std::path::Path, id: &str) -> anyhow::Result<i32> {
    let records = audit::find(dir, id)?;
    if records.is_empty() {
        eprintln!("airlock: no audit record matches `{}`", escape_line(id));
        return Ok(1);
    }
    for record in records {
        println!("{}", json_safe(&serde_json::to_string_pretty(&record)?));
    }
    Ok(0)
}

fn tail(dir: &std::path::Path, lines: usize, follow: bool, json: bool) -> anyhow::Result<i32> {
    // From the end of the log backwards: memory does not grow with the log.
    let records = audit::last_n(dir, lines)?;
    print_records(&records, json)?;
    if !follow {
        return Ok(0);
    }
    let mut last_seq = match records.last() {
        Some(r) => r.seq,
        None => audit::last_n(dir, 1)?.last().map_or(0, |r| r.seq),
    };
    loop {
        std::thread::sleep(std::time::Duration::from_millis(250));
        // Read back from the end only as far as the last record printed: the
        // work per tick follows what was appended, not the log's size.
        let mut window = 64;
        let fresh: Vec<Record> = loop {
            let recent = audit::last_n(dir, window)?;
            let reaches = recent.len() < window
                || recent.first().is_none_or(|r| r.seq <= last_seq + 1)
                || window >= 1 << 20;
            if reaches {
                break recent.into_iter().filter(|r| r.seq > last_seq).collect();
            }
            window *= 4;
        };
        if let Some(r) = fresh.last() {
            last_seq = r.seq;
            print_records(&fresh, json)?;
        }
    }
}

fn print_records(records: &[Record], json: bool) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if json {
        for record in records {
            writeln!(out, "{}", json_safe(&serde_json::to_string(record)?))?;
        }
    } else {
        writeln!(
            out,
            "{:<8} {:<24} {:<10} {:<22} {:<36} COMMAND",
            "ID", "TIME", "KIND", "WHO", "WHAT"
        )?;
        for record in records {
            let (who, what) = summary(record);
            let command = command_of(record).map(command_text).unwrap_or_default();
            writeln!(
                out,
                "{:<8} {:<24} {:<10} {:<22} {:<36} {}",
                record.id,
                record.time,
                record.kind(),
                clip(&escape_line(&who), 22),
                clip(&escape_line(&what), 36),
                clip(&escape_line(&command), 80)
            )?;
        }
    }
    out.flush()?;
    Ok(())
}

fn summary(record: &Record) -> (String, String) {
    match &record.event {
        Event::Decision(d) => {
            let mut what = format!("{} → {}", d.decision.as_str(), d.disposition);
            if !d.loosened_by.is_empty() {
                what.push_str(" +grant");
            }
            (d.who.to_string(), what)
        }
        Event::Execution(e) => {
            let what = match (&e.outcome, &e.error) {
                (Some(o), _) => match (o.exit_code, o.signal, o.killed_by) {
                    (_, _, Some(k)) => format!("killed ({k:?})").to_lowercase(),
                    (Some(c), _, _) => format!("exit {c}, {}ms", o.duration_ms),
                    (None, Some(s), _) => format!("signal {s}"),
                    _ => "ended".into(),
                },
                (None, Some(_)) => "sandbox error".into(),
                (None, None) => "?".into(),
            };
            (e.who.to_string(), what)
        }
        Event::Approval(a) => (
            a.who.to_string(),
            format!("{:?} {}", a.action, a.approval_id).to_lowercase(),
        ),
        Event::Grant(g) => (
            g.who.to_string(),
            format!(
                "{:?} {} {}",
                g.action,
                g.grant_id,
                g.grant.boundary.describe()
            )
            .to_lowercase(),
        ),
        Event::FileWrite(f) => {
            let stage = match (&f.stage, &f.result) {
                (_, Some(result)) => result.clone(),
                (stage, None) => format!("{stage:?}").to_lowercase(),
            };
            (
                f.who.to_string(),
                format!("write_file {} ({} bytes): {stage}", f.path, f.bytes),
            )
        }
        Event::FileRead(f) => (
            f.who.to_string(),
            format!("{} {}: {}", f.tool, f.path, f.result),
        ),
        Event::Apply(a) => (
            a.who.to_string(),
            format!(
                "apply {}: {}{}",
                a.run_id,
                a.disposition,
                a.change_summary
                    .as_ref()
                    .map(|s| format!(
                        " ({} change(s), {} bytes written)",
                        s.total - s.discarded,
                        s.applied_bytes
                    ))
                    .unwrap_or_default()
            ),
        ),
        Event::Repair(r) => (
            "airlock".into(),
            format!("repair: cut {} bytes", r.length_before - r.length_after),
        ),
        Event::Reanchor(r) => ("airlock".into(), format!("reanchor at a{}", r.log_last_seq)),
        Event::Checkpoint(c) => (
            "airlock".into(),
            format!("checkpoint of a{} (key {})", c.signed_seq, c.key_id),
        ),
        Event::Test(t) => (t.writer.clone(), format!("test #{}", t.n)),
    }
}

pub(crate) fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(width.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}
