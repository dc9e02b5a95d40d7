//! `airlock run`: judge a command, and run it in a disposable sandbox if allowed.

use airlock_core::engine::{RunOptions, RunResponse, RunStatus};
use airlock_core::terminal::{escape_line, json_safe, StreamFilter};
use airlock_policy::{Command, Request};
use airlock_sandbox::{KillReason, OutputSink};
use anyhow::Context;
use std::io::{IsTerminal, Write};
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
    /// Killed because its caller stopped waiting (a run through a server whose
    /// client went away): 128 + SIGINT, as a shell reports an interrupted command.
    pub const CANCELLED: i32 = 130;
    /// The sandbox could not be built (a layer could not be applied); nothing ran.
    pub const SANDBOX_ERROR: i32 = 125;
}

/// What `airlock --help` and `airlock run --help` say `run` does.
pub const ABOUT: &str = "Judge a command, and run it in a disposable sandbox if allowed";

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
  130    cancelled: its caller stopped waiting (a run through a server);
  2      airlock's own usage or setup error.
A command may itself exit with one of these numbers: --json tells them apart.

Input: when airlock's own stdin is not a terminal (a pipe, a file), it is
streamed to the command (`echo data | airlock run -- wc -c`); the wasm and
microvm backends take it whole (read first, at most 64 MiB). From a terminal or
/dev/null the command reads an empty stdin. --stdin FILE reads it from FILE
instead. The execution record keeps its length, SHA-256 and start.
--timeout, --memory and --network only tighten the policy; a looser value is
refused, naming the policy key that would allow it.";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Policy file (default: $AIRLOCK_POLICY, ./airlock.toml, or the built-in default).
    #[arg(long, value_name = "FILE")]
    pub(super) policy: Option<PathBuf>,
    /// Working directory of the command (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub(super) cwd: Option<PathBuf>,
    /// Print one JSON object with the decision and the outcome instead of streaming.
    #[arg(long)]
    pub(super) json: bool,
    /// Copy the overlay workspace's changes back after the run.
    #[arg(long)]
    pub(super) apply: bool,
    /// Run on this backend instead of the policy's `[sandbox] backend`: native,
    /// oci, gvisor, wasm, microvm (docker is not built in this version). Never a
    /// weaker tier than the policy's; refused when it cannot enforce the policy.
    #[arg(long, value_name = "NAME")]
    pub(super) backend: Option<String>,
    /// Use this approved approval.
    #[arg(long, value_name = "ID")]
    pub(super) approval: Option<String>,
    /// If the command needs approval, wait up to TIMEOUT (default 15m) for a
    /// person to answer (`airlock approvals approve ID`), then run it.
    #[arg(long, value_name = "TIMEOUT", num_args = 0..=1, default_missing_value = "15m", require_equals = true)]
    pub(super) wait_approval: Option<String>,
    /// If the command needs approval and stdin is a terminal, ask here.
    #[arg(long)]
    pub(super) ask: bool,
    /// Feed FILE to the command's stdin (default: airlock's own stdin when it is
    /// not a terminal, else nothing).
    #[arg(long, value_name = "FILE")]
    pub(super) stdin: Option<PathBuf>,
    /// Wall-clock limit for this run (`90s`, `5m`); at most the policy's limits.timeout.
    #[arg(long, value_name = "DURATION")]
    pub(super) timeout: Option<String>,
    /// Memory limit for this run (`256MiB`); at most the policy's limits.memory.
    #[arg(long, value_name = "SIZE")]
    pub(super) memory: Option<String>,
    /// Network for this run; never more open than the policy's network.mode.
    #[arg(long, value_enum, value_name = "MODE")]
    pub(super) network: Option<super::run_limits::NetworkFlag>,
    /// Write the command's output to a terminal byte for byte. By default, when
    /// stdout or stderr is a terminal, only text and SGR colours reach it; other
    /// escape sequences (clipboard writes, screen clears, title changes) and
    /// control characters are shown escaped. Pipes and files always get the bytes.
    #[arg(long)]
    pub(super) raw_output: bool,
    /// Hand the run to a running `airlock serve` on SOCKET (default: its socket
    /// in the state directory; also $AIRLOCK_SERVER when set and not empty),
    /// whose warm pool has the sandbox built already. It runs under the
    /// server's policy and workspace; never falls back to a local sandbox
    /// when the server cannot be reached.
    #[arg(long, value_name = "SOCKET", num_args = 0..=1, default_missing_value = "", require_equals = true)]
    pub(super) server: Option<String>,
    /// A shell command line (run with bash -c, judged segment by segment).
    #[arg(short = 'c', value_name = "SHELL", conflicts_with = "argv")]
    pub(super) command: Option<String>,
    /// The program and its arguments (after `--`).
    #[arg(last = true, value_name = "PROG ARG")]
    pub(super) argv: Vec<String>,
}

