//! `airlock mcp`: the MCP server over stdio (stdout carries only protocol
//! messages; diagnostics go to stderr).

use crate::serve::admission::Admission;
use crate::serve::service::{load_policy, RequestLimits, Service};
use crate::serve::tenants::Tenant;
use anyhow::Context;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct Args {
    /// Policy file (default: $AIRLOCK_POLICY, ./airlock.toml, the built-in default).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Sandboxes that may run at once (default: number of CPUs).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Languages `run_python` and friends may use (see `airlock serve --help`).
    #[arg(long = "language", value_name = "LANG")]
    pub languages: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let policy = load_policy(args.policy.as_deref())?;
    crate::serve::check_secrets_outside_workspaces(
        &crate::serve::secrets(airlock_core::resolve_state_dir()?, None),
        &crate::serve::shown_trees("mcp-stdio", &policy),
    )?;
    let engine = Arc::new(crate::serve::backend::open_engine()?);
    let engine_at_exit = engine.clone();
    let concurrency = args
        .concurrency
        .unwrap_or_else(crate::cli::serve::default_concurrency);
    let languages = crate::cli::serve::languages(&args.languages)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("airlock-mcp")
        .build()
        .context("cannot start the async runtime")?;
    let served = runtime.block_on(async move {
        // The stdio client is the local user; queueing is pointless for one
        // client, so the queue is just deep enough for its concurrent calls.
        let service = Arc::new(Service::new(
            engine,
            Admission::new(concurrency, 64),
            Admission::new(crate::cli::serve::default_check_concurrency(), 64),
            RequestLimits::default(),
            languages,
        ));
        let tenant = Arc::new(Tenant {
            name: "mcp-stdio".into(),
            caller: airlock_core::Caller::cli(),
            policy: Arc::new(policy),
            approves: crate::serve::tenants::Scope::Nobody,
        });
        crate::mcp::serve_stdio(service, tenant).await
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    // Execution records whose sync was left for after their answer.
    engine_at_exit.sync_deferred()?;
    served?;
    Ok(0)
}
