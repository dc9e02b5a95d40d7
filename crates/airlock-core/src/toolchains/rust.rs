//! The `rust` preset: rustup's and cargo's homes, read-only, with cargo's bin on
//! PATH. Offline (network mode none) cargo uses the host's registry cache as it
//! is and is told so (`CARGO_NET_OFFLINE`); with a network it gets a fresh
//! `CARGO_HOME` in the run's `/tmp`, so a run never writes the host's cache.
//! Build output goes to the workspace's `target/` (in overlay mode a layer
//! reported and discarded, unless applied). cargo's credentials files are
//! left out.

use super::{Exposure, Host};

pub fn exposure(host: &Host, offline: bool) -> Exposure {
    let mut e = Exposure::default();
    let rustup = host.dir("RUSTUP_HOME", ".rustup");
    let cargo = host.dir("CARGO_HOME", ".cargo");
    if let Some(r) = rustup.filter(|r| r.is_dir()) {
        e.read_if_dir(&r);
        e.set("RUSTUP_HOME", r.display().to_string());
        if let Some(t) = host.var("RUSTUP_TOOLCHAIN") {
            e.set("RUSTUP_TOOLCHAIN", t);
        }
    }
    if let Some(c) = cargo.filter(|c| c.is_dir()) {
        show_cargo_home(&mut e, &c);
        if c.join("bin").is_dir() {
            e.path.push(c.join("bin"));
        }
        if offline {
            e.set("CARGO_HOME", c.display().to_string());
            e.set("CARGO_NET_OFFLINE", "true");
        } else {
            e.set("CARGO_HOME", "/tmp/cargo-home");
        }
    }
    e.allow = vec![
        vec![
            "cargo",
            "build|test|check|run|fmt|clippy|doc|bench|tree|metadata|version",
        ],
        vec!["rustc"],
        vec!["rustfmt"],
    ];
    e
}

/// cargo's home, entry by entry, but for its registry tokens (`cargo login`'s
/// `credentials.toml`, older cargo's `credentials`): rootless, the sandbox's
/// uid is the caller's, so their 0600 does not keep a run out. Left out rather
/// than hidden inside a shown home, since not every backend can cover a file
/// (gVisor). A token in config.toml (`[registry] token`) stays visible
/// (docs/policy.md, "Toolchains"). Symlinks are left out too: shown by path,
/// a link would show its target, wherever that is.
fn show_cargo_home(e: &mut Exposure, home: &std::path::Path) {
    let real = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf());
    let Ok(entries) = std::fs::read_dir(&real) else {
        return;
    };
    let mut shown: Vec<_> = entries
        .flatten()
        .filter(|d| {
            !matches!(
                d.file_name().to_str(),
                Some("credentials.toml" | "credentials")
            )
        })
        .filter(|d| d.file_type().is_ok_and(|t| t.is_dir() || t.is_file()))
        .map(|d| d.path())
        .collect();
    shown.sort();
    for p in shown {
        if !e.read.contains(&p) {
            e.read.push(p);
        }
    }
}
