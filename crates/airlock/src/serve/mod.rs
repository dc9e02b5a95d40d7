//! `airlock serve`: the HTTP JSON API (and MCP over streamable HTTP at `/mcp`).
//!
//! Layers, one module each: where it listens ([`listen`]), who is calling
//! ([`tenants`]), how many run at once ([`admission`]), what it answers
//! ([`routes`], [`ops`]), what it counts ([`metrics`]), and how it stops
//! ([`shutdown`]). Every request goes through [`service::Service`] to the one
//! `airlock_core::Engine`.

pub mod admission;
pub mod backend;
pub mod conn;
pub mod error;
pub mod listen;
pub mod metrics;
pub mod ops;
pub mod routes;
pub mod runs;
pub mod service;
pub mod shutdown;
pub mod tenants;

use anyhow::Context;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The OpenAPI document, kept at the repository root and served verbatim.
pub const OPENAPI_JSON: &str = include_str!("../../../../openapi.json");

/// Everything `airlock serve` is configured with.
#[derive(Debug, Clone)]
pub struct Options {
    pub socket: Option<PathBuf>,
    pub no_socket: bool,
    pub listen: Option<SocketAddr>,
    pub allow_remote: bool,
    pub tokens: Option<PathBuf>,
    pub policy: Option<PathBuf>,
    pub concurrency: usize,
    pub queue: usize,
    pub check_concurrency: usize,
    pub check_queue: usize,
    pub limits: service::RequestLimits,
    pub languages: Vec<service::Language>,
    pub shutdown_grace: Duration,
    pub mcp: bool,
    pub mcp_allowed_origins: Vec<String>,
    /// Live MCP sessions allowed per tenant and in all.
    pub mcp_sessions: crate::mcp::sessions::SessionCaps,
    /// Timeouts and connection caps.
    pub conn: conn::ConnConfig,
    /// The warm sandbox pool in front of the engine's backend, for metrics.
    pub pool: Option<airlock_sandbox::native::pool::PoolHandle>,
}

