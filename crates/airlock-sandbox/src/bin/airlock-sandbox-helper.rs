//! The sandbox helper as its own tiny binary, for this crate's integration tests
//! (the airlock binary plays this role in production).
//!
//! `airlock-sandbox-helper __sandbox-helper` runs the helper; `airlock-sandbox-helper
//! run SPEC.json` runs a spec through the native backend and prints the outcome
//! as JSON (a debugging aid).

use airlock_sandbox::native::NativeBackend;
use airlock_sandbox::{Backend, OutputSink, SandboxSpec};
use std::io::Write;

struct Live;

impl OutputSink for Live {
    fn stdout(&mut self, chunk: &[u8]) {
        let _ = std::io::stdout().write_all(chunk);
    }
    fn stderr(&mut self, chunk: &[u8]) {
        let _ = std::io::stderr().write_all(chunk);
    }
    fn cancelled(&self) -> bool {
        false
    }
}

fn main() {
    airlock_sandbox::native::maybe_run_helper();
    airlock_sandbox::wasm::maybe_run_helper();
    airlock_sandbox::oci::maybe_run_helper();
    airlock_sandbox::docker::maybe_run_helper();
    airlock_sandbox::microvm::maybe_run_helper();
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 || args[1] != "run" {
        eprintln!("usage: airlock-sandbox-helper run SPEC.json");
        std::process::exit(2);
    }
    let text = match std::fs::read_to_string(&args[2]) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: {e}", args[2]);
            std::process::exit(2);
        }
    };
    let spec: SandboxSpec = match serde_json::from_str(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: {e}", args[2]);
            std::process::exit(2);
        }
    };
    let backend = match NativeBackend::current_exe() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    match backend.run(&spec, &mut Live) {
        Ok(outcome) => println!(
            "{}",
            serde_json::to_string_pretty(&outcome).unwrap_or_default()
        ),
        Err(e) => {
            eprintln!("sandbox error: {e}");
            std::process::exit(125);
        }
    }
}
