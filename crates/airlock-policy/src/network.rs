//! Step 2: does a command reach the network?
//!
//! A built-in list of programs (curl, ssh, …) and of program + subcommand
//! prefixes (`git fetch`, `pip install`, …), extended by the policy's
//! `network.programs` and `network.subcommands`.

use crate::knowledge::{normalize, Kb, Word};
use crate::rules::{prefix_matches, split_plain, ArgvShape};
use crate::NetworkPolicy;

/// Programs that exist to talk to other hosts.
pub const BUILTIN_PROGRAMS: &[&str] = &[
    "curl",
    "wget",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "ssh",
    "scp",
    "sftp",
    "telnet",
    "ftp",
    "lftp",
    "aria2c",
    "http",
    "https",
    "httpie",
    "xh",
    "links",
    "lynx",
    "w3m",
    "ssh-copy-id",
    "mosh",
    "tftp",
    "nmap",
    "dig",
    "nslookup",
    "host",
    "ping",
    "ping6",
    "traceroute",
    "whois",
    "smbclient",
    "ldapsearch",
    "mysql",
    "psql",
    "redis-cli",
    "mongo",
    "mongosh",
];

/// Program + subcommand prefixes that reach the network.
pub const BUILTIN_SUBCOMMANDS: &[&str] = &[
    "git clone",
    "git fetch",
    "git pull",
    "git push",
    "git ls-remote",
    "git submodule update",
    "git submodule add",
    "git submodule sync",
    "git remote update",
    "git archive --remote",
    "git send-email",
    "git svn",
    "pip install",
    "pip download",
    "pip3 install",
    "pip3 download",
    "pip wheel",
    "pip3 wheel",
    "pip index",
    "pip search",
    "pip list --outdated",
    "pip list --uptodate",
    "pipx install",
    "pipx run",
    "uv pip install",
    "uv add",
    "uv sync",
    "uvx",
    "poetry add",
    "poetry install",
    "npm install",
    "npm i",
    "npm ci",
    "npm publish",
    "npm update",
    "npm add",
    "npm exec",
    "npm pack",
    "npm view",
    "npm show",
    "npm info",
    "npm outdated",
    "npm audit",
    "npm search",
    "npx",
    "yarn add",
    "yarn install",
    "yarn dlx",
    "pnpm install",
    "pnpm add",
    "pnpm dlx",
    "cargo install",
    "cargo publish",
    "cargo fetch",
    "cargo update",
    "cargo login",
    "cargo search",
    "go get",
    "go install",
    "go mod download",
    "gem install",
    "bundle install",
    "apt install",
    "apt-get install",
    "apt update",
    "apt-get update",
    "apt upgrade",
    "apt-get upgrade",
    "apt-get download",
    "apt download",
    "docker pull",
    "docker push",
    "docker login",
    "podman pull",
    "podman push",
    "brew install",
    "conda install",
    "mamba install",
    "gh repo clone",
    "gh api",
    "gh pr",
    "gh release",
];

/// What the built-in lists say about one program name.
#[derive(Default)]
struct Builtin {
    /// It is in [`BUILTIN_PROGRAMS`].
    program: bool,
    /// Its entries in [`BUILTIN_SUBCOMMANDS`], as written and split, in list order.
    subcommands: Vec<(&'static str, Vec<Vec<String>>)>,
}

/// The built-in lists by program name, built once: one lookup per command
/// instead of a scan of both lists.
fn builtin(program: &str) -> Option<&'static Builtin> {
    static BY_PROGRAM: std::sync::OnceLock<std::collections::HashMap<&'static str, Builtin>> =
        std::sync::OnceLock::new();
    BY_PROGRAM
        .get_or_init(|| {
            // Sized for every entry up front: growing by doubling re-hashed
            // each key several times on every process's first command.
            let mut by_program: std::collections::HashMap<&'static str, Builtin> =
                std::collections::HashMap::with_capacity(
                    BUILTIN_PROGRAMS.len() + BUILTIN_SUBCOMMANDS.len(),
                );
            for p in BUILTIN_PROGRAMS {
                by_program.entry(p).or_default().program = true;
            }
            for sub in BUILTIN_SUBCOMMANDS {
                let program = sub.split(' ').next().unwrap_or_default();
                let entry = by_program.entry(program).or_default();
                entry.subcommands.push((sub, split_plain(sub)));
            }
            by_program
        })
        .get(program)
}

/// Why this argv reaches the network, if it does.
pub fn touches_network(argv: &[String], policy: &NetworkPolicy) -> Option<String> {
    touches_network_shaped(argv, &ArgvShape::new(argv)?, policy)
}

