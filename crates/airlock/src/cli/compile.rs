//! `airlock policy compile --backend kubernetes FILE`: the Pod and
//! NetworkPolicy for one execution under the policy, as JSON for
//! `kubectl apply -f -`.

use crate::kube;
use airlock_policy::{gate, load, Command, Request, Verdict};
use std::path::Path;

pub fn run(
    file: &Path,
    target: &str,
    name: &str,
    image: &str,
    command: Option<String>,
    argv: Vec<String>,
) -> anyhow::Result<i32> {
    if target != "kubernetes" {
        eprintln!(
            "airlock policy compile: unknown target `{target}`; expected `kubernetes` \
             (the local backends run policies directly: `airlock run --backend NAME`)"
        );
        return Ok(2);
    }
    if name.is_empty()
        || name.len() > 63
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        || name.starts_with('-')
        || name.ends_with('-')
    {
        eprintln!("airlock policy compile: --name `{name}` is not a valid Kubernetes name (lowercase letters, digits and '-', at most 63)");
        return Ok(2);
    }
    let loaded = match load::from_file(file) {
        Ok(l) => l,
        Err(e) => {
            for line in e.to_string().lines() {
                eprintln!("error: {line}");
            }
            return Ok(2);
        }
    };
    // The command is judged by the gate first, as for a local run: a Pod is
    // never compiled for something the policy denies or wants a person for.
    let (request_command, argv) = match (command, argv.is_empty()) {
        (Some(c), true) => (
            Command::Shell { command: c.clone() },
            vec!["/bin/sh".to_string(), "-c".to_string(), c],
        ),
        (None, false) => (Command::Argv { argv: argv.clone() }, argv),
        _ => anyhow::bail!("give the command to run: -c 'SHELL' or -- PROG ARG..."),
    };
    let decision = gate::decide(
        &loaded.policy,
        &Request {
            command: request_command,
            cwd: loaded.policy.workspace.root.clone(),
            loosening: Default::default(),
        },
    );
    if decision.decision != Verdict::Allow {
        eprintln!(
            "airlock policy compile: {}: {}",
            decision.decision.as_str(),
            decision.reason
        );
        return Ok(super::check::exit_code(decision.decision));
    }
    let run = kube::Execution {
        name,
        image,
        argv,
        workspace_claim: format!("{name}-workspace"),
    };
    println!(
        "{}",
        serde_json::to_string_pretty(&kube::manifest(&loaded.policy, &run))?
    );
    Ok(0)
}
