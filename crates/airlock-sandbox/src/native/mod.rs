//! The native Linux backend: namespaces, mounts, seccomp, landlock, cgroups.
//! Each layer is its own module.
//!
//! Process model: the caller ([`NativeBackend::run`], maybe in a multi-threaded
//! server) gets a single-threaded helper — the same binary re-executed with
//! [`protocol::HELPER_ARG`]; in a server, forked by one long-lived forker
//! process ([`forker`]); for a caller still single-threaded, forked in
//! advance ([`prefork`]) — and talks to it over pipes ([`caller`]). The
//! helper ([`helper`]) prepares what needs host privilege and clones the
//! sandbox's PID 1 ([`init`]), which builds the filesystem view ([`mounts`],
//! its `/etc` one directory the helper prepared once ([`prepared_etc`])),
//! enters the sandbox's user namespace ([`namespaces`]), drops privileges
//! ([`caps`]) and forks the command, which takes on its limits ([`rlimits`]),
//! landlock ([`landlock`]) and seccomp ([`seccomp`]) before `execve`.

pub mod caller;
pub mod caps;
pub mod cgroup;
pub(crate) mod cgroup_glue;
pub(crate) mod forker;
pub mod helper;
mod helper_process;
pub mod init;
pub mod interp;
pub mod landlock;
pub mod mountpoints;
pub mod mounts;
pub mod namespaces;
pub mod netwatch;
pub mod pool;
mod pool_memory;
pub mod prefork;
pub mod prepared_etc;
pub mod probe;
pub mod protocol;
pub mod rlimits;
pub mod rootless;
pub mod rundir;
pub mod seccomp;
pub mod subid;
mod teardowns;

pub use caller::NativeBackend;
pub use helper::helper_main;
pub use pool::{PoolLimits, WarmPool};
pub use probe::probe;

/// Runs the helper (first argument [`protocol::HELPER_ARG`]) or the helper
/// forker ([`forker::FORKER_ARG`]) and never returns if this process was
/// started as one; otherwise returns at once.
/// Binaries that can serve as the helper call this first thing in `main`.
pub fn maybe_run_helper() {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == protocol::HELPER_ARG)
    {
        helper_main();
    }
    forker::maybe_run_forker();
}
