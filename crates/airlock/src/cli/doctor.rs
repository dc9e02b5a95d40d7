//! `airlock doctor`: which isolation layers this host provides, and with
//! `--backend NAME`, what that backend enforces of a policy.

use airlock_core::backends;
use airlock_policy::{Command, Request};
use airlock_sandbox::probe::Probe;
use airlock_sandbox::{BackendKind, OpenOptions};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Print the checks as JSON.
    #[arg(long)]
    json: bool,
    /// Report on this backend (native, wasm, gvisor, oci, docker, microvm):
    /// whether it can run here and what it enforces of the policy.
    #[arg(long, value_name = "NAME")]
    backend: Option<String>,
    /// The policy whose boundaries are checked (default: $AIRLOCK_POLICY,
    /// ./airlock.toml, or the built-in default).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let kind = match &args.backend {
        Some(name) => backends::parse(name)?,
        None => BackendKind::Native,
    };
    let state_dir = airlock_core::resolve_state_dir()?;
    airlock_core::state::ensure_private_dir(&state_dir)?;
    // The backend's own probe: the native one builds every layer for real.
    let probe = airlock_sandbox::probe(kind, &OpenOptions::new(state_dir));
    let native = (kind == BackendKind::Native).then(|| probe.layers.clone());
    let report = if args.backend.is_some() || args.policy.is_some() {
        let here = std::env::current_dir()?;
        let policy_path = args.policy.as_ref().map(|p| here.join(p));
        let loaded = airlock_policy::load::resolve(policy_path.as_deref(), &here)?;
        let request = Request {
            command: Command::Argv { argv: vec![] },
            cwd: here,
            loosening: Default::default(),
        };
        Some(backends::report_probed(
            &loaded.policy,
            &request,
            kind,
            probe.clone().into_result(),
        ))
    } else {
        None
    };
    let report_ok = report.as_ref().is_none_or(|r| r.refusal().is_none());
    let ok = probe.available && report_ok;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "ok": ok,
                "backend": kind,
                "probe": probe,
                "layers": native,
                "capabilities": report,
            }))?
        );
        return Ok(if ok { 0 } else { 1 });
    }
    if native.as_ref().is_none_or(|layers| layers.is_empty()) {
        print_probe(&probe);
    }
    if let Some(checks) = &native {
        for c in checks {
            let mark = match (c.ok, c.required) {
                (true, _) => "ok  ",
                (false, true) => "FAIL",
                (false, false) => "warn",
            };
            println!("{mark}  {:<16} {}", c.layer, c.detail);
        }
        let limits_ok = checks.iter().all(|c| c.layer != "limits" || c.ok);
        let layers_ok = probe.available;
        if layers_ok && !limits_ok {
            println!(
                "every layer can be built on this host, but not every limit: a policy that sets \
                 limits.memory, limits.cpus or limits.cpu_time (the default does) is refused unless \
                 it says [limits] enforcement = \"best_effort\" (see the `limits` line)"
            );
        } else if layers_ok {
            println!("every layer of the default policy can be enforced on this host");
        } else {
            println!("the default policy cannot be enforced here: `airlock run` will refuse, naming the layer");
        }
    }
    if let Some(r) = &report {
        println!();
        super::capability::print(r);
    }
    Ok(if ok { 0 } else { 1 })
}

/// What the backend's probe found: its runtime, or why it cannot run here.
fn print_probe(p: &Probe) {
    let verdict = if p.available {
        "available"
    } else {
        "NOT AVAILABLE"
    };
    println!("backend {} ({}): {verdict}", p.backend, p.tier);
    let label = if p.available { "runtime" } else { "why" };
    println!("  {label:<9} {}", p.detail);
    for e in &p.enforces {
        println!("  enforces  {e}");
    }
}
