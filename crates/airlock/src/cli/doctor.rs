//! `airlock doctor`: which isolation layers this host provides.

use airlock_sandbox::doctor;
use airlock_sandbox::native::NativeBackend;

#[derive(clap::Args)]
pub struct Args {
    /// Print the checks as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let state_dir = airlock_core::resolve_state_dir()?;
    airlock_core::state::ensure_private_dir(&state_dir)?;
    let backend = NativeBackend::current_exe()?;
    let checks = doctor::run(&backend.helper_exe, &state_dir.join("runs"));
    let ok = doctor::all_required_ok(&checks);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "ok": ok, "layers": checks }))?
        );
    } else {
        for c in &checks {
            let mark = match (c.ok, c.required) {
                (true, _) => "ok  ",
                (false, true) => "FAIL",
                (false, false) => "warn",
            };
            println!("{mark}  {:<16} {}", c.layer, c.detail);
        }
        if ok {
            println!("every layer of the default policy can be enforced on this host");
        } else {
            println!("the default policy cannot be enforced here: `airlock run` will refuse, naming the layer");
        }
    }
    Ok(if ok { 0 } else { 1 })
}
