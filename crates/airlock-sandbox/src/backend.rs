//! The `Backend` trait: one implementation per isolation tier.

use crate::Layer;
use crate::{Outcome, SandboxSpec};

/// Receives output as it happens, for live streaming. Called from the thread that
/// called [`Backend::run`].
pub trait OutputSink {
    fn stdout(&mut self, chunk: &[u8]);
    fn stderr(&mut self, chunk: &[u8]);
    /// Whoever waits for the output stopped waiting (a server's client went
    /// away): the backend kills the run, reason `cancelled`. Asked at least
    /// every 100 ms while the run lasts. No default: a sink that wraps another
    /// must pass the question on.
    fn cancelled(&self) -> bool;
}

/// A sink that only collects (the outcome carries the capped output anyway).
pub struct Discard;

impl OutputSink for Discard {
    fn stdout(&mut self, _: &[u8]) {}
    fn stderr(&mut self, _: &[u8]) {}
    fn cancelled(&self) -> bool {
        false
    }
}

/// Turns a spec into an outcome. Implementations must destroy everything they
/// created before returning, on every path.
pub trait Backend: Send + Sync {
    fn name(&self) -> &'static str;
    fn run(&self, spec: &SandboxSpec, sink: &mut dyn OutputSink) -> Result<Outcome, SandboxError>;

    /// [`Backend::run`], with `gate` called before the command may start: the
    /// command never runs unless it returned `Ok` (its `Err` names what failed,
    /// and the run fails with it). A backend that can build the sandbox while
    /// the gate is still working (the native one) calls it as late as it can;
    /// this default calls it first.
    fn run_gated(
        &self,
        spec: &SandboxSpec,
        sink: &mut dyn OutputSink,
        gate: &mut dyn FnMut() -> Result<(), SandboxError>,
    ) -> Result<Outcome, SandboxError> {
        gate()?;
        self.run(spec, sink)
    }
}

/// Why a sandbox could not be built or run. A layer that cannot be applied is an
/// error naming the layer: nothing degrades silently.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("sandbox layer `{layer}` could not be applied: {detail}")]
    Layer { layer: Layer, detail: String },
    #[error("invalid sandbox spec: {0}")]
    Spec(String),
    #[error("sandbox helper failed: {0}")]
    Helper(String),
    #[error("i/o error during {context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}