/// Streams the command's output to this process's stdout and stderr as it
/// comes. A stream that goes to a terminal passes through a [`StreamFilter`]
/// (unless `--raw-output`): a sandboxed program must not drive the person's
/// terminal (OSC 52 clipboard writes, cursor movement over earlier output).
pub(super) struct Live {
    stdout: Option<StreamFilter>,
    stderr: Option<StreamFilter>,
}

impl Live {
    pub(super) fn new(raw: bool) -> Live {
        let filter = |tty: bool| (tty && !raw).then(StreamFilter::new);
        Live {
            stdout: filter(std::io::stdout().is_terminal()),
            stderr: filter(std::io::stderr().is_terminal()),
        }
    }

    fn write(out: &mut dyn Write, filter: Option<&mut StreamFilter>, chunk: &[u8], end: bool) {
        let mut filtered = Vec::new();
        let bytes = match filter {
            Some(f) => {
                f.push(chunk, &mut filtered);
                if end {
                    f.finish(&mut filtered);
                }
                &filtered[..]
            }
            None => chunk,
        };
        let _ = out.write_all(bytes);
        let _ = out.flush();
    }

    /// Show what a filter still holds (an escape sequence cut off by the end).
    pub(super) fn finish(&mut self) {
        Live::write(
            &mut std::io::stdout().lock(),
            self.stdout.as_mut(),
            b"",
            true,
        );
        Live::write(
            &mut std::io::stderr().lock(),
            self.stderr.as_mut(),
            b"",
            true,
        );
    }
}

impl OutputSink for Live {
    fn stdout(&mut self, chunk: &[u8]) {
        Live::write(
            &mut std::io::stdout().lock(),
            self.stdout.as_mut(),
            chunk,
            false,
        );
    }
    fn stderr(&mut self, chunk: &[u8]) {
        Live::write(
            &mut std::io::stderr().lock(),
            self.stderr.as_mut(),
            chunk,
            false,
        );
    }
    // Interrupting `airlock run` ends this process, and with it the helper's
    // control pipe: the helper kills the run itself.
    fn cancelled(&self) -> bool {
        false
    }
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    // An empty AIRLOCK_SERVER is unset, as a shell's `AIRLOCK_SERVER= cmd` means.
    let server = args.server.clone().or_else(|| {
        std::env::var("AIRLOCK_SERVER")
            .ok()
            .filter(|s| !s.is_empty())
    });
    if let Some(server) = server {
        let socket = super::run_server::socket_of(&server)?;
        return super::run_server::run(args, &socket);
    }
    // The sandbox's helper, forked while this process is small and has one
    // thread (the native backend takes it; another backend lets it go).
    airlock_sandbox::native::prefork::fork_early();
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let cwd = match &args.cwd {
        Some(d) => here.join(d),
        None => here.clone(),
    };
    let cwd = std::fs::canonicalize(&cwd).with_context(|| format!("--cwd {}", cwd.display()))?;
    let policy_path = args.policy.as_ref().map(|p| here.join(p));
    let loaded = airlock_core::toolchains::resolve(policy_path.as_deref(), &cwd)?;
    for w in &loaded.warnings {
        eprintln!("airlock: warning: {w}");
    }
    let mut policy = loaded.policy;
    refuse_root_workspace(&policy)?;
    super::run_limits::tighten(
        &mut policy,
        &super::run_limits::Tighten {
            timeout: args.timeout.as_deref(),
            memory: args.memory.as_deref(),
            network: args.network,
        },
    )?;
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

