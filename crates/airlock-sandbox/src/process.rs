//! Process-wide settings of the airlock binary itself (not of a sandbox),
//! here because they need `unsafe`.

/// Lets a closed stdout end the process quietly, as it ends any Unix filter.
///
/// Rust programs start with SIGPIPE ignored, so `println!` to a reader that
/// stopped early (`airlock doctor | head`) panics. Only for the commands that
/// just print and talk to no peer over a pipe or a unix socket of their own:
/// `serve`, `mcp` and `run` keep SIGPIPE ignored, since a client that goes
/// away must never kill them mid-run.
pub fn default_sigpipe() {
    // SAFETY: signal(2) only changes this process's disposition of SIGPIPE;
    // no handler is installed, so no code runs in signal context.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
