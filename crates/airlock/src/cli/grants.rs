//! `airlock grant ...` and `airlock grants list|revoke`: one-boundary loosenings,
//! bounded in time and uses.

use airlock_core::grants::{Boundary, Grant, GrantRequest, GrantState};
use airlock_core::terminal::{escape_line, json_safe};
use airlock_core::{Caller, TenantId};
use anyhow::Context;
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("boundary").required(true).args(["network", "write"])))]
pub struct GrantArgs {
    /// Hosts to allow (comma-separated; `*.suffix` and `:port` allowed).
    /// Needs the network allowlist mode.
    #[arg(long, value_delimiter = ',')]
    network: Vec<String>,
    /// A host path to make writable (repeatable; relative to the current directory).
    #[arg(long)]
    write: Vec<PathBuf>,
    /// The command prefix the grant applies to (`'pip install'`): every simple
    /// command of a request must start with it.
    #[arg(long = "for")]
    for_prefix: String,
    /// How many runs it may loosen (default: any number until it expires).
    #[arg(long)]
    uses: Option<u32>,
    /// How long it lasts (`10m`, `1h`; at most 24h). Required: no grant is permanent.
    #[arg(long)]
    ttl: String,
    /// The policy the grant is for: it loosens only requests judged under this
    /// exact policy text (default: as `airlock run` finds it: $AIRLOCK_POLICY,
    /// ./airlock.toml, the built-in default; with --tenant, that token's policy
    /// from --tokens). A network grant needs a policy in network allowlist mode.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Whose requests it loosens: an API token's name (default: you, the local
    /// user). A grant is never global.
    #[arg(long, value_name = "TOKEN NAME")]
    tenant: Option<String>,
    /// The tokens file `airlock serve` uses, to find --tenant's policy.
    #[arg(long, value_name = "FILE", env = "AIRLOCK_TOKENS")]
    tokens: Option<PathBuf>,
    #[arg(long)]
    json: bool,
}

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// List grants (active ones by default).
    List {
        /// Also expired, used-up and revoked ones.
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// Revoke a grant; it stops applying at once.
    Revoke { id: String },
}

pub fn grant(args: GrantArgs) -> anyhow::Result<i32> {
    let ledger = super::approvals::open_ledger()?;
    let ttl = airlock_core::clock::parse_duration(&args.ttl).with_context(|| {
        format!(
            "--ttl takes a duration such as `10m` or `1h`, not `{}`",
            args.ttl
        )
    })?;
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let (tenant, policy) = grant_scope(&args, &here)?;
    let boundary = if !args.network.is_empty() {
        airlock_core::grants::check_network_grant_policy(&policy)?;
        Boundary::Network {
            hosts: args.network,
        }
    } else {
        let mut paths = Vec::new();
        for path in &args.write {
            let resolved = std::fs::canonicalize(path)
                .with_context(|| format!("--write {}: the path must exist", path.display()))?;
            paths.push(resolved);
        }
        Boundary::Write { paths }
    };
    let request = GrantRequest {
        boundary,
        tenant,
        policy_sha256: policy.sha256.clone(),
        for_prefix: args.for_prefix,
        ttl,
        max_uses: args.uses,
    };
    let grant = ledger.create_grant(&Caller::cli(), request)?;
    if args.json {
        println!("{}", json_safe(&serde_json::to_string_pretty(&grant)?));
    } else {
        println!(
            "granted {} to {}: {} for '{}', {} until {}",
            grant.id,
            escape_line(&grant.tenant.to_string()),
            escape_line(&grant.boundary.describe()),
            escape_line(&grant.for_prefix),
            grant
                .max_uses
                .map_or("any number of uses".to_string(), |n| format!("{n} use(s)")),
            grant.expires_at
        );
    }
    Ok(0)
}

/// For whom and under which policy: the local user under the policy `airlock
/// run` would use here, or a token's tenant under its policy from the tokens file
/// (`--policy` overrides either).
fn grant_scope(
    args: &GrantArgs,
    here: &std::path::Path,
) -> anyhow::Result<(TenantId, airlock_policy::Policy)> {
    let explicit = args.policy.as_ref().map(|p| here.join(p));
    let Some(name) = &args.tenant else {
        let policy = airlock_core::toolchains::resolve(explicit.as_deref(), here)?.policy;
        return Ok((Caller::cli().tenant(), policy));
    };
    let id = TenantId::token(name.clone());
    if let Some(path) = explicit {
        let policy = airlock_core::toolchains::resolve(Some(&path), here)?.policy;
        return Ok((id, policy));
    }
    let Some(tokens) = &args.tokens else {
        anyhow::bail!(
            "--tenant {name}: the grant is scoped to that tenant's policy; give --tokens FILE \
             (the server's tokens file) or --policy FILE"
        );
    };
    let tenants =
        crate::serve::tenants::Tenants::load(tokens, &|p| crate::serve::service::load_policy(p))?;
    let tenant = tenants.find(&id).with_context(|| {
        format!(
            "--tenant {name}: no such token in {} (known: {})",
            tokens.display(),
            tenants.names().join(", ")
        )
    })?;
    Ok((id, (*tenant.policy).clone()))
}

pub fn run(cmd: Cmd) -> anyhow::Result<i32> {
    let ledger = super::approvals::open_ledger()?;
    match cmd {
        Cmd::List { all, json } => {
            let now = airlock_core::clock::now_ms();
            let grants: Vec<Grant> = ledger
                .grants()?
                .into_iter()
                .filter(|g| all || g.state(now) == GrantState::Active)
                .collect();
            if json {
                let rows: Vec<serde_json::Value> = grants
                    .iter()
                    .map(|g| {
                        let mut v = serde_json::to_value(g).unwrap_or_default();
                        v["state"] = serde_json::Value::String(g.state(now).as_str().into());
                        v
                    })
                    .collect();
                println!("{}", json_safe(&serde_json::to_string_pretty(&rows)?));
            } else if grants.is_empty() {
                println!(
                    "no grants{}",
                    if all {
                        ""
                    } else {
                        " active (use --all for past ones)"
                    }
                );
            } else {
                println!(
                    "{:<16} {:<8} {:<20} {:<25} {:<7} {:<30} FOR",
                    "ID", "STATE", "TENANT", "EXPIRES", "USES", "BOUNDARY"
                );
                for g in &grants {
                    let uses = match g.max_uses {
                        Some(max) => format!("{}/{max}", g.uses),
                        None => format!("{}", g.uses),
                    };
                    println!(
                        "{:<16} {:<8} {:<20} {:<25} {:<7} {:<30} {}",
                        g.id,
                        g.state(now).as_str(),
                        super::audit::clip(&escape_line(&g.tenant.to_string()), 20),
                        g.expires_at,
                        uses,
                        super::audit::clip(&escape_line(&g.boundary.describe()), 30),
                        escape_line(&g.for_prefix)
                    );
                }
            }
            Ok(0)
        }
        Cmd::Revoke { id } => {
            let g = ledger.revoke_grant(&id, &Caller::cli())?;
            println!("revoked {}", g.id);
            Ok(0)
        }
    }
}
