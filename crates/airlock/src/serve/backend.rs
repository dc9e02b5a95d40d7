//! The engine every interface uses: the state directory's ledger and the
//! native backend, opened the same way `airlock run` opens it.

use airlock_sandbox::native::NativeBackend;
use anyhow::Context;

pub fn open_engine() -> anyhow::Result<airlock_core::Engine> {
    let state_dir = airlock_core::resolve_state_dir()?;
    airlock_core::state::ensure_private_dir(&state_dir)?;
    let mut backend = NativeBackend::current_exe()?;
    backend.runs_dir = state_dir.join("runs");
    airlock_core::Engine::open(airlock_core::EngineConfig::new(
        state_dir.clone(),
        Box::new(backend),
    ))
    .with_context(|| format!("cannot open the state directory {}", state_dir.display()))
}
