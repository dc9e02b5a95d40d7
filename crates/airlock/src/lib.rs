//! The code of the `airlock` package's binaries, which each link only what they
//! call:
//!
//! * `airlock` (`src/main.rs`): the command line; `run` is on the path of every
//!   command an agent runs, so its start is kept small;
//! * `airlock-serve` (`src/bin/airlock-serve.rs`): `airlock serve` (the HTTP
//!   API) and `airlock mcp` (MCP over stdio), with their async runtime, HTTP
//!   and MCP stacks; `airlock` hands those two subcommands to it
//!   ([`server_binary`]);
//! * `airlock-wasm` (`src/bin/airlock-wasm.rs`): the WebAssembly backend's
//!   helper, the one binary that embeds wasmtime.

pub mod cli;
pub mod kube;
pub mod mcp;
pub mod serve;
pub mod server_binary;

/// What every airlock binary that may be a sandbox helper runs first: the
/// helpers are the binary itself re-executed (or forked) with a marker
/// argument, and must run before anything else.
pub fn run_helpers_first() {
    airlock_sandbox::native::maybe_run_helper();
    airlock_sandbox::oci::maybe_run_helper();
    airlock_sandbox::docker::maybe_run_helper();
    airlock_sandbox::microvm::maybe_run_helper();
}

/// Exits with a subcommand's status; an error is printed (escaped: it may
/// quote agent text, an id, a command, a path) and exits 2.
pub fn exit_with(status: anyhow::Result<i32>) -> ! {
    match status {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            let text = format!("{err:#}");
            eprintln!(
                "airlock: error: {}",
                airlock_core::terminal::escape_text(&text)
            );
            std::process::exit(2);
        }
    }
}