    // The backend: the policy's, or --backend when that is not a weaker tier.
    let asked = match &args.backend {
        Some(name) => Some(airlock_core::backends::parse(name)?),
        None => None,
    };
    let kind = match airlock_core::backends::choose(&policy, asked) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("airlock: refused: {e}");
            return Ok(2);
        }
    };
    let state_dir = airlock_core::resolve_state_dir()?;
    airlock_core::state::ensure_private_dir(&state_dir)?;
    let mut opts = airlock_sandbox::OpenOptions::new(state_dir.clone());
    opts.stdin_from_caller = take_stdin(args.stdin.as_deref())?;
    // A backend that cannot stream it gets it whole, with the spec.
    let mut stdin_whole = None;
    if opts.stdin_from_caller && !kind.streams_stdin() {
        let why = format!(
            "the {} backend takes a command's stdin whole",
            kind.as_str()
        );
        match super::run_stdin::read_whole(std::io::stdin(), "stdin", &why) {
            Ok(bytes) => stdin_whole = Some(bytes),
            Err(e) => {
                eprintln!(
                    "airlock: refused: {e}\nHint: the native, gvisor, oci and docker backends \
                     stream stdin to the command as it runs."
                );
                return Ok(2);
            }
        }
        opts.stdin_from_caller = false;
    }
    opts.prefork_helper = true;
    let backend = match airlock_sandbox::open(kind, &opts) {
        Ok(b) => b,
        Err(e) => {
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
    };
    let engine =
        airlock_core::Engine::open(airlock_core::EngineConfig::new(state_dir.clone(), backend))
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
    // Streamed stdin is unknown until the command reads it; an approval
    // covers the exact stdin, so where one is needed it is read whole first.
    let mut read_caller_stdin = || {
        super::run_stdin::read_whole(
            std::io::stdin(),
            "stdin",
            "an approval covers a command's exact stdin",
        )
    };
    let options = RunOptions {
        read_stdin: match opts.stdin_from_caller {
            true => Some(&mut read_caller_stdin),
            false => None,
        },
        wait_approval,
        prompt: prompt
            .as_mut()
            .map(|p| p as &mut dyn airlock_core::ApprovalPrompt),
        on_pending: Some(&mut announce),
        approval_id: args.approval.clone(),
        apply: if args.apply { Some(true) } else { None },
        stdin: stdin_whole,
        ..Default::default()
    };
    let caller = airlock_core::Caller::cli();
    let mut discard = airlock_sandbox::backend::Discard;
    let mut live = Live::new(args.raw_output);
    let sink: &mut dyn OutputSink = if args.json { &mut discard } else { &mut live };
    let ran = engine.run(&caller, &policy, &request, options, sink);
    live.finish();
    let response = match ran {
        Ok(r) => r,
        Err(airlock_core::EngineError::Sandbox(e)) => {
            let hint = super::run_limits::setup_hint(&e);
            if args.json {
                println!(
                    "{}",
                    serde_json::json!({ "error": "sandbox", "detail": e.to_string(), "hint": hint })
                );
            } else {
                eprintln!(
                    "airlock: sandbox error: {}\nHint: {hint}",
                    escape_line(&e.to_string())
                );
            }
            return Ok(exit::SANDBOX_ERROR);
        }
        Err(e) => return Err(e.into()),
    };
    if args.json {
        println!(
            "{}",
            json_safe(&serde_json::to_string_pretty(&json_view(
                &response,
                Some(kind.as_str()),
                sandbox_mode(kind.as_str())
            ))?)
        );
    } else {
        report_to_terminal(&response, Some(&policy));
        let not_found = response.outcome.as_ref().and_then(|o| o.exit_code) == Some(127);
        if let (true, Some(program)) = (not_found, first_program(&request.command)) {
            if let Some(hint) = super::run_limits::not_found_hint(program, &policy) {
                eprintln!("airlock: Hint: {hint}");
            }
        }
    }
    Ok(status_of(&response))
}

