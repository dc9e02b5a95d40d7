//! `airlock run --server`: hand the run to a running `airlock serve`, whose
//! warm pool has the sandbox built before the request comes.
//!
//! The server judges, runs and records the command under its own policy and
//! workspace, with every layer a cold run has; this process only sends the
//! request, streams the output through the same terminal filter, and exits
//! with the same status a cold run would. It never falls back to building the
//! sandbox here: a server that cannot be reached is an error naming it.

use super::run::{exit, Args, Live};
use super::unix_http::{post_json, Lines};
use airlock_core::engine::{ApprovalRef, Refusal, RunResponse, RunStatus};
use airlock_core::terminal::{escape_line, json_safe};
use airlock_policy::Decision;
use airlock_sandbox::{Outcome, OutputSink};
use anyhow::Context;
use serde::Deserialize;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// Largest error body or result line read from the server.
const MAX_LINE: usize = 64 << 20;

/// The socket `--server` names: the flag's value, else the server's default
/// (`airlock serve` listens on `<state dir>/airlock.sock`).
pub fn socket_of(value: &str) -> anyhow::Result<PathBuf> {
    if !value.is_empty() {
        return Ok(PathBuf::from(value));
    }
    Ok(airlock_core::resolve_state_dir()?.join("airlock.sock"))
}

/// What the server's `result` line carries (`RunResult` in openapi.json).
#[derive(Deserialize)]
struct ServerResult {
    request_id: String,
    status: RunStatus,
    message: String,
    #[serde(flatten)]
    decision: Decision,
    approval: Option<ApprovalRef>,
    refusal: Option<Refusal>,
    outcome: Option<Outcome>,
    audit_ids: Vec<String>,
    /// Absent from a server older than this client.
    #[serde(default)]
    backend: Option<String>,
}

/// One NDJSON event of `/v1/run/stream?output=base64`: output as every byte
/// came, so that a pipe gets what a cold run would have given it.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    Stdout { data_base64: String },
    Stderr { data_base64: String },
    Result { result: Box<ServerResult> },
    Error { error: ServerError },
}

#[derive(Deserialize)]
struct ServerError {
    code: String,
    message: String,
}

/// Whether a flag was given that a run through the server cannot honour.
fn refuse_flags(args: &Args) -> Result<(), String> {
    let own_policy = "the server runs under its own policy";
    let refused: [(bool, &str, &str); 7] = [
        (args.policy.is_some(), "--policy", own_policy),
        (args.backend.is_some(), "--backend", own_policy),
        (args.memory.is_some(), "--memory", own_policy),
        (args.network.is_some(), "--network", own_policy),
        (
            args.apply,
            "--apply",
            "the server applies changes as its policy's [workspace] apply says",
        ),
        (
            args.wait_approval.is_some(),
            "--wait-approval",
            "the server does not wait for approvals; run again with --approval ID once approved",
        ),
        (args.ask, "--ask", "the server cannot ask at this terminal"),
    ];
    match refused.iter().find(|(given, _, _)| *given) {
        Some((_, flag, why)) => Err(format!(
            "{flag} cannot go with --server: {why}.\nHint: drop {flag}, or run without \
             --server (and without AIRLOCK_SERVER) to build the sandbox here."
        )),
        None => Ok(()),
    }
}

/// The command's stdin, as a cold run would give it: `--stdin FILE`, else this
/// process's stdin unless it is a terminal or `/dev/null`. The server's API
/// takes it whole and as text, so it is read to its end before the request is
/// sent (a cold run streams it while the command runs).
fn stdin_text(args: &Args) -> Result<Option<String>, String> {
    use std::io::{IsTerminal, Read};
    let (source, what): (Box<dyn Read>, String) = match &args.stdin {
        Some(path) => match std::fs::File::open(path) {
            Ok(f) => (Box::new(f), format!("--stdin {}", path.display())),
            Err(e) => return Err(format!("--stdin {}: cannot open it: {e}", path.display())),
        },
        None => {
            let stdin = std::io::stdin();
            if stdin.is_terminal() || super::run_stdin::is_dev_null() {
                return Ok(None);
            }
            (Box::new(stdin), "stdin".to_string())
        }
    };
    let bytes = super::run_stdin::read_whole(
        source,
        &what,
        "a request to the server carries it whole",
    )
    .map_err(|e| {
        format!("{e}\nHint: run without --server (and without AIRLOCK_SERVER) to stream it to the command.")
    })?;
    String::from_utf8(bytes).map(Some).map_err(|e| {
        format!(
            "{what} is not UTF-8 text (invalid byte at offset {}), and the server's API carries \
             stdin as text.\nHint: run without --server (and without AIRLOCK_SERVER) to pass \
             it as bytes.",
            e.utf8_error().valid_up_to()
        )
    })
}

/// Connect, and make sure the server is this user or root: anyone else's
/// process could answer with any outcome.
fn connect(socket: &Path) -> anyhow::Result<UnixStream> {
    let stream = UnixStream::connect(socket).map_err(|e| {
        anyhow::anyhow!(
            "cannot reach an airlock server at {}: {e}.\nHint: start one with `airlock serve \
             --socket {}` (it keeps sandboxes built ahead of demand), or run without --server \
             (and without AIRLOCK_SERVER) to build the sandbox here",
            socket.display(),
            socket.display()
        )
    })?;
    let peer = rustix::net::sockopt::socket_peercred(&stream)
        .with_context(|| format!("{}: cannot read the server's credentials", socket.display()))?;
    let me = rustix::process::geteuid();
    if peer.uid != me && !peer.uid.is_root() {
        anyhow::bail!(
            "refused: the socket {} is served by uid {}, neither you (uid {}) nor root, so its \
             answers cannot be trusted.\nHint: point --server at a socket your own `airlock \
             serve` listens on",
            socket.display(),
            peer.uid.as_raw(),
            me.as_raw()
        );
    }
    Ok(stream)
}

