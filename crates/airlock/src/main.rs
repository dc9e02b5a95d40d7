//! `airlock`: the command-line front end. Each subcommand lives in its own module
//! under `cli/` and returns the process exit status.

use airlock::cli;
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
    #[command(about = cli::run::ABOUT)]
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

/// The command line, parsed. `airlock run` is on the path of every command an
/// agent runs, so for it clap builds only `run`'s own arguments: building the
/// whole tree first (every subcommand's arguments) costs about 0.4 ms of a cold
/// start. The command built here renders help and errors exactly as the full
/// tree's `run` does (tests below).
fn parse() -> Cmd {
    let mut argv = std::env::args_os();
    let program = argv.next();
    let Some(run) = argv.next().filter(|a| a == "run") else {
        return Cli::parse().command;
    };
    // Named as clap names a subcommand: after the file name this binary was started by.
    let name = program
        .as_deref()
        .map(std::path::Path::new)
        .and_then(|p| p.file_name())
        .map_or("airlock".into(), |n| n.to_string_lossy());
    let bin_name = format!("{name} run");
    // Led by `run`, which clap skips as the program's name.
    let matches = run_command(&bin_name).get_matches_from(std::iter::once(run).chain(argv));
    match <cli::run::Args as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(args) => Cmd::Run(args),
        Err(e) => e.format(&mut run_command(&bin_name)).exit(),
    }
}

/// `airlock run` alone, as the full tree builds it.
fn run_command(bin_name: &str) -> clap::Command {
    let run = clap::Command::new("run")
        .bin_name(bin_name)
        .about(cli::run::ABOUT);
    <cli::run::Args as clap::Args>::augment_args(run)
}

fn main() {
    // The sandbox helper is this binary re-executed; it must run before anything
    // else. The wasm helper is airlock-wasm (src/bin/airlock-wasm.rs): wasmtime
    // is not linked here; nor are the server's runtime, HTTP and MCP stacks
    // (airlock-serve, src/bin/airlock-serve.rs).
    airlock::run_helpers_first();
    let command = parse();
    if matches!(command, Cmd::Doctor(_) | Cmd::Policy(_) | Cmd::Audit(_)) {
        airlock_sandbox::process::default_sigpipe();
    }
    let status = match command {
        Cmd::Check(args) => cli::check::run(args),
        Cmd::Run(args) => cli::run::run(args),
        Cmd::Policy(cmd) => cli::policy::run(cmd),
        Cmd::Doctor(args) => cli::doctor::run(args),
        // Parsed here only so that `airlock --help` and usage errors cover them.
        Cmd::Serve(_) | Cmd::Mcp(_) => airlock::server_binary::exec(),
        Cmd::Audit(cmd) => cli::audit::run(cmd),
        Cmd::Approvals(cmd) => cli::approvals::run(cmd),
        Cmd::Grant(args) => cli::grants::grant(args),
        Cmd::Grants(cmd) => cli::grants::run(cmd),
        Cmd::Changes(args) => cli::changes::changes(args),
        Cmd::Apply(args) => cli::changes::apply(args),
    };
    airlock::exit_with(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The full tree's `run`, built as `airlock run …` would build it.
    fn full_run() -> clap::Command {
        let mut full = Cli::command();
        full.build();
        full.find_subcommand("run").expect("run").clone()
    }

    #[test]
    fn run_fast_path_renders_help_as_the_full_tree_does() {
        let (mut full, mut fast) = (full_run(), run_command("airlock run"));
        fast.build();
        assert_eq!(
            full.render_long_help().to_string(),
            fast.render_long_help().to_string()
        );
        assert_eq!(
            full.render_help().to_string(),
            fast.render_help().to_string()
        );
        assert_eq!(
            full.render_usage().to_string(),
            fast.render_usage().to_string()
        );
    }

    #[test]
    fn run_fast_path_refuses_as_the_full_tree_does() {
        for bad in [
            &["run", "--bogus", "--", "true"][..],
            &["run", "--json"],
            &["run", "-c", "true", "--", "true"],
            &["run", "--network", "everywhere", "--", "true"],
            &["run", "--wait-approval", "5m", "--", "true"],
        ] {
            let full = Cli::try_parse_from(std::iter::once("airlock").chain(bad.iter().copied()));
            let fast = run_command("airlock run")
                .try_get_matches_from(bad.iter().copied())
                .and_then(|m| <cli::run::Args as clap::FromArgMatches>::from_arg_matches(&m));
            match (full, fast) {
                (Err(a), Err(b)) => {
                    assert_eq!(a.kind(), b.kind(), "{bad:?}");
                    assert_eq!(a.render().to_string(), b.render().to_string(), "{bad:?}");
                }
                (Ok(_), Ok(_)) => {}
                (a, b) => panic!("{bad:?}: full {:?} vs fast {:?}", a.is_ok(), b.is_ok()),
            }
        }
    }
}
