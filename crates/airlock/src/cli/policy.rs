//! `airlock policy`: show, create, validate and explain policy files.

use airlock_policy::{gate, load, Command, Request};
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Print the built-in default policy.
    ShowDefault,
    /// Write a commented starter policy (default ./airlock.toml); never overwrites.
    Init {
        #[arg(value_name = "PATH")]
        path: Option<PathBuf>,
    },
    /// Validate a policy file, run its rule examples and print its warnings.
    Check {
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Show how a command goes through the four steps, segment by segment.
    Explain {
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// The shell string to explain.
        #[arg(short = 'c', value_name = "SHELL STRING")]
        command: String,
        /// Directory the command would start in (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Print the explanation as JSON.
        #[arg(long)]
        json: bool,
        /// Report what this backend enforces (default: the policy's `[sandbox] backend`).
        #[arg(long, value_name = "NAME")]
        backend: Option<String>,
    },
    /// Compile a policy for another system: `--backend kubernetes` prints the Pod
    /// and NetworkPolicy (YAML) that run one execution under it.
    Compile {
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// The target: kubernetes.
        #[arg(long, value_name = "TARGET")]
        backend: String,
        /// The execution's name (the Pod's name and the label that ties the
        /// NetworkPolicy to it).
        #[arg(long, value_name = "NAME", default_value = "airlock-run")]
        name: String,
        /// The container image that holds the tools the commands need.
        #[arg(long, value_name = "IMAGE", default_value = "debian:bookworm-slim")]
        image: String,
        /// The command to run in the Pod (after `--`; default: a shell line from -c).
        #[arg(short = 'c', value_name = "SHELL STRING")]
        command: Option<String>,
        #[arg(last = true, value_name = "PROG ARG")]
        argv: Vec<String>,
    },
}

pub fn run(cmd: Cmd) -> anyhow::Result<i32> {
    match cmd {
        Cmd::ShowDefault => {
            print!("{}", load::DEFAULT_POLICY_TOML);
            Ok(0)
        }
        Cmd::Init { path } => init(path.unwrap_or_else(|| PathBuf::from(load::POLICY_FILE_NAME))),
        Cmd::Check { file } => check(&file),
        Cmd::Explain {
            file,
            command,
            cwd,
            json,
            backend,
        } => explain(&file, command, cwd, json, backend),
        Cmd::Compile {
            file,
            backend,
            name,
            image,
            command,
            argv,
        } => super::compile::run(&file, &backend, &name, &image, command, argv),
    }
}

fn init(path: PathBuf) -> anyhow::Result<i32> {
    let mut f = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            eprintln!(
                "airlock policy init: {} already exists; not overwriting it",
                path.display()
            );
            return Ok(2);
        }
        Err(e) => {
            eprintln!("airlock policy init: cannot create {}: {e}", path.display());
            return Ok(2);
        }
    };
    let mut text = load::DEFAULT_POLICY_TOML.replacen(
        "# airlock's built-in default policy.",
        "# airlock policy (written by `airlock policy init` from the built-in default).",
        1,
    );
    // The project the file is for is the folder it is written in.
    let folder = std::path::absolute(&path)?
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let found = airlock_core::toolchains::detect(&folder);
    if !found.is_empty() {
        let names: Vec<String> = found
            .iter()
            .map(|t| format!("\"{}\"", t.as_str()))
            .collect();
        text = text.replacen("\nuse = []", &format!("\nuse = [{}]", names.join(", ")), 1);
    }
    f.write_all(text.as_bytes())?;
    println!("wrote {}", path.display());
    if !found.is_empty() {
        let names: Vec<&str> = found.iter().map(|t| t.as_str()).collect();
        println!(
            "toolchains found in {}: {} ([toolchains] use; `airlock policy check {}` shows what each exposes)",
            folder.display(),
            names.join(", "),
            path.display()
        );
    }
    Ok(0)
}