/// Catch SIGTERM/SIGINT, bind the listeners, then run the server until one
/// of those signals and a complete drain.
pub fn run(options: Options, engine: airlock_core::Engine) -> anyhow::Result<()> {
    let tenants = match &options.tokens {
        Some(path) => tenants::Tenants::load(path, &|p| match p {
            Some(p) => service::load_policy(Some(p)),
            None => service::load_policy(options.policy.as_deref()),
        })?,
        None => {
            if options.listen.is_some() {
                anyhow::bail!(
                    "--listen needs --tokens FILE: any local user can reach a TCP port, so TCP \
                     callers must authenticate (the unix socket alone may run without tokens)"
                );
            }
            let policy = service::load_policy(options.policy.as_deref())?;
            tenants::Tenants::local_only(Arc::new(policy), "local")
        }
    };
    if options.no_socket && options.listen.is_none() {
        anyhow::bail!("--no-socket without --listen leaves nothing to listen on");
    }
    let secrets = secrets(
        airlock_core::resolve_state_dir()?,
        options.tokens.as_deref(),
    );
    let trees: Vec<_> = tenants
        .all()
        .iter()
        .flat_map(|t| shown_trees(&t.name, &t.policy))
        .collect();
    check_secrets_outside_workspaces(&secrets, &trees)?;
    let socket_path = if options.no_socket {
        None
    } else {
        Some(match &options.socket {
            Some(p) => p.clone(),
            None => listen::default_socket_path()?,
        })
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("airlock-serve")
        .build()
        .context("cannot start the async runtime")?;
    // Set once this server has bound its socket: only then is the file its own
    // to remove (a refused bind may have found another server's).
    let mut bound_socket = None;
    let result = runtime.block_on(async {
        // Signals first: from the moment the socket exists, SIGTERM drains.
        let signals = shutdown::Signals::install();
        // Bound before any task runs: bind_unix sets the process-wide umask,
        // and no thread creates files meanwhile (the runtime's workers and the
        // warm pool's refill thread are idle until the first request).
        let unix = socket_path.as_deref().map(listen::bind_unix).transpose()?;
        bound_socket = unix.as_ref().and(socket_path.clone());
        let tcp = options
            .listen
            .map(|a| listen::bind_tcp(a, options.allow_remote))
            .transpose()?;
        serve(
            options,
            engine,
            tenants,
            unix,
            tcp,
            socket_path.clone(),
            signals,
        )
        .await
    });
    if let Some(path) = &bound_socket {
        let _ = std::fs::remove_file(path);
    }
    // Anything still on the blocking pool has finished its sandbox by now
    // (drain waited); do not hang on idle pool threads.
    runtime.shutdown_timeout(Duration::from_secs(2));
    result
}

async fn serve(
    options: Options,
    engine: airlock_core::Engine,
    tenants: tenants::Tenants,
    unix: Option<std::os::unix::net::UnixListener>,
    tcp: Option<std::net::TcpListener>,
    socket_path: Option<PathBuf>,
    signals: shutdown::Signals,
) -> anyhow::Result<()> {
    let admission = admission::Admission::new(options.concurrency, options.queue);
    let mut service = service::Service::new(
        Arc::new(engine),
        admission,
        admission::Admission::new(options.check_concurrency, options.check_queue),
        options.limits.clone(),
        options.languages.clone(),
    );
    service.tokens_file = options.tokens.clone();
    service.pool = options.pool.clone();
    let service = Arc::new(service);
    let tenants = Arc::new(tenants);
    let stop = tokio_util_token();
    let connections = conn::limits::Limits::new(options.conn.clone());
    let state = routes::AppState {
        service: service.clone(),
        tenants: tenants.clone(),
        connections: connections.clone(),
    };
    let mcp = options.mcp.then(|| {
        crate::mcp::http_router(
            service.clone(),
            options.mcp_allowed_origins.clone(),
            options.mcp_sessions,
            stop.child_token(),
        )
    });
    let app = routes::router(state, mcp, options.conn.body_timeout);

    let mut servers = Vec::new();
    if let Some(listener) = unix {
        let listener = tokio::net::UnixListener::from_std(listener)?;
        eprintln!(
            "airlock serve: listening on unix:{}",
            socket_path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        );
        servers.push(tokio::spawn(conn::serve(
            conn::Listener::Unix(listener),
            app.clone(),
            connections.clone(),
            stop.clone(),
        )));
    }
    if let Some(listener) = tcp {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        eprintln!(
            "airlock serve: listening on http://{}",
            listener.local_addr()?
        );
        servers.push(tokio::spawn(conn::serve(
            conn::Listener::Tcp(listener),
            app.clone(),
            connections.clone(),
            stop.clone(),
        )));
    }
    eprintln!(
        "airlock serve: {} run slot(s), queue {}, {} warm sandbox(es){}; {} check slot(s), queue {}; at most {} connections ({} per peer), header/body/idle timeouts {:?}/{:?}/{:?}; tenants: {}",
        service.admission.concurrency(),
        service.admission.max_queue(),
        options.pool.as_ref().map_or(0, |p| p.size()),
        match options.pool.as_ref().and_then(|p| p.memory_limit()) {
            Some(bytes) => format!(" holding at most {} KiB", bytes / 1024),
            None => String::new(),
        },
        service.check_admission.concurrency(),
        service.check_admission.max_queue(),
        options.conn.max_connections,
        options.conn.max_per_peer,
        options.conn.header_timeout,
        options.conn.body_timeout,
        options.conn.idle_timeout,
        if tenants.requires_tokens() {
            tenants.names().join(", ")
        } else {
            "local (no tokens file)".into()
        }
    );

    // Audit checkpoints on a timer, so that the records of a quiet period are
    // signed without waiting for the next append.
    let checkpoints = service
        .engine
        .ledger()
        .audit()
        .config()
        .anchor
        .as_ref()
        .map(|anchor| {
            let engine = service.engine.clone();
            let every = anchor.interval;
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                tick.tick().await;
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tick.tick() => {}
                    }
                    let engine = engine.clone();
                    let done = tokio::task::spawn_blocking(move || {
                        engine.ledger().audit().checkpoint(false)
                    })
                    .await;
                    if let Ok(Err(e)) = done {
                        eprintln!("airlock serve: audit checkpoint failed: {e}");
                    }
                }
            })
        });

    let why = signals.recv().await;
    eprintln!("airlock serve: {why}: no longer accepting; draining");
    service.begin_shutdown();
    stop.cancel();
    let killed = shutdown::drain(&service, options.shutdown_grace).await;
    // Execution records still waiting for their sync.
    let engine = service.engine.clone();
    if let Ok(Err(e)) = tokio::task::spawn_blocking(move || engine.sync_deferred()).await {
        eprintln!("airlock serve: {e}");
    }
    // Warm sandboxes never ran anything: tear them down and wait for it.
    if let Some(pool) = options.pool.clone() {
        let _ = tokio::task::spawn_blocking(move || pool.stop()).await;
    }
    // Connections still open (streams delivering their last line) get a moment.
    for server in servers {
        let _ = tokio::time::timeout(Duration::from_secs(2), server).await;
    }
    // Sign what the last period added before stopping.
    if let Some(task) = checkpoints {
        task.abort();
        let engine = service.engine.clone();
        match tokio::task::spawn_blocking(move || engine.ledger().audit().checkpoint(true)).await {
            Ok(Ok(Some(r))) => eprintln!("airlock serve: audit checkpoint {}", r.id),
            Ok(Err(e)) => eprintln!("airlock serve: final audit checkpoint failed: {e}"),
            _ => {}
        }
    }
    eprintln!(
        "airlock serve: stopped ({} sandbox(es) killed at the deadline, {} still running)",
        killed,
        service.admission.running()
    );
    Ok(())
}

