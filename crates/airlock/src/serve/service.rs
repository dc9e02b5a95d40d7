//! The agent service: what the HTTP API and the MCP server both call. It
//! validates and bounds a request, admits it through the queue, and hands it to
//! the one [`Engine`] on tokio's blocking pool. It never runs anything itself.

use crate::serve::admission::{Admission, Refusal as AdmissionRefusal};
use crate::serve::error::{ApiError, ErrorCode};
use crate::serve::metrics::Metrics;
use crate::serve::runs::RunRegistry;
use crate::serve::tenants::Tenant;
use airlock_core::{ApprovalRef, Caller, Engine, EngineError, Refusal, RunOptions, RunStatus};
use airlock_policy::{Command, Decision, Policy, Request};
use airlock_sandbox::{Outcome, OutputSink};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Size limits on what a caller may send.
#[derive(Debug, Clone)]
pub struct RequestLimits {
    /// Whole HTTP body, bytes.
    pub body_bytes: usize,
    /// A shell command, or the argv joined, bytes.
    pub command_bytes: usize,
    /// Source code, bytes.
    pub code_bytes: usize,
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits {
            body_bytes: 1 << 20,
            command_bytes: 64 << 10,
            code_bytes: 256 << 10,
        }
    }
}

/// A language code can be written in. The three built-in ones are passed to the
/// engine as `Command::Code`; a configured one (`--language ruby=ruby,-e`) becomes
/// the argv `PROGRAM ARGS... SOURCE`, which the gate judges like any argv.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Language {
    Builtin(String),
    Interpreter { name: String, argv: Vec<String> },
}

impl Language {
    pub fn name(&self) -> &str {
        match self {
            Language::Builtin(name) | Language::Interpreter { name, .. } => name,
        }
    }

    /// Parse `python`, `bash`, `sh`, or `NAME=PROGRAM[,ARG...]`.
    pub fn parse(text: &str) -> Result<Language, String> {
        match text.split_once('=') {
            None if ["python", "bash", "sh"].contains(&text) => Ok(Language::Builtin(text.into())),
            None => Err(format!(
                "unknown built-in language {text:?} (built-ins: python, bash, sh; define others as NAME=PROGRAM[,ARG...])"
            )),
            Some((name, argv)) => {
                let argv: Vec<String> = argv.split(',').map(str::to_string).collect();
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(format!("language name {name:?} must be [A-Za-z0-9_]+"));
                }
                if argv.first().is_none_or(|p| p.is_empty()) {
                    return Err(format!("language {name:?} needs a program"));
                }
                Ok(Language::Interpreter { name: name.into(), argv })
            }
        }
    }

    pub fn defaults() -> Vec<Language> {
        ["python", "bash", "sh"]
            .iter()
            .map(|l| Language::Builtin(l.to_string()))
            .collect()
    }
}

/// What a caller asks for, before validation. Exactly one of `command`, `argv`
/// or `code` is given.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunInput {
    pub command: Option<String>,
    pub argv: Option<Vec<String>>,
    pub code: Option<String>,
    pub language: Option<String>,
    /// Absolute, or relative to the tenant's workspace root. Default: the root.
    pub cwd: Option<String>,
    /// Lowers the policy's timeout for this run; never raises it.
    pub timeout_s: Option<f64>,
    /// Run under this approved approval (the same command, cwd and policy).
    pub approval_id: Option<String>,
    /// Text for the command's stdin (a run only; a check ignores it). Absent:
    /// the command reads an empty stdin (`/dev/null`). Bounded by the request
    /// body's limit.
    pub stdin: Option<String>,
}

/// The answer to a check: the gate's decision (recorded in the audit log).
#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    pub request_id: String,
    pub caller: String,
    pub audit_id: String,
    #[serde(flatten)]
    pub decision: Decision,
}

