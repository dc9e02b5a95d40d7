//! `airlock`: the command-line front end. Each subcommand lives in its own module
//! under `cli/` and returns the process exit status.

mod cli;
mod kube;
mod mcp;
mod serve;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "airlock",
    version,
    about = "Policy gate, disposable sandbox and audit trail for commands that AI agents run"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Judge a command against the policy without running it.
    Check(cli::check::Args),
    /// Judge a command, and run it in a disposable sandbox if allowed.
    Run(cli::run::Args),
    /// Show, create and validate policy files.
    #[command(subcommand)]
    Policy(cli::policy::Cmd),
    /// Report which isolation layers this host provides.
    Doctor(cli::doctor::Args),
    /// Serve the HTTP JSON API (and MCP at /mcp) on a unix socket or loopback.
    Serve(cli::serve::Args),
    /// Serve the Model Context Protocol over stdio.
    Mcp(cli::mcp::Args),
    /// Read and check the audit log.
    #[command(subcommand)]
    Audit(cli::audit::Cmd),
    /// List, show, approve and deny requests waiting for a person.
    #[command(subcommand)]
    Approvals(cli::approvals::Cmd),
    /// Loosen one boundary for matching commands, for a while.
    Grant(cli::grants::GrantArgs),
    /// List and revoke grants.
    #[command(subcommand)]
    Grants(cli::grants::Cmd),
    /// Show a run's kept change set (the changes an overlay run did not apply).
    Changes(cli::changes::ChangesArgs),
    /// Apply a run's kept change set later, through the same change-set policy.
    Apply(cli::changes::ApplyArgs),
}

fn main() {
    // The sandbox helper is this binary re-executed; it must run before anything
    // else. The wasm helper is airlock-wasm (src/bin/airlock-wasm.rs): wasmtime
    // is not linked here.
    airlock_sandbox::native::maybe_run_helper();
    airlock_sandbox::oci::maybe_run_helper();
    airlock_sandbox::docker::maybe_run_helper();
    airlock_sandbox::microvm::maybe_run_helper();
    let cli = Cli::parse();
    if matches!(cli.command, Cmd::Doctor(_) | Cmd::Policy(_) | Cmd::Audit(_)) {
        airlock_sandbox::process::default_sigpipe();
    }
    let status = match cli.command {
        Cmd::Check(args) => cli::check::run(args),
        Cmd::Run(args) => cli::run::run(args),
        Cmd::Policy(cmd) => cli::policy::run(cmd),
        Cmd::Doctor(args) => cli::doctor::run(args),
        Cmd::Serve(args) => cli::serve::run(args),
        Cmd::Mcp(args) => cli::mcp::run(args),
        Cmd::Audit(cmd) => cli::audit::run(cmd),
        Cmd::Approvals(cmd) => cli::approvals::run(cmd),
        Cmd::Grant(args) => cli::grants::grant(args),
        Cmd::Grants(cmd) => cli::grants::run(cmd),
        Cmd::Changes(args) => cli::changes::changes(args),
        Cmd::Apply(args) => cli::changes::apply(args),
    };
    match status {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            // An error may quote agent text (an id, a command, a path).
            let text = format!("{err:#}");
            eprintln!(
                "airlock: error: {}",
                airlock_core::terminal::escape_text(&text)
            );
            std::process::exit(2);
        }
    }
}