/// A tree a tenant's runs are shown from the host: its workspace root and
/// its `filesystem.read` and `filesystem.write` paths, with what each is.
pub fn shown_trees(
    tenant: &str,
    policy: &airlock_policy::Policy,
) -> Vec<(String, &'static str, PathBuf)> {
    airlock_core::state::shown_trees(policy)
        .map(|(what, p)| (tenant.to_string(), what, p.clone()))
        .collect()
}

/// The files airlock lives by that no tenant's run may see: the state
/// directory (audit log, approvals, run directories), the tokens file and the
/// audit signing key and checkpoint export file, where configured.
pub fn secrets(
    state_dir: PathBuf,
    tokens: Option<&std::path::Path>,
) -> Vec<(&'static str, PathBuf)> {
    let mut secrets = vec![("state directory", state_dir)];
    if let Some(tokens) = tokens {
        secrets.push(("tokens file", tokens.to_path_buf()));
    }
    secrets.extend(airlock_core::ledger::audit_files_from_env());
    secrets
}

/// Refuse to serve a workspace, read path or write path that contains the
/// state directory (audit log, approvals, run directories), the tokens file
/// or the audit signing key or checkpoint file: every sandboxed command of
/// that tenant could read them (an agent could lift another tenant's token,
/// or the key that makes a rewritten log pass `audit verify --key`). And the
/// other way round: a tree that is the state directory or lies inside it,
/// which no hiding can cover.
pub fn check_secrets_outside_workspaces(
    secrets: &[(&str, PathBuf)],
    trees: &[(String, &str, PathBuf)],
) -> anyhow::Result<()> {
    let real = |p: &std::path::Path| {
        std::fs::canonicalize(p)
            .unwrap_or_else(|_| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
    };
    for (what, path) in secrets {
        for (tenant, kind, tree) in trees {
            let inside = real(path).starts_with(real(tree))
                || airlock_policy::load::absolute_lexical(path)
                    .starts_with(airlock_policy::load::absolute_lexical(tree));
            if inside {
                anyhow::bail!(
                    "refused: the {what} {} is inside the {kind} {} of `{tenant}`: sandboxed \
                     commands could read it. Move it out (AIRLOCK_STATE_DIR, --tokens, \
                     AIRLOCK_AUDIT_SIGNING_KEY, AIRLOCK_AUDIT_CHECKPOINT_FILE) or narrow the {kind}",
                    path.display(),
                    tree.display()
                );
            }
            if *what == "state directory" {
                airlock_core::state::refuse_tree_in_state_dir(
                    path,
                    &format!("{kind} of `{tenant}`"),
                    tree,
                )
                .map_err(anyhow::Error::msg)?;
            }
        }
    }
    Ok(())
}

fn tokio_util_token() -> tokio_util::sync::CancellationToken {
    tokio_util::sync::CancellationToken::new()
}