/// The request body: the command, its working directory, the tightened
/// timeout and stdin, as `/v1/run` takes them.
fn request_json(args: &Args, stdin: Option<String>) -> anyhow::Result<Vec<u8>> {
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let cwd = match &args.cwd {
        Some(d) => here.join(d),
        None => here,
    };
    let cwd = std::fs::canonicalize(&cwd).with_context(|| format!("--cwd {}", cwd.display()))?;
    let cwd = cwd.to_str().with_context(|| {
        format!(
            "--cwd {}: not UTF-8, which the server's API cannot carry",
            cwd.display()
        )
    })?;
    let mut body = serde_json::json!({ "cwd": cwd });
    match (&args.command, args.argv.is_empty()) {
        (Some(c), true) => body["command"] = c.clone().into(),
        (None, false) => body["argv"] = args.argv.clone().into(),
        _ => anyhow::bail!("give either -c 'SHELL COMMAND' or -- PROG ARG..."),
    }
    if let Some(t) = &args.timeout {
        // The server only lowers its policy's timeout; a longer one is refused
        // there (`timeout_above_policy`), as a cold run refuses it here.
        body["timeout_s"] = (super::run_limits::timeout_flag(t)? as f64 / 1000.0).into();
    }
    if let Some(id) = &args.approval {
        body["approval_id"] = id.clone().into();
    }
    if let Some(text) = stdin {
        body["stdin"] = text.into();
    }
    Ok(serde_json::to_vec(&body)?)
}

/// Run `args` through the server on `socket`; the exit status is a cold run's.
pub fn run(args: Args, socket: &Path) -> anyhow::Result<i32> {
    let stdin = match refuse_flags(&args).and_then(|()| stdin_text(&args)) {
        Ok(stdin) => stdin,
        Err(why) => {
            eprintln!("airlock: refused: {why}");
            return Ok(2);
        }
    };
    let body = request_json(&args, stdin)?;
    let stream = connect(socket)?;
    let mut response = post_json(stream, "/v1/run/stream?output=base64", &body)
        .with_context(|| format!("{}: the request failed", socket.display()))?;
    if response.status != 200 {
        let text = response.body.read_all(MAX_LINE).unwrap_or_default();
        let error: Option<ServerError> = serde_json::from_slice(&text).ok();
        return Ok(refused_by_server(
            &args,
            error.unwrap_or(ServerError {
                code: format!("http_{}", response.status),
                message: String::from_utf8_lossy(&text).into_owned(),
            }),
        ));
    }

    let mut live = Live::new(args.raw_output);
    let mut lines = Lines::default();
    let mut result = None;
    'read: loop {
        let bytes = response
            .body
            .next_bytes()
            .with_context(|| format!("{}: the answer broke off", socket.display()))?;
        if bytes.is_empty() {
            break;
        }
        for line in lines.push(&bytes) {
            let event: Event = serde_json::from_slice(&line)
                .with_context(|| format!("{}: an answer line is not an event", socket.display()))?;
            match event {
                Event::Stdout { data_base64 } if !args.json => live.stdout(&decode(&data_base64)?),
                Event::Stderr { data_base64 } if !args.json => live.stderr(&decode(&data_base64)?),
                Event::Stdout { .. } | Event::Stderr { .. } => {}
                Event::Result { result: r } => {
                    result = Some(r);
                    break 'read;
                }
                Event::Error { error } => {
                    live.finish();
                    return Ok(refused_by_server(&args, error));
                }
            }
        }
        if lines.pending() > MAX_LINE {
            anyhow::bail!(
                "{}: an answer line is over {MAX_LINE} bytes",
                socket.display()
            );
        }
    }
    live.finish();
    let Some(r) = result else {
        anyhow::bail!(
            "{}: the server closed the connection before the run's result (did it stop?)",
            socket.display()
        );
    };
    let response = RunResponse {
        request_id: r.request_id,
        status: r.status,
        decision: r.decision,
        message: r.message,
        approval: r.approval,
        refusal: r.refusal,
        outcome: r.outcome,
        audit_ids: r.audit_ids,
        apply: None,
    };
    if args.json {
        println!(
            "{}",
            json_safe(&serde_json::to_string_pretty(&super::run::json_view(
                &response,
                r.backend.as_deref(),
                serde_json::Value::Null
            ))?)
        );
    } else {
        super::run::report_to_terminal(&response, None);
    }
    Ok(super::run::status_of(&response))
}

fn decode(text: &str) -> anyhow::Result<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .context("the server sent output that is not base64")
}

/// The server answered with an error instead of a result: print it as a cold
/// run prints its own, with the same exit status.
fn refused_by_server(args: &Args, e: ServerError) -> i32 {
    let status = match e.code.as_str() {
        "sandbox_error" => exit::SANDBOX_ERROR,
        _ => 2,
    };
    if args.json {
        println!(
            "{}",
            serde_json::json!({ "error": e.code, "detail": e.message })
        );
    } else {
        eprintln!(
            "airlock: the server refused the run: {}: {}",
            e.code,
            escape_line(&e.message)
        );
        if e.code == "payload_too_large" {
            eprintln!(
                "Hint: the command's stdin travels in the request; start the server with a \
                 larger --max-body, or run without --server (and without AIRLOCK_SERVER) to \
                 stream it."
            );
        }
    }
    status
}
