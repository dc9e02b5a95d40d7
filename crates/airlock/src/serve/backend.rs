//! The engine every interface uses: the state directory's ledger, and each
//! run on the backend its policy's `[sandbox] backend` names, opened by the
//! sandbox crate's factory as `airlock run` opens it.

use airlock_sandbox::native::pool::{PoolHandle, PoolLimits};
use airlock_sandbox::native::WarmPool;
use anyhow::Context;

pub fn open_engine() -> anyhow::Result<airlock_core::Engine> {
    open_engine_owning(&[])
}

/// [`open_engine`], with more files airlock lives by (a tokens file) that no
/// run's changes may ever write.
pub fn open_engine_owning(owned: &[std::path::PathBuf]) -> anyhow::Result<airlock_core::Engine> {
    let state_dir = airlock_core::resolve_state_dir()?;
    airlock_core::state::ensure_private_dir(&state_dir)?;
    let mut opts = airlock_sandbox::OpenOptions::new(state_dir.clone());
    // Its callers live long and are multi-threaded (`airlock mcp`; `airlock
    // check` runs nothing, so its forker never starts).
    opts.fork_helpers = true;
    let mut config = airlock_core::EngineConfig::per_policy(state_dir.clone(), opts);
    config.owned = owned.to_vec();
    airlock_core::Engine::open(config)
        .with_context(|| format!("cannot open the state directory {}", state_dir.display()))
}

/// [`open_engine_owning`] with a pool of warm sandboxes in front of the
/// native backend (`airlock serve --pool N --pool-memory SIZE`; size 0: every
/// run is cold). Runs whose policy names another backend still open it
/// through the factory.
pub fn open_engine_pooled(
    owned: &[std::path::PathBuf],
    pool: PoolLimits,
) -> anyhow::Result<(airlock_core::Engine, PoolHandle)> {
    let state_dir = airlock_core::resolve_state_dir()?;
    airlock_core::state::ensure_private_dir(&state_dir)?;
    let opts = airlock_sandbox::OpenOptions::new(state_dir.clone());
    let mut backend = airlock_sandbox::native::NativeBackend::current_exe()?;
    backend.runs_dir = opts.runs_dir();
    // A server builds a sandbox per run (and the pool one more ahead): each
    // helper is forked by one forker process, not a new exec of this binary.
    backend.use_forker();
    let pool = WarmPool::new(backend, pool);
    let handle = pool.handle();
    let backends = airlock_core::Backends::per_policy_with(
        opts,
        airlock_sandbox::BackendKind::Native,
        Box::new(pool),
    );
    let mut config = airlock_core::EngineConfig::with(state_dir.clone(), backends);
    config.owned = owned.to_vec();
    let engine = airlock_core::Engine::open(config)
        .with_context(|| format!("cannot open the state directory {}", state_dir.display()))?;
    Ok((engine, handle))
}
