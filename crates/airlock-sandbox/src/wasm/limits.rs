//! The guest process's rlimits: the native ones, with room in RLIMIT_NOFILE for
//! the runtime's own descriptors, and SIGXFSZ ignored so that a write past
//! `limits.file_size` is an EFBIG the guest sees, as under the native backend.

use crate::native::rlimits::{self, RlimitSpec};
use crate::SandboxError;

/// Descriptors wasmtime and the helper hold besides the guest's own files.
pub const RUNTIME_FDS: u64 = 32;

pub fn apply(limits: &crate::Limits) -> Result<(), SandboxError> {
    let mut spec = RlimitSpec::from_limits(limits);
    spec.open_files = spec.open_files.saturating_add(RUNTIME_FDS);
    // SAFETY: SIG_IGN for SIGXFSZ installs no handler code.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    rlimits::apply(&spec)
}
