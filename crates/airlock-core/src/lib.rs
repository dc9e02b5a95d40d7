//! The one request path: `Request -> Gate -> Decision -> SandboxSpec -> Backend ->
//! Outcome -> Audit -> Response` (DESIGN.md §1), with the state that goes with
//! it: the audit log, pending approvals and grants, in the state directory.

pub mod apply;
pub mod approvals;
pub mod audit;
pub mod backends;
pub mod caller;
pub mod clock;
pub mod content;
pub mod egress;
pub mod engine;
pub mod grants;
pub mod kept;
pub mod ledger;
pub mod spec;
pub mod state;
pub mod store;
pub mod terminal;
pub mod toolchains;

pub use backends::Backends;
pub use caller::{Caller, CallerKind, TenantId};
pub use engine::{
    ApprovalPrompt, ApprovalRef, CheckResponse, Engine, EngineConfig, EngineError, PromptAnswer,
    Refusal, RunOptions, RunResponse, RunStatus,
};
pub use ledger::{Ledger, LedgerConfig, LedgerError};
pub use state::{new_request_id, resolve_state_dir};
