//! Which sandbox backend the interfaces use.
//!
//! TEMPORARY (issue 5 helper): the native backend (issue 3) has no public
//! constructor yet. Until it does, this returns a backend that refuses every
//! run with an error naming the missing layer: fail closed, never run
//! unsandboxed. Replace the body with the native backend's constructor.

use airlock_sandbox::{Backend, Outcome, OutputSink, SandboxError, SandboxSpec};

struct NotBuilt;

impl Backend for NotBuilt {
    fn name(&self) -> &'static str {
        "native"
    }
    fn run(
        &self,
        _spec: &SandboxSpec,
        _sink: &mut dyn OutputSink,
    ) -> Result<Outcome, SandboxError> {
        Err(SandboxError::Layer {
            layer: "native backend",
            detail: "not built into this binary yet".into(),
        })
    }
}

pub fn default_backend() -> anyhow::Result<Box<dyn Backend>> {
    Ok(Box::new(NotBuilt))
}