/// What each `[toolchains] use` preset adds on this host.
fn print_toolchains(policy: &airlock_policy::Policy) {
    // Ask the tools afresh rather than trust the cache of `airlock run`.
    std::env::set_var("AIRLOCK_REFRESH_REGISTRIES", "1");
    let host = airlock_core::toolchains::Host::from_process();
    for t in &policy.toolchains {
        let e = airlock_core::toolchains::exposure(*t, policy, &host);
        let list = |v: Vec<String>| {
            if v.is_empty() {
                "nothing".to_string()
            } else {
                v.join(", ")
            }
        };
        println!("toolchain {}:", t.as_str());
        println!(
            "  reads   {}",
            list(e.read.iter().map(|p| p.display().to_string()).collect())
        );
        println!(
            "  PATH    {}",
            list(e.path.iter().map(|p| p.display().to_string()).collect())
        );
        println!(
            "  sets    {}",
            list(e.env.iter().map(|(k, v)| format!("{k}={v}")).collect())
        );
        println!(
            "  allows  {}",
            list(
                e.allow
                    .iter()
                    .map(|r| format!("\"{}\"", r.join(" ")))
                    .collect()
            )
        );
        if policy.network.mode == airlock_policy::NetworkMode::Allowlist {
            println!("  hosts   {}", list(e.hosts));
        }
    }
}

fn check(file: &std::path::Path) -> anyhow::Result<i32> {
    match load::from_file(file) {
        Ok(loaded) => {
            for w in &loaded.warnings {
                println!("warning: {w}");
            }
            println!(
                "ok: {} ({} rules, {} warning{}, sha256 {})",
                file.display(),
                loaded.policy.commands.rules.len(),
                loaded.warnings.len(),
                if loaded.warnings.len() == 1 { "" } else { "s" },
                &loaded.policy.sha256[..12]
            );
            print_toolchains(&loaded.policy);
            Ok(0)
        }
        Err(e) => {
            for line in e.to_string().lines() {
                eprintln!("error: {line}");
            }
            Ok(2)
        }
    }
}

fn explain(
    file: &std::path::Path,
    command: String,
    cwd: Option<PathBuf>,
    json: bool,
    backend: Option<String>,
) -> anyhow::Result<i32> {
    let loaded = match airlock_core::toolchains::from_file(file) {
        Ok(l) => l,
        Err(e) => {
            for line in e.to_string().lines() {
                eprintln!("error: {line}");
            }
            return Ok(2);
        }
    };
    let here = std::env::current_dir()?;
    let cwd = match cwd {
        Some(d) => std::path::absolute(here.join(d))?,
        None => here,
    };
    let request = Request {
        command: Command::Shell { command },
        cwd,
        loosening: Default::default(),
    };
    let ex = gate::explain(&loaded.policy, &request);
    let asked = match &backend {
        Some(name) => Some(airlock_core::backends::parse(name)?),
        None => None,
    };
    let (kind, refused) = match airlock_core::backends::choose(&loaded.policy, asked) {
        Ok(k) => (k, None),
        Err(e) => (
            asked.unwrap_or(airlock_sandbox::BackendKind::Native),
            Some(e.to_string()),
        ),
    };
    let report = airlock_core::backends::report(&loaded.policy, &request, kind);
    if json {
        let mut v = serde_json::to_value(&ex)?;
        v["capabilities"] = serde_json::to_value(&report)?;
        v["backend_refused"] = serde_json::json!(refused);
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for (i, (seg, trace)) in ex.decision.segments.iter().zip(&ex.traces).enumerate() {
            println!(
                "segment {}: {}",
                i + 1,
                airlock_policy::shell::words::short(&seg.argv.join(" "))
            );
            if !seg.normalized.is_empty() {
                println!(
                    "  normalised: {}",
                    airlock_policy::shell::words::short(&seg.normalized.join(" "))
                );
            }
            for t in trace {
                println!("  {:<10} {:<17} {}", step_name(t.step), t.outcome, t.detail);
            }
            let rule = seg.rule.as_deref().unwrap_or("-");
            println!("  => {} [{rule}]", seg.decision.as_str());
        }
        let rule = ex.decision.rule.as_deref().unwrap_or("-");
        println!(
            "decision: {} ({}) [{rule}]",
            ex.decision.decision.as_str(),
            ex.decision.reason
        );
        println!();
        if let Some(why) = &refused {
            println!("backend refused: {why}");
        }
        super::capability::print(&report);
    }
    Ok(super::check::exit_code(ex.decision.decision))
}

fn step_name(s: airlock_policy::Step) -> &'static str {
    use airlock_policy::Step::*;
    match s {
        Input => "0 input",
        Workspace => "1 workspace",
        Network => "2 network",
        Approval => "3 approval",
        Allowlist => "4 allowlist",
    }
}
