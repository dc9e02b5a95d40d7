//! `airlock-serve`: `airlock serve` (the HTTP JSON API, MCP at /mcp) and
//! `airlock mcp` (MCP over stdio). `airlock` hands those two subcommands to this
//! binary, found next to it (`airlock::server_binary`), so that the server's
//! runtime and protocol stacks are not loaded by every `airlock run`. Run by
//! hand, it takes the same arguments: `airlock-serve serve --socket PATH`.

use airlock::cli;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "airlock",
    version,
    about = "airlock's server: the HTTP JSON API and the MCP server (started by `airlock serve` and `airlock mcp`)"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

// Parsed once per process: the size of a variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Cmd {
    /// Serve the HTTP JSON API (and MCP at /mcp) on a unix socket or loopback.
    Serve(cli::serve::Args),
    /// Serve the Model Context Protocol over stdio.
    Mcp(cli::mcp::Args),
}

fn main() {
    // A pooled or cold sandbox's helper is this binary re-executed or forked.
    airlock::run_helpers_first();
    let status = match Cli::parse().command {
        Cmd::Serve(args) => cli::serve::run(args),
        Cmd::Mcp(args) => cli::mcp::run(args),
    };
    airlock::exit_with(status)
}