/// The built-in default's workspace is the current directory; started in `/`,
/// that would make the whole host the workspace, which no sandbox can overlay.
fn refuse_root_workspace(policy: &airlock_policy::Policy) -> anyhow::Result<()> {
    let root = std::fs::canonicalize(&policy.workspace.root)
        .unwrap_or_else(|_| policy.workspace.root.clone());
    if root == std::path::Path::new("/") {
        let why = if policy.source.starts_with('<') {
            "the built-in default policy makes the current directory the workspace, and this run started in /"
        } else {
            "its [workspace] root is /"
        };
        anyhow::bail!(
            "the workspace would be / (the whole host): {why}, and a sandbox cannot lay its \
             copy-on-write workspace over the root itself.\nHint: cd into the project's \
             directory first (or pass --cwd DIR with --policy FILE whose [workspace] root names it)."
        );
    }
    Ok(())
}

/// Whether the command gets this process's stdin: `--stdin FILE` is put in
/// its place first; a terminal is never handed over, and `/dev/null` need not
/// be (the sandbox's own stdin is its `/dev/null`: no pipe, no pump).
fn take_stdin(file: Option<&std::path::Path>) -> anyhow::Result<bool> {
    use std::io::IsTerminal;
    if let Some(path) = file {
        let f = std::fs::File::open(path)
            .with_context(|| format!("--stdin {}: cannot open it", path.display()))?;
        rustix::stdio::dup2_stdin(&f)
            .with_context(|| format!("--stdin {}: cannot use it as stdin", path.display()))?;
    }
    Ok(!std::io::stdin().is_terminal() && !super::run_stdin::is_dev_null())
}

/// The program a request starts with (the first word of a shell line).
fn first_program(command: &Command) -> Option<&str> {
    match command {
        Command::Argv { argv } => argv.first().map(String::as_str),
        Command::Shell { command } => command.split_whitespace().next(),
        Command::Code { .. } => None,
    }
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
                Some(KillReason::Cancelled) => exit::CANCELLED,
                None => match (o.exit_code, o.signal) {
                    (Some(c), _) => c,
                    (None, Some(s)) => 128 + s,
                    (None, None) => exit::SANDBOX_ERROR,
                },
            }
        }
    }
}

/// The native or gvisor backend's mode (`root` or `rootless`) and what holds
/// its limits (both have a rootless mode; the other backends need root).
fn sandbox_mode(backend: &str) -> serde_json::Value {
    if backend != "native" && backend != "gvisor" {
        return serde_json::Value::Null;
    }
    use airlock_sandbox::capability::NativeLimits;
    let (mode, limits) = match NativeLimits::detect() {
        NativeLimits::RootCgroup => ("root", "cgroup".to_string()),
        NativeLimits::Delegated(d) => ("rootless", format!("delegated cgroup v2 {}", d.display())),
        NativeLimits::RlimitsOnly => ("rootless", "rlimits (best effort)".to_string()),
    };
    serde_json::json!({ "mode": mode, "limits": limits })
}

/// `--json`'s object. `backend` is `None` when nothing ran (or an older
/// server did not say). `sandbox_mode` is this host's for a run here, and
/// null for a run through a server, whose host and user need not be ours.
pub(super) fn json_view(
    r: &RunResponse,
    backend: Option<&str>,
    sandbox_mode: serde_json::Value,
) -> serde_json::Value {
    let o = r.outcome.as_ref();
    serde_json::json!({
        "request_id": r.request_id,
        "backend": backend,
        "sandbox_mode": sandbox_mode,
        "status": r.status.as_str(),
        "decision": r.decision.decision.as_str(),
        "reason": r.decision.reason,
        "rule": r.decision.rule,
        "message": r.message,
        "approval": r.approval,
        "refusal": r.refusal,
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
        "change_summary": o.and_then(|o| o.change_summary.as_ref()),
        "applied": o.map(|o| o.applied),
        "violations": o.map(|o| &o.violations),
        "kept": o.and_then(|o| o.change_summary.as_ref()).is_some_and(|s| s.kept),
        "apply": r.apply,
        "audit_ids": r.audit_ids,
    })
}

