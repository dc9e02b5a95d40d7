//! Deriving a `SandboxSpec` from the policy (never from the agent's text, beyond
//! the argv the gate has already judged).

use airlock_policy::{Command, Policy, Request};
use airlock_sandbox::SandboxSpec;

/// The argv that runs a request: a shell string runs under `bash -c`, code under
/// its language's interpreter.
pub fn argv_for(request: &Request) -> Vec<String> {
    match &request.command {
        airlock_policy::Command::Shell { command } => {
            vec!["/bin/bash".into(), "-c".into(), command.clone()]
        }
        Command::Argv { argv } => argv.clone(),
        Command::Code { language, source } => match language.as_str() {
            "python" | "python3" => vec!["python3".into(), "-c".into(), source.clone()],
            "sh" => vec!["/bin/sh".into(), "-c".into(), source.clone()],
            _ => vec!["/bin/bash".into(), "-c".into(), source.clone()],
        },
    }
}

/// Build the spec for one execution.
pub fn derive(_policy: &Policy, _request: &Request, _request_id: &str) -> SandboxSpec {
    unimplemented!("spec derivation lands with the native sandbox")
}