/// The answer to a run: the decision, and the outcome when it ran.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub request_id: String,
    pub caller: String,
    /// `ran`, `denied`, `approval_pending`, `approval_denied`, `approval_refused`.
    pub status: RunStatus,
    /// One line for a person or a model: why it ran, or why not.
    pub message: String,
    #[serde(flatten)]
    pub decision: Decision,
    pub approval: Option<ApprovalRef>,
    pub refusal: Option<Refusal>,
    pub outcome: Option<Outcome>,
    pub audit_ids: Vec<String>,
    /// The backend the command ran on (`native`, `gvisor`, ...); null when
    /// nothing ran.
    pub backend: Option<String>,
    /// `GET /v1/runs/{id}` only: this run's stdout and stderr were dropped
    /// from memory to stay within the server's budget for kept output (the
    /// oldest runs' first); they are empty here. Omitted when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub output_evicted: bool,
}

/// One `AIRLOCK_PROFILE=1` line, in one write (stderr is unbuffered).
fn profile(line: std::fmt::Arguments<'_>) {
    let line = format!("airlock profile: {line}\n");
    eprint!("{line}");
}

/// An engine failure as an API error.
pub fn engine_error(e: EngineError) -> ApiError {
    match &e {
        EngineError::Sandbox(_) => ApiError::new(ErrorCode::SandboxError, e.to_string()),
        _ if e.is_disk_full() => ApiError::new(
            ErrorCode::AuditError,
            format!("refused: the audit log cannot be written, so nothing runs unlogged: {e}"),
        ),
        EngineError::Audit(_) => ApiError::new(ErrorCode::AuditError, e.to_string()),
        EngineError::Ledger(_) => ApiError::new(ErrorCode::AuditError, e.to_string()),
        EngineError::ExecutionUnrecorded(_) => ApiError::new(ErrorCode::AuditError, e.to_string()),
        EngineError::StdinUnreadable(_) => ApiError::new(ErrorCode::BadRequest, e.to_string()),
        EngineError::StateDirExposed(_) => ApiError::new(ErrorCode::Forbidden, e.to_string()),
    }
}

/// A piece of live output, for streaming runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunk {
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
}

/// Set when whoever waits for a run stops waiting (its client's connection
/// closed): the backend then kills the sandbox, reason `cancelled`, and the run
/// still gets its outcome and its audit record.
#[derive(Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Cancels its run when dropped before [`CancelOnDrop::disarm`]: the server
/// drops the future of a request whose client went away.
struct CancelOnDrop(Option<Cancel>);

impl CancelOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(c) = &self.0 {
            c.cancel();
        }
    }
}

/// Where a run's output goes: to a streaming client, or nowhere (the outcome
/// carries it); either way, whether the run was cancelled.
struct ChannelSink {
    live: Option<tokio::sync::mpsc::UnboundedSender<Chunk>>,
    cancel: Cancel,
}

