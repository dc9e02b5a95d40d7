//! `airlock doctor`: which isolation layers this host provides, and with
//! `--backend NAME`, what that backend enforces of a policy.

use airlock_core::backends;
use airlock_policy::{Command, Request};
use airlock_sandbox::doctor;
use airlock_sandbox::native::NativeBackend;
use airlock_sandbox::BackendKind;
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
    let native = if kind == BackendKind::Native {
        let state_dir = airlock_core::resolve_state_dir()?;
        airlock_core::state::ensure_private_dir(&state_dir)?;
        let backend = NativeBackend::current_exe()?;
        Some(doctor::run(&backend.helper_exe, &state_dir.join("runs")))
    } else {
        None
    };
    let report = if args.backend.is_some() || args.policy.is_some() {
        let here = std::env::current_dir()?;
        let policy_path = args.policy.as_ref().map(|p| here.join(p));
        let loaded = airlock_policy::load::resolve(policy_path.as_deref(), &here)?;
        let request = Request {
            command: Command::Argv { argv: vec![] },
            cwd: here,
            loosening: Default::default(),
        };
        Some(backends::report(&loaded.policy, &request, kind))
    } else {
        None
    };
    let layers_ok = native.as_ref().is_none_or(|c| doctor::all_required_ok(c));
    let report_ok = report.as_ref().is_none_or(|r| r.refusal().is_none());
    let ok = layers_ok && report_ok;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "ok": ok,
                "backend": kind,
                "layers": native,
                "capabilities": report,
            }))?
        );
        return Ok(if ok { 0 } else { 1 });
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
        if native.is_some() {
            println!();
        }
        super::capability::print(r);
    }
    Ok(if ok { 0 } else { 1 })
}
