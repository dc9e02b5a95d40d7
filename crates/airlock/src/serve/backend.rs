//! The engine every interface uses: the state directory's ledger, and each
//! run on the backend its policy's `[sandbox] backend` names, opened by the
//! sandbox crate's factory as `airlock run` opens it.

use anyhow::Context;

pub fn open_engine() -> anyhow::Result<airlock_core::Engine> {
    open_engine_owning(&[])
}

/// [`open_engine`], with more files airlock lives by (a tokens file) that no
/// run's changes may ever write.
pub fn open_engine_owning(owned: &[std::path::PathBuf]) -> anyhow::Result<airlock_core::Engine> {
    let state_dir = airlock_core::resolve_state_dir()?;
    airlock_core::state::ensure_private_dir(&state_dir)?;
    let opts = airlock_sandbox::OpenOptions::new(state_dir.clone());
    let mut config = airlock_core::EngineConfig::per_policy(state_dir.clone(), opts);
    config.owned = owned.to_vec();
    airlock_core::Engine::open(config)
        .with_context(|| format!("cannot open the state directory {}", state_dir.display()))
}
