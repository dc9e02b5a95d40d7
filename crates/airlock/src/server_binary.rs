//! `airlock serve` and `airlock mcp` run in `airlock-serve`, a binary of their
//! own next to `airlock`: the server's async runtime and its HTTP and MCP
//! stacks are most of airlock's code, and every `airlock run` would otherwise
//! map, relocate and unmap them at each start (5 % of a cold `airlock run` here:
//! `bench/results/server-split-2026-12-05.txt`). `airlock` parses the subcommand's arguments (so
//! help and usage errors stay its own) and then becomes `airlock-serve` with
//! the same arguments, in the same process.

use anyhow::{anyhow, bail, Context};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// The name of the binary that holds the server.
pub const SERVER_BINARY: &str = "airlock-serve";

/// Where `airlock-serve` must be: beside the running binary, as installed by
/// `cargo install` and built by `cargo build`.
pub fn locate() -> anyhow::Result<PathBuf> {
    let exe = std::fs::read_link("/proc/self/exe")
        .context("locating airlock-serve: resolving /proc/self/exe")?;
    let server = exe.with_file_name(SERVER_BINARY);
    if !server.is_file() {
        bail!(
            "`serve` and `mcp` run in {SERVER_BINARY}, which is not next to {}.\n\
             Hint: `cargo install --locked --path crates/airlock` installs it beside airlock, \
             `cargo build -p airlock` builds it, or copy {SERVER_BINARY} from the same build \
             beside airlock",
            exe.display()
        );
    }
    Ok(server)
}

/// Replaces this process with `airlock-serve`, with this process's arguments,
/// environment and open files: the pid stays, so a supervisor's signals and a
/// client's wait reach the server itself. Returns only on failure.
pub fn exec() -> anyhow::Result<i32> {
    let server = locate()?;
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_else(|| "airlock".into());
    let err = Command::new(&server).arg0(argv0).args(args).exec();
    Err(anyhow!("starting {}: {err}", server.display()))
}
