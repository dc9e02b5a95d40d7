//! The one wasmtime configuration: compiling and loading must agree on it, or a
//! cached `.cwasm` would not load.

use crate::Layer;
use crate::SandboxError;
use wasmtime::{Config, Engine};

pub fn new() -> Result<Engine, SandboxError> {
    let mut config = Config::new();
    // Time limits: the watchdog bumps the epoch, the guest traps at its next check.
    config.epoch_interruption(true);
    // No shared memories or threads: the `threads` feature is not compiled in,
    // and WASI preview 1 has no way to start one anyway.
    Engine::new(&config).map_err(|e| SandboxError::Layer {
        layer: Layer::Wasm,
        detail: format!("wasmtime engine: {e:#}"),
    })
}
