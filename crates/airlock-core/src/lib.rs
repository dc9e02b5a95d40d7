//! The one request path: `Request -> Gate -> Decision -> SandboxSpec -> Backend ->
//! Outcome -> Audit -> Response` (DESIGN.md §1).

pub mod engine;
pub mod spec;

pub use engine::{Engine, EngineError, RunResponse};