impl OutputSink for ChannelSink {
    fn stdout(&mut self, chunk: &[u8]) {
        if let Some(tx) = &self.live {
            let _ = tx.send(Chunk::Stdout(chunk.to_vec()));
        }
    }
    fn stderr(&mut self, chunk: &[u8]) {
        if let Some(tx) = &self.live {
            let _ = tx.send(Chunk::Stderr(chunk.to_vec()));
        }
    }
    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

/// Armed while a run waits for a slot: dropped there (the client went away),
/// it records the request's decision, as judged then, with the disposition
/// `abandoned`, so that no request the server read is missing from the
/// audit trail, a denied one least of all. The record is written on the
/// blocking pool; the future that dropped it is already gone.
struct RecordIfAbandoned(Option<(Arc<Engine>, Caller, Arc<Policy>, Request)>);

impl Drop for RecordIfAbandoned {
    fn drop(&mut self) {
        let Some((engine, caller, policy, request)) = self.0.take() else {
            return;
        };
        let record = move || {
            if let Err(e) = engine.record_abandoned(&caller, &policy, &request) {
                eprintln!("airlock serve: the decision of a run abandoned in the queue was not recorded: {e}");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn_blocking(record);
            }
            Err(_) => record(),
        }
    }
}

/// A validated request holding a run slot.
pub struct Admitted {
    tenant: Arc<Tenant>,
    request: Request,
    policy: Arc<Policy>,
    approval_id: Option<String>,
    stdin: Option<String>,
    slot: crate::serve::admission::Slot,
    started: Instant,
    cancel: Cancel,
}

impl Admitted {
    /// Cancels the run when the caller stops waiting for it.
    pub fn cancel_handle(&self) -> Cancel {
        self.cancel.clone()
    }
}

pub struct Service {
    pub engine: Arc<Engine>,
    /// Run slots (sandboxes at once) and their queue.
    pub admission: Arc<Admission>,
    /// Check slots: a decision costs CPU (shell analysis) and an fsynced audit
    /// record, so checks are bounded too (issue 12), apart from runs so that a
    /// burst of checks never takes a sandbox's place or the other way round.
    pub check_admission: Arc<Admission>,
    pub metrics: Metrics,
    pub runs: RunRegistry,
    pub limits: RequestLimits,
    pub languages: Vec<Language>,
    /// The tokens file, which no file tool may read or write (`--tokens`).
    pub tokens_file: Option<std::path::PathBuf>,
    /// The warm sandbox pool, when the backend has one (its counters go to `/metrics`).
    pub pool: Option<airlock_sandbox::native::pool::PoolHandle>,
    shutting_down: AtomicBool,
}

/// A run starts in its cwd: a folder of the tenant's own workspace that does
/// not exist is `404 not_found`, said at once (not a sandbox that fails to
/// chdir). Paths that leave the workspace are not looked at here: the gate
/// refuses them. A check only judges, so it does not need the folder.
///
/// The cwd is resolved beneath the root (`openat2` with `RESOLVE_BENEATH`): a
/// symlink that leads out of the workspace is never followed, so the answer
/// for it is the same whether or not its target exists. Following it would
/// have this server (often root) tell any caller which host folders exist.
fn cwd_exists(cwd: &Path, root: &Path) -> Result<(), ApiError> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let lexical = lexical_normal(cwd);
    let Ok(rel) = lexical.strip_prefix(root) else {
        return Ok(());
    };
    let Ok(root_fd) = rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        // No workspace to look in: the run's own setup says what is wrong.
        return Ok(());
    };
    let rel = match rel.as_os_str().is_empty() {
        true => Path::new("."),
        false => rel,
    };
    let opened = rustix::fs::openat2(
        &root_fd,
        rel,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    );
    match opened {
        Ok(_) => Ok(()),
        // Missing, or not a folder, inside the workspace (a symlink loop
        // too: the walk never left it).
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP) => {
            Err(ApiError::new(
                ErrorCode::NotFound,
                format!(
                    "cwd {:?} is not a folder of the workspace",
                    rel.display().to_string()
                ),
            ))
        }
        // A name longer than the filesystem takes (or a path longer than
        // PATH_MAX) can name no folder: the caller's mistake, not the
        // sandbox's (it was a 500 `sandbox_error` from chdir in the sandbox).
        Err(rustix::io::Errno::NAMETOOLONG) => Err(ApiError::new(
            ErrorCode::InvalidCwd,
            format!(
                "cwd {:?} has a name longer than the filesystem allows (255 bytes per name, 4096 in all); name a folder of the workspace",
                short_text(&rel.display().to_string())
            ),
        )),
        // EXDEV: a symlink or `..` leads out of the workspace, which the gate
        // refuses; anything else is left to the gate and the run too.
        Err(_) => Ok(()),
    }
}

/// A caller's text for an error message: at most 64 characters of it, so
/// that an over-long value is not echoed back in full.
fn short_text(text: &str) -> String {
    const KEEP: usize = 64;
    match text.char_indices().nth(KEEP) {
        Some((at, _)) => format!("{}… ({} bytes)", &text[..at], text.len()),
        None => text.to_string(),
    }
}

/// `path` with `.` and `..` folded away without touching the filesystem.
fn lexical_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Load a tenant's policy: a file, or (for `None`) the usual chain
/// (`$AIRLOCK_POLICY`, `./airlock.toml`, the built-in default rooted at the cwd).
pub fn load_policy(path: Option<&Path>) -> anyhow::Result<Policy> {
    let cwd = std::env::current_dir()?;
    let loaded = airlock_core::toolchains::resolve(path, &cwd)?;
    for warning in &loaded.warnings {
        eprintln!("airlock: policy warning: {warning}");
    }
    Ok(loaded.policy)
}

