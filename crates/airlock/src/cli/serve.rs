//! `airlock serve`: flags, then hand over to `crate::serve`.

use crate::serve::service::{Language, RequestLimits};
use crate::serve::Options;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(after_help = "\
Listens on a unix socket (mode 0600) at $AIRLOCK_STATE_DIR/airlock.sock by default
(the state directory is $AIRLOCK_STATE_DIR, else $XDG_STATE_HOME/airlock, else
/var/lib/airlock for root). Without --tokens, only the socket is served and its
callers act as the local user under --policy. With --tokens, every request needs
`Authorization: Bearer TOKEN`, and each token brings its own policy.

Tokens file (TOML):
  [[token]]
  name = \"ci-agent\"          # recorded in the audit log as the caller
  sha256 = \"<hex sha256 of the token>\"   # or token = \"...\" in a 0600 file
  policy = \"ci.toml\"         # relative to the tokens file; default: --policy chain
  role = \"agent\"             # or \"approver\" (answers approvals, manages grants)
  tenants = [\"ci-agent\"]     # approvers: the tokens they answer for ([\"*\"]: all)

Non-loopback --listen addresses are refused: this build has no TLS.
SIGTERM/SIGINT: stop accepting, let running sandboxes finish for
--shutdown-grace, then kill them and wait for their teardown.")]
pub struct Args {
    /// Unix socket path (default: <state dir>/airlock.sock).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Do not listen on a unix socket (needs --listen).
    #[arg(long)]
    pub no_socket: bool,
    /// Also listen on TCP, loopback only (e.g. 127.0.0.1:8787). Needs --tokens.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<SocketAddr>,
    /// Accepted for clarity, but non-loopback listening still needs TLS, which
    /// this build does not implement: a non-loopback address is always refused.
    #[arg(long)]
    pub allow_remote: bool,
    /// Bearer tokens file (TOML; see below).
    #[arg(long, value_name = "FILE", env = "AIRLOCK_TOKENS")]
    pub tokens: Option<PathBuf>,
    /// Policy for the local caller and for tokens without their own policy
    /// (default: $AIRLOCK_POLICY, ./airlock.toml, the built-in default).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Sandboxes that may run at once (default: number of CPUs).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Run requests that may wait for a slot; past that, 429 with Retry-After.
    #[arg(long, default_value_t = 64)]
    pub queue: usize,
    /// Warm sandboxes kept built ahead of demand, each used by one command
    /// and then destroyed (0: build every sandbox when its request comes).
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub pool: usize,
    /// Memory the waiting warm sandboxes may hold together (e.g. 64MiB; each
    /// holds about 3 MiB here, measured as its processes' Pss): no sandbox is
    /// built past it. Default: no bound besides --pool.
    #[arg(long, value_name = "SIZE", value_parser = parse_pool_memory)]
    pub pool_memory: Option<u64>,
    /// Checks (`/v1/check`, MCP `check_command`) judged at once (default: twice
    /// the CPUs, at least 4): each costs shell analysis and an fsynced record.
    #[arg(long)]
    pub check_concurrency: Option<usize>,
    /// Checks that may wait for a slot; past that, 429 with Retry-After.
    #[arg(long, default_value_t = 256)]
    pub check_queue: usize,
    /// Largest request body, bytes.
    #[arg(long, default_value_t = 1 << 20)]
    pub max_body: usize,
    /// Largest shell command (or argv, joined), bytes.
    #[arg(long, default_value_t = 64 << 10)]
    pub max_command: usize,
    /// Largest code submission, bytes.
    #[arg(long, default_value_t = 256 << 10)]
    pub max_code: usize,
    /// Languages `code` may be in: python, bash, sh, or NAME=PROGRAM[,ARG...]
    /// (the source is appended as the last argument). Repeatable; default: python, bash, sh.
    #[arg(long = "language", value_name = "LANG")]
    pub languages: Vec<String>,
    /// Seconds running sandboxes get to finish after SIGTERM before they are killed.
    #[arg(long, default_value_t = 10.0)]
    pub shutdown_grace: f64,
    /// Seconds a client has from connecting (or from the first byte of its next
    /// request) to send a complete request head; then the connection is closed.
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    pub header_timeout: f64,
    /// Seconds a client has to send the whole request body; else 408.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub body_timeout: f64,
    /// Seconds a kept-alive connection may wait for its next request.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    pub idle_timeout: f64,
    /// Connections open at once on each listener (the unix socket and TCP
    /// each have their own); past it, 503 too_many_connections and the
    /// connection is closed.
    #[arg(long, default_value_t = 512)]
    pub max_connections: usize,
    /// Connections open at once from one peer (a TCP source address, every
    /// loopback address counting as one; or a uid on the unix socket).
    #[arg(long, default_value_t = 128)]
    pub max_connections_per_peer: usize,
    /// Do not serve MCP (streamable HTTP) at /mcp.
    #[arg(long)]
    pub no_mcp: bool,
    /// An Origin allowed to use /mcp (e.g. http://localhost:3000). Repeatable.
    /// Requests with any other Origin header are refused; requests without one pass.
    #[arg(long = "mcp-allow-origin", value_name = "ORIGIN")]
    pub mcp_allow_origins: Vec<String>,
    /// Live MCP sessions one token may hold at /mcp; past it a new session is
    /// refused with 429 until one ends (DELETE, or idle expiry).
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub mcp_max_sessions_per_token: usize,
    /// Live MCP sessions the server holds in all; past it a new session is
    /// refused with 503.
    #[arg(long, default_value_t = 256, value_name = "N")]
    pub mcp_max_sessions: usize,
    /// Seconds an MCP session at /mcp may go without a request before it ends
    /// and frees its slot (a client that vanished without DELETE).
    #[arg(long, default_value_t = 300.0, value_name = "SECONDS")]
    pub mcp_session_idle: f64,
}

fn parse_pool_memory(text: &str) -> Result<u64, String> {
    airlock_policy::load::parse_size(text)
}

/// The largest `--pool`.
pub const MAX_POOL: usize = 64;

pub fn languages(list: &[String]) -> anyhow::Result<Vec<Language>> {
    if list.is_empty() {
        return Ok(Language::defaults());
    }
    list.iter()
        .map(|l| Language::parse(l).map_err(anyhow::Error::msg))
        .collect()
}

pub fn default_check_concurrency() -> usize {
    (default_concurrency() * 2).max(4)
}

pub fn default_concurrency() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    if !(args.shutdown_grace.is_finite() && args.shutdown_grace >= 0.0) {
        anyhow::bail!("--shutdown-grace must be a non-negative number of seconds");
    }
    let seconds = |name: &str, v: f64| {
        if v.is_finite() && v > 0.0 && v <= 86_400.0 {
            Ok(std::time::Duration::from_secs_f64(v))
        } else {
            Err(anyhow::anyhow!(
                "--{name} must be a number of seconds above 0 and at most 86400"
            ))
        }
    };
    if args.max_connections == 0 || args.max_connections_per_peer == 0 {
        anyhow::bail!("--max-connections and --max-connections-per-peer must be at least 1");
    }
    if args.mcp_max_sessions == 0 || args.mcp_max_sessions_per_token == 0 {
        anyhow::bail!(
            "--mcp-max-sessions and --mcp-max-sessions-per-token must be at least 1 (--no-mcp \
             turns /mcp off)"
        );
    }
    let conn = crate::serve::conn::ConnConfig {
        header_timeout: seconds("header-timeout", args.header_timeout)?,
        body_timeout: seconds("body-timeout", args.body_timeout)?,
        idle_timeout: seconds("idle-timeout", args.idle_timeout)?,
        max_connections: args.max_connections,
        max_per_peer: args.max_connections_per_peer.min(args.max_connections),
    };
    let options = Options {
        socket: args.socket,
        no_socket: args.no_socket,
        listen: args.listen,
        allow_remote: args.allow_remote,
        tokens: args.tokens,
        policy: args.policy,
        concurrency: args.concurrency.unwrap_or_else(default_concurrency),
        queue: args.queue,
        check_concurrency: args
            .check_concurrency
            .unwrap_or_else(default_check_concurrency),
        check_queue: args.check_queue,
        limits: RequestLimits {
            body_bytes: args.max_body,
            command_bytes: args.max_command,
            code_bytes: args.max_code,
        },
        languages: languages(&args.languages)?,
        shutdown_grace: std::time::Duration::from_secs_f64(args.shutdown_grace),
        mcp: !args.no_mcp,
        mcp_allowed_origins: args.mcp_allow_origins,
        mcp_sessions: crate::mcp::sessions::SessionCaps {
            per_tenant: args.mcp_max_sessions_per_token.min(args.mcp_max_sessions),
            total: args.mcp_max_sessions,
            idle: seconds("mcp-session-idle", args.mcp_session_idle)?,
        },
        conn,
        pool: None,
    };
    if let Some(addr) = options.listen {
        crate::serve::listen::check_tcp_address(addr, options.allow_remote)?;
    }
    // The tokens file is airlock's own: no run's changes may write it, in any mode.
    let owned: Vec<_> = options.tokens.iter().cloned().collect();
    if args.pool > MAX_POOL {
        anyhow::bail!(
            "--pool {} is more than {MAX_POOL} warm sandboxes; each holds two processes and a \
             tmpfs. Hint: a pool as large as --concurrency is enough",
            args.pool
        );
    }
    let limits = airlock_sandbox::native::PoolLimits {
        size: args.pool,
        memory: args.pool_memory,
    };
    let (engine, pool) = crate::serve::backend::open_engine_pooled(&owned, limits)?;
    let options = Options {
        pool: Some(pool),
        ..options
    };
    crate::serve::run(options, engine)?;
    Ok(0)
}