/// [`touches_network`] for an argv already split into its shape.
pub fn touches_network_shaped(
    argv: &[String],
    shape: &ArgvShape<'_>,
    policy: &NetworkPolicy,
) -> Option<String> {
    let program = normalise(shape.program);
    let builtin = builtin(program);
    if builtin.is_some_and(|b| b.program) || policy.programs.iter().any(|p| p == shape.program) {
        return Some(format!("`{}` reaches the network", shape.program));
    }
    if program == "rsync" {
        // rsync is local unless an operand names a host (`host:path`, `rsync://`).
        if shape
            .positionals
            .iter()
            .any(|a| a.contains("::") || a.starts_with("rsync://") || remote_operand(a))
        {
            return Some("`rsync` to another host reaches the network".into());
        }
        return None;
    }
    if matches!(program, "tar" | "gtar") {
        return remote_tar_archive(argv).map(|a| {
            format!("`tar` with the archive `{a}` reaches another host (GNU tar opens `host:path` through rsh; `--force-local` reads it as a file)")
        });
    }
    // `go run pkg@version` fetches the module first, as `go install` does.
    if program == "go" && shape.positionals.first() == Some(&"run") {
        if let Some(pkg) = shape.positionals.get(1).filter(|p| module_at_version(p)) {
            return Some(format!("`go run {pkg}` downloads that module"));
        }
    }
    // `python3 -m pip install`: judge the module as the program, and a
    // submodule (`pip._internal`, `pip.__main__`) as its package.
    if program == "python" {
        if let Some(i) = argv.iter().position(|a| a == "-m") {
            if let Some(module) = argv.get(i + 1) {
                let package = module.split('.').next().unwrap_or(module);
                for name in [module.as_str(), package] {
                    let mut inner: Vec<String> = vec![name.to_string()];
                    inner.extend(argv[i + 2..].iter().cloned());
                    if let Some(why) = touches_network(&inner, policy) {
                        return Some(format!("`python -m` {why}"));
                    }
                }
            }
        }
    }
    if builtin.is_none_or(|b| b.subcommands.is_empty()) && policy.subcommands.is_empty() {
        return None;
    }
    let normalised_argv: Vec<String>;
    let normalised_shape;
    let shape = if program != shape.program {
        normalised_argv = std::iter::once(program.to_string())
            .chain(argv[1..].iter().cloned())
            .collect();
        normalised_shape = ArgvShape::new(&normalised_argv)?;
        &normalised_shape
    } else {
        shape
    };
    for (sub, prefix) in builtin.into_iter().flat_map(|b| &b.subcommands) {
        if prefix_matches(prefix, shape) {
            return Some(format!("`{sub}` reaches the network"));
        }
    }
    for sub in &policy.subcommands {
        if prefix_matches(&split_plain(sub), shape) {
            return Some(format!("`{sub}` reaches the network"));
        }
    }
    None
}

/// An archive of a GNU tar command named `host:path`, unless `--force-local`
/// says it is a file. Every `-f` counts: with `--multi-volume` tar opens them
/// all, the first first.
fn remote_tar_archive(argv: &[String]) -> Option<&str> {
    let n = normalize(argv, Kb::builtin_only());
    let mut archive = None;
    for w in &n.words {
        match w {
            Word::Long {
                key: "--force-local",
                ..
            } => return None,
            Word::Short {
                letter: 'f',
                value: Some(v),
                ..
            }
            | Word::Long {
                short: Some('f'),
                value: Some(v),
                ..
            } if archive.is_none() && remote_operand(v) => archive = Some(*v),
            _ => {}
        }
    }
    archive
}

/// `example.com/tool@v1.2.0`, `golang.org/x/tools/cmd/stringer@latest`: a
/// module path with a version, not a local directory or file.
fn module_at_version(pkg: &str) -> bool {
    !pkg.starts_with(['.', '/'])
        && pkg
            .rsplit_once('@')
            .is_some_and(|(path, v)| !path.is_empty() && !v.is_empty())
}

/// `user@host:path` or `host:path` (a colon before any slash).
fn remote_operand(a: &str) -> bool {
    match a.find(':') {
        Some(i) => i > 0 && !a[..i].contains('/'),
        None => false,
    }
}

/// `pip3.11` → `pip`, `python3.12` → `python`, `python3` → `python`.
fn normalise(program: &str) -> &str {
    let base = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    match base {
        "pip" | "python" => base,
        _ => program,
    }
}

/// Does `host` match a pattern (`example.com`, `*.example.com`, optional `:port`)?
pub fn host_matches(pattern: &str, host: &str, port: Option<u16>) -> bool {
    let (pat_host, pat_port) = match pattern.rsplit_once(':') {
        Some((h, p)) => (h, p.parse::<u16>().ok()),
        None => (pattern, None),
    };
    if let (Some(pp), Some(p)) = (pat_port, port) {
        if pp != p {
            return false;
        }
    } else if pat_port.is_some() && port.is_none() {
        return false;
    }
    let host = host.to_ascii_lowercase();
    match pat_host.strip_prefix("*.") {
        Some(suffix) => host.ends_with(&format!(".{suffix}")),
        None => host == pat_host,
    }
}

/// Hosts an argv names: URLs (`scheme://host[:port]/…`) and `user@host:` forms.
pub fn named_hosts(argv: &[String]) -> Vec<(String, Option<u16>)> {
    let mut out = Vec::new();
    for a in argv.iter().skip(1) {
        if let Some((_, rest)) = a.split_once("://") {
            let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
            let authority = authority.rsplit('@').next().unwrap_or(authority);
            let (host, port) = match authority.rsplit_once(':') {
                Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => (h, p.parse().ok()),
                _ => (authority, None),
            };
            if !host.is_empty() {
                out.push((host.trim_matches(['[', ']']).to_string(), port));
            }
        } else if let Some((user_host, _)) = a.split_once(':') {
            if user_host.contains('@') && !user_host.contains('/') {
                let host = user_host.rsplit('@').next().unwrap_or("");
                if !host.is_empty() {
                    out.push((host.to_string(), None));
                }
            }
        }
    }
    out
}
