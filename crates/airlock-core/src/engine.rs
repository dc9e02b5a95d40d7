//! The engine: runs the request path for the CLI, the HTTP API and the MCP server
//! alike. There is no second execution path.

use airlock_policy::{Decision, Policy, Request, Verdict};
use airlock_sandbox::{Backend, Outcome, OutputSink, SandboxError};
use serde::{Deserialize, Serialize};

/// What a run returns: the gate's decision and, if it allowed, the outcome.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResponse {
    pub request_id: String,
    pub decision: Decision,
    pub outcome: Option<Outcome>,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

pub struct Engine {
    backend: Box<dyn Backend>,
}

impl Engine {
    pub fn new(backend: Box<dyn Backend>) -> Self {
        Engine { backend }
    }

    pub fn check(&self, policy: &Policy, request: &Request) -> Decision {
        airlock_policy::decide(policy, request)
    }

    pub fn run(
        &self,
        policy: &Policy,
        request: &Request,
        sink: &mut dyn OutputSink,
    ) -> Result<RunResponse, EngineError> {
        let request_id = new_request_id();
        let decision = self.check(policy, request);
        if decision.decision != Verdict::Allow {
            return Ok(RunResponse { request_id, decision, outcome: None });
        }
        let spec = crate::spec::derive(policy, request, &request_id);
        let outcome = self.backend.run(&spec, sink)?;
        Ok(RunResponse { request_id, decision, outcome: Some(outcome) })
    }
}

/// A unique, sortable id: milliseconds since the epoch, pid and a counter.
pub fn new_request_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("r{ms:013x}-{:05x}-{n:04x}", std::process::id())
}