/// What a run did, for a person. `policy` names the limits a kill hit; it is
/// `None` for a run through the server, whose policy this process has not read.
/// `s` as one shell word: as it is when it needs no quotes, else single-quoted
/// (escaped for the terminal either way).
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:=@".contains(&b));
    let word = if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    };
    airlock_core::terminal::escape_text(&word).into_owned()
}

pub(super) fn report_to_terminal(r: &RunResponse, policy: Option<&airlock_policy::Policy>) {
    match r.status {
        RunStatus::Ran => {}
        RunStatus::Denied => {
            eprintln!("airlock: denied: {}", escape_line(&r.decision.reason));
            return;
        }
        _ => {
            eprintln!(
                "airlock: {}: {}",
                r.status.as_str(),
                escape_line(&r.message)
            );
            return;
        }
    }
    let Some(o) = &r.outcome else { return };
    if o.truncated {
        eprintln!("airlock: output truncated at the limit");
    }
    if let Some(k) = o.killed_by {
        match policy {
            Some(policy) => eprintln!("{}", super::run_limits::kill_message(k, o, policy)),
            None => eprintln!("{}", super::run_limits::kill_message_of_server(k, o)),
        }
    }
    if !o.changes.is_empty() {
        let held = o.change_summary.as_ref().is_some_and(|s| s.held > 0);
        let kept = o.change_summary.as_ref().is_some_and(|s| s.kept);
        // The set is judged again at apply time, under the policy named then:
        // the hint names this run's, so that the same rules apply.
        let with_policy = policy
            .filter(|p| p.source != airlock_policy::load::BUILTIN_ORIGIN)
            .map(|p| format!(" --policy {}", shell_word(&p.source)))
            .unwrap_or_default();
        let later = format!(
            "kept: `airlock changes {id}{with_policy}` shows them, `airlock apply {id}{with_policy}` applies them",
            id = r.request_id
        );
        let denied = o.change_summary.as_ref().map_or(0, |s| s.denied);
        let none_allowed = o.change_summary.as_ref().is_some_and(|s| s.allowed() == 0);
        let verb = if o.applied && denied > 0 && none_allowed {
            "not applied: every one was denied (see below)".to_string()
        } else if o.applied && denied > 0 {
            format!("applied except {denied} denied (see below)")
        } else if o.applied {
            "applied".to_string()
        } else if held && kept {
            format!("not applied (some need a person, see below); {later}")
        } else if held {
            "not applied (some need a person, see below)".to_string()
        } else if kept {
            format!("not applied; {later}")
        } else {
            "discarded (rerun with --apply to keep them)".to_string()
        };
        let listed = o.changes.len() as u64;
        let total = o
            .change_summary
            .as_ref()
            .map(|s| s.total - s.discarded)
            .unwrap_or(listed)
            .max(listed);
        eprintln!("airlock: {total} workspace change(s) {verb}:");
        for c in o.changes.iter().take(50) {
            eprintln!("  {}", airlock_core::apply::change_line(c));
        }
        if total > 50 {
            eprintln!("  … and {} more", total - 50.min(listed));
        }
        if let Some(s) = &o.change_summary {
            if s.discarded > 0 {
                eprintln!(
                    "airlock: {} cache change(s) discarded ([changes] discard)",
                    s.discarded
                );
            }
        }
    }
    for v in &o.violations {
        eprintln!("airlock: {}: {}", v.kind.as_str(), escape_line(&v.detail));
    }
    if let Some(a) = &r.apply {
        eprintln!("airlock: parked change set: {}", escape_line(&a.message));
        if a.applied {
            super::changes::report_to_terminal(a);
        }
    }
}
