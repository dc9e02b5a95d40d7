//! The policy gate: a pure function from a [`Policy`] and a [`Request`] to a [`Decision`].
//!
//! Nothing in this crate starts a process or writes a file. Loading reads the one
//! file it is given; deciding only reads the filesystem to resolve symlinks of the
//! workspace boundary.

pub mod changes;
pub mod decision;
pub mod gate;
pub mod knowledge;
pub mod load;
pub mod model;
pub mod network;
pub mod paths;
pub mod request;
pub mod rules;
pub mod shell;

pub use changes::{classify, ChangesPolicy, Classification, Disposition};
pub use decision::{Decision, SegmentDecision, Step, Verdict};
pub use gate::{decide, explain, Explanation, TraceEntry};
pub use load::{Loaded, PolicyError, PolicyWarning};
pub use model::{
    ApplyMode, CommandsPolicy, Duration, EnvPolicy, FilesystemPolicy, Limits, NetworkMode,
    NetworkPolicy, Policy, Rule, Toolchain, WorkspaceMode, WorkspacePolicy,
};
pub use request::{Command, Loosening, Request};
