//! The wall behind the gate: runs a [`SandboxSpec`] in a disposable, isolated
//! environment and reports an [`Outcome`].
//!
//! All of airlock's `unsafe` lives in this crate; every block carries a
//! `// SAFETY:` line saying why it is sound.

pub mod backend;
pub mod capability;
pub mod docker;
pub mod doctor;
pub mod factory;
pub mod failure;
pub mod microvm;
pub mod native;
pub mod oci;
pub mod outcome;
pub mod output;
pub mod probe;
pub mod process;
pub mod relay;
pub mod spec;
pub mod stdin_tap;
pub mod sys;
pub mod tier;
pub mod view;
pub mod wasm;
pub mod workspace;

pub use backend::{Backend, OutputSink, SandboxError};
pub use factory::{open, probe, OpenOptions};
pub use failure::Layer;
pub use outcome::{
    ChangeKind, ChangeSummary, FileChange, KillReason, Outcome, Violation, ViolationKind,
};
pub use spec::{
    Limits, NetworkSpec, SandboxSpec, WorkspaceMode, WorkspaceSpec, GIT_CONFIG_FILE, SANDBOX_HOME,
};
pub use tier::{BackendKind, Tier};
