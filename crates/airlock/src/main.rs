//! `airlock`: the command-line front end. Each subcommand lives in its own module
//! under `cli/` and returns the process exit status.

mod cli;
mod mcp;
mod serve;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "airlock", version, about = "Policy gate, disposable sandbox and audit trail for commands that AI agents run")]
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
}

fn main() {
    let cli = Cli::parse();
    let status = match cli.command {
        Cmd::Check(args) => cli::check::run(args),
        Cmd::Run(args) => cli::run::run(args),
        Cmd::Policy(cmd) => cli::policy::run(cmd),
        Cmd::Doctor(args) => cli::doctor::run(args),
        Cmd::Serve(args) => cli::serve::run(args),
        Cmd::Mcp(args) => cli::mcp::run(args),
    };
    match status {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("airlock: error: {err:#}");
            std::process::exit(2);
        }
    }
}