impl Service {
    pub fn new(
        engine: Arc<Engine>,
        admission: Arc<Admission>,
        check_admission: Arc<Admission>,
        limits: RequestLimits,
        languages: Vec<Language>,
    ) -> Service {
        Service {
            engine,
            admission,
            check_admission,
            metrics: Metrics::default(),
            runs: RunRegistry::new(4096, crate::serve::runs::DEFAULT_OUTPUT_BUDGET),
            limits,
            languages,
            tokens_file: None,
            pool: None,
            shutting_down: AtomicBool::new(false),
        }
    }

    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        self.admission.close();
        self.check_admission.close();
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// Turn caller input into a gate request (and the policy to run it under),
    /// enforcing the size limits and the language list.
    pub fn prepare(
        &self,
        tenant: &Tenant,
        input: RunInput,
    ) -> Result<(Request, Arc<Policy>), ApiError> {
        let bad = |m: String| ApiError::new(ErrorCode::BadRequest, m);
        let command = match (input.command, input.argv, input.code) {
            (Some(command), None, None) => {
                if input.language.is_some() {
                    return Err(bad("`language` goes with `code`, not with `command`".into()));
                }
                self.check_command_size(command.len())?;
                // Whitespace as Python's str.isspace() sees it (which adds the
                // information separators U+001C..U+001F), so that the API agrees
                // with the schema's `\S` pattern as clients check it.
                if command
                    .chars()
                    .all(|c| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
                {
                    return Err(bad("`command` is empty".into()));
                }
                Command::Shell { command }
            }
            (None, Some(argv), None) => {
                if input.language.is_some() {
                    return Err(bad("`language` goes with `code`, not with `argv`".into()));
                }
                if argv.is_empty() || argv[0].is_empty() {
                    return Err(bad("`argv` needs a program".into()));
                }
                self.check_command_size(argv.iter().map(|a| a.len() + 1).sum())?;
                Command::Argv { argv }
            }
            (None, None, Some(source)) => {
                if source.len() > self.limits.code_bytes {
                    return Err(ApiError::new(
                        ErrorCode::CodeTooLarge,
                        format!(
                            "code is {} bytes; the limit is {}",
                            source.len(),
                            self.limits.code_bytes
                        ),
                    ));
                }
                let wanted = input.language.as_deref().unwrap_or("python");
                let language = self
                    .languages
                    .iter()
                    .find(|l| l.name() == wanted)
                    .ok_or_else(|| {
                        let known: Vec<&str> = self.languages.iter().map(|l| l.name()).collect();
                        ApiError::new(
                            ErrorCode::UnsupportedLanguage,
                            format!(
                                "language {:?} is not enabled here (enabled: {})",
                                short_text(wanted),
                                known.join(", ")
                            ),
                        )
                    })?;
                match language {
                    Language::Builtin(name) => Command::Code {
                        language: name.clone(),
                        source,
                    },
                    Language::Interpreter { argv, .. } => {
                        let mut argv = argv.clone();
                        argv.push(source);
                        Command::Argv { argv }
                    }
                }
            }
            _ => return Err(bad("give exactly one of `command`, `argv` or `code`".into())),
        };
        let root = &tenant.policy.workspace.root;
        let cwd = match input.cwd.as_deref() {
            None | Some("") => root.clone(),
            Some(text) if text.contains('\0') => {
                return Err(ApiError::new(
                    ErrorCode::InvalidCwd,
                    "cwd contains a NUL byte",
                ))
            }
            Some(text) if text.len() > 4096 => {
                return Err(ApiError::new(
                    ErrorCode::InvalidCwd,
                    "cwd is longer than 4096 bytes",
                ))
            }
            // Whether it is inside the workspace is the gate's question (step 1).
            Some(text) => root.join(PathBuf::from(text)),
        };
        let policy = match input.timeout_s {
            None => tenant.policy.clone(),
            Some(t) if !t.is_finite() || t <= 0.0 => {
                return Err(bad(
                    "`timeout_s` must be a positive number of seconds".into()
                ))
            }
            Some(t) => {
                let wanted_ms = (t * 1000.0).ceil().min(u64::MAX as f64) as u64;
                let limit_ms = tenant.policy.limits.timeout.ms;
                if wanted_ms > limit_ms {
                    // As `airlock run --timeout` refuses it: a run that asked for
                    // more must not be stopped early without having been told.
                    let limit = limit_ms as f64 / 1000.0;
                    // JSON's shortest form: 600.0, 3.5e307 (not 308 digits).
                    let t =
                        serde_json::Number::from_f64(t).map_or(t.to_string(), |n| n.to_string());
                    return Err(ApiError::new(
                        ErrorCode::TimeoutAbovePolicy,
                        format!(
                            "`timeout_s` {t} is longer than this token's policy allows \
                             (limits.timeout = {limit} s): a request can only shorten it. \
                             Hint: send timeout_s <= {limit}, or leave it out to get {limit} s; \
                             a longer limit needs [limits] timeout raised in the policy."
                        ),
                    ));
                }
                if wanted_ms < limit_ms {
                    // Tightening only: the sandbox spec still comes from the policy.
                    let mut tighter = (*tenant.policy).clone();
                    tighter.limits.timeout.ms = wanted_ms;
                    tighter.limits.cpu_time.ms = tighter.limits.cpu_time.ms.min(wanted_ms);
                    Arc::new(tighter)
                } else {
                    tenant.policy.clone()
                }
            }
        };
        if let Some(id) = &input.approval_id {
            if id.is_empty() || id.len() > 128 {
                return Err(bad("`approval_id` must be 1-128 characters".into()));
            }
        }
        let request = Request {
            command,
            cwd,
            loosening: Default::default(),
        };
        Ok((request, policy))
    }

    fn check_command_size(&self, len: usize) -> Result<(), ApiError> {
        if len > self.limits.command_bytes {
            return Err(ApiError::new(
                ErrorCode::CommandTooLarge,
                format!(
                    "command is {len} bytes; the limit is {}",
                    self.limits.command_bytes
                ),
            ));
        }
        Ok(())
    }

    /// Ask the gate. Pure and fast, but it may touch the filesystem (symlinks),
    /// so it runs on the blocking pool too.
    pub async fn check(
        &self,
        tenant: Arc<Tenant>,
        input: RunInput,
    ) -> Result<CheckResult, ApiError> {
        let started = Instant::now();
        let (request, policy) = self.prepare(&tenant, input)?;
        let slot = self.admit_to(&self.check_admission, "check").await?;
        let engine = self.engine.clone();
        let caller = tenant.caller.clone();
        let checked = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            engine.check(&caller, &policy, &request)
        })
        .await
        .map_err(|e| ApiError::new(ErrorCode::Internal, format!("check task failed: {e}")))?
        .map_err(engine_error)?;
        self.metrics.inc(
            "airlock_decisions_total",
            "verdict",
            checked.decision.decision.as_str(),
        );
        self.metrics.observe(
            "airlock_request_duration_seconds",
            "endpoint",
            "check",
            started.elapsed(),
        );
        Ok(CheckResult {
            request_id: checked.request_id,
            caller: tenant.name.clone(),
            audit_id: checked.audit_id,
            decision: checked.decision,
        })
    }

    /// Validate a run and wait for a slot (or be refused with `queue_full`).
    /// Split from [`Service::execute`] so that a streaming response can still
    /// answer 429 before its body starts.
    pub async fn admit_run(
        &self,
        tenant: Arc<Tenant>,
        mut input: RunInput,
    ) -> Result<Admitted, ApiError> {
        let started = Instant::now();
        let approval_id = input.approval_id.clone();
        // Taken, not copied (up to the body's limit); the gate never reads it.
        let stdin = input.stdin.take();
        let (request, policy) = self.prepare(&tenant, input)?;
        cwd_exists(&request.cwd, &tenant.policy.workspace.root)?;
        // A client that leaves while its run waits for a slot drops this
        // future: the guard then puts the request's decision on record.
        let mut abandoned = RecordIfAbandoned(Some((
            self.engine.clone(),
            tenant.caller.clone(),
            policy.clone(),
            request.clone(),
        )));
        let slot = self.admit_to(&self.admission, "run").await;
        abandoned.0 = None;
        let slot = slot?;
        Ok(Admitted {
            tenant,
            request,
            policy,
            approval_id,
            stdin,
            slot,
            started,
            cancel: Cancel::default(),
        })
    }

    /// Run an admitted request through the engine on the blocking pool. The run
    /// slot is released only when the sandbox has finished, even if the caller
    /// went away meanwhile.
    pub async fn execute(
        self: &Arc<Self>,
        admitted: Admitted,
        live: Option<tokio::sync::mpsc::UnboundedSender<Chunk>>,
        endpoint: &'static str,
    ) -> Result<RunResult, ApiError> {
        let Admitted {
            tenant,
            request,
            policy,
            approval_id,
            stdin,
            slot,
            started,
            cancel,
        } = admitted;
        // Dropped with this future (a client that went away) before the
        // engine returned: the sandbox is killed.
        let on_drop = CancelOnDrop(Some(cancel.clone()));
        self.metrics.observe(
            "airlock_queue_wait_seconds",
            "endpoint",
            endpoint,
            started.elapsed(),
        );
        let backend = self.engine.backend_name(&policy);
        let service = self.clone();
        let tenant_caller = tenant.caller.clone();
        let profiling = std::env::var_os("AIRLOCK_PROFILE").is_some();
        let task = tokio::task::spawn_blocking(move || {
            if profiling {
                profile(format_args!(
                    "{:>8.2} ms  serve: on the blocking pool",
                    started.elapsed().as_secs_f64() * 1000.0
                ));
            }
            let _slot = slot;
            let mut sink = ChannelSink { live, cancel };
            let ran = Instant::now();
            let options = RunOptions {
                approval_id,
                stdin: stdin.map(String::into_bytes),
                defer_execution_sync: true,
                ..Default::default()
            };
            let result = service
                .engine
                .run(&tenant_caller, &policy, &request, options, &mut sink);
            (result, ran.elapsed(), Instant::now())
        });
        let (result, ran_for, returned) = task
            .await
            .map_err(|e| ApiError::new(ErrorCode::Internal, format!("run task failed: {e}")))?;
        on_drop.disarm();
        if profiling {
            profile(format_args!(
                "{:>8.2} ms  serve: back on the async side ({:.2} ms after the engine returned)",
                started.elapsed().as_secs_f64() * 1000.0,
                returned.elapsed().as_secs_f64() * 1000.0
            ));
        }
        // The execution record is written; its sync runs beside the answer.
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = engine.sync_deferred() {
                eprintln!("airlock serve: refusing every further run: {e}");
            }
        });
        let response = result.map_err(engine_error)?;
        self.metrics.inc(
            "airlock_decisions_total",
            "verdict",
            response.decision.decision.as_str(),
        );
        if let Some(outcome) = &response.outcome {
            self.metrics.observe(
                "airlock_sandbox_duration_seconds",
                "backend",
                backend,
                ran_for,
            );
            let ended = match outcome.killed_by {
                Some(reason) => {
                    let reason = serde_json::to_value(reason)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_else(|| "unknown".into());
                    self.metrics.inc("airlock_kills_total", "reason", &reason);
                    "killed"
                }
                None if outcome.exit_code == Some(0) => "success",
                None => "failure",
            };
            self.metrics.inc("airlock_runs_total", "ended", ended);
        }
        self.metrics.observe(
            "airlock_request_duration_seconds",
            "endpoint",
            endpoint,
            started.elapsed(),
        );
        let result = RunResult {
            request_id: response.request_id,
            caller: tenant.name.clone(),
            status: response.status,
            message: response.message,
            decision: response.decision,
            approval: response.approval,
            refusal: response.refusal,
            backend: response.outcome.as_ref().map(|_| backend.to_string()),
            outcome: response.outcome,
            audit_ids: response.audit_ids,
            output_evicted: false,
        };
        self.runs.insert(&tenant.name, result.clone());
        if profiling {
            profile(format_args!(
                "{:>8.2} ms  serve: result ready",
                started.elapsed().as_secs_f64() * 1000.0
            ));
        }
        Ok(result)
    }

    /// Admit and execute.
    pub async fn run(
        self: &Arc<Self>,
        tenant: Arc<Tenant>,
        input: RunInput,
        endpoint: &'static str,
    ) -> Result<RunResult, ApiError> {
        let admitted = self.admit_run(tenant, input).await?;
        self.execute(admitted, None, endpoint).await
    }

    /// Take a slot of `admission` (`what`: `run` or `check`), or refuse with
    /// `queue_full` (429, Retry-After) when its slots and queue are full.
    async fn admit_to(
        &self,
        admission: &Arc<Admission>,
        what: &'static str,
    ) -> Result<crate::serve::admission::Slot, ApiError> {
        if self.is_shutting_down() {
            return Err(ApiError::new(
                ErrorCode::ShuttingDown,
                "the server is shutting down",
            ));
        }
        match admission.admit().await {
            Ok(slot) => Ok(slot),
            Err(AdmissionRefusal::QueueFull) => {
                let reason = if what == "run" {
                    "queue_full"
                } else {
                    "check_queue_full"
                };
                self.metrics.inc("airlock_rejected_total", "reason", reason);
                Err(ApiError::new(
                    ErrorCode::QueueFull,
                    format!(
                        "all {} {what} slots are busy and {} {what} requests are already queued; retry later",
                        admission.concurrency(),
                        admission.max_queue()
                    ),
                )
                .with_retry_after(1))
            }
            Err(AdmissionRefusal::Closed) => Err(ApiError::new(
                ErrorCode::ShuttingDown,
                "the server is shutting down",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::cwd_exists;
    use std::os::unix::fs::symlink;

    /// A symlink out of the workspace gets the same answer whether its target
    /// exists or not (the gate refuses both); a folder of the workspace, or a
    /// link to one, passes; what is missing or not a folder inside is 404.
    #[test]
    fn cwd_check_never_looks_outside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(ws.join("file"), "x").unwrap();
        symlink(&outside, ws.join("to-existing")).unwrap();
        symlink(outside.join("missing"), ws.join("to-missing")).unwrap();
        symlink("../outside", ws.join("rel-existing")).unwrap();
        symlink("../outside/missing", ws.join("rel-missing")).unwrap();
        symlink("sub", ws.join("to-sub")).unwrap();
        symlink("loop", ws.join("loop")).unwrap();

        let answer = |p: &str| {
            cwd_exists(&ws.join(p), &ws)
                .map_err(|e| e.code.as_str())
                .err()
        };
        for p in ["to-existing", "to-missing", "rel-existing", "rel-missing"] {
            assert_eq!(answer(p), None, "{p}: left to the gate");
            assert_eq!(answer(&format!("{p}/deeper")), None, "{p}/deeper");
        }
        for p in ["", ".", "sub", "to-sub", "sub/../sub"] {
            assert_eq!(answer(p), None, "{p}");
        }
        for p in ["missing", "file", "loop", "sub/missing"] {
            assert_eq!(answer(p), Some("not_found"), "{p}");
        }
        // Finding 12 of the audit review: a name too long for the filesystem
        // is the caller's mistake (400), not a sandbox error (500), and is
        // not echoed back in full.
        let long = "a".repeat(300);
        assert_eq!(answer(&long), Some("invalid_cwd"));
        let e = cwd_exists(&ws.join(&long), &ws).unwrap_err();
        assert!(
            e.message.contains("longer than the filesystem allows"),
            "{}",
            e.message
        );
        assert!(e.message.len() < 300, "{}", e.message);
    }
}
