//! Deriving a `SandboxSpec` from the policy (never from the agent's text, beyond
//! the argv the gate has already judged).

use airlock_policy::{Command, NetworkMode, Policy, Request};
use airlock_sandbox::native::interp;
use airlock_sandbox::{Limits, NetworkSpec, SandboxSpec, WorkspaceMode, WorkspaceSpec};
use std::path::PathBuf;

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

/// PATH inside the sandbox, after the interpreter's own `bin` if there is one.
pub const SANDBOX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Variables never copied from the caller, whatever `env.pass` says: they make
/// the dynamic loader or a shell run code the command did not ask for.
const NEVER_PASSED: &[&str] = &[
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "LD_DEBUG",
    "LD_DEBUG_OUTPUT",
    "LD_PROFILE",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PERL5OPT",
    "RUBYOPT",
    "NODE_OPTIONS",
];

/// Shell-style glob match with `*` and `?` (what `env.pass` accepts).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            pi += 1;
            mark = ni;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// The command's whole environment: the caller's variables that `env.pass`
/// names (minus [`NEVER_PASSED`]), then `env.set`, then defaults for PATH,
/// HOME, TMPDIR when neither set them.
pub fn environment(
    policy: &Policy,
    caller_env: &[(String, String)],
    interpreter_bin: Option<&std::path::Path>,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::new();
    let put = |env: &mut Vec<(String, String)>, k: &str, v: &str| {
        env.retain(|(n, _)| n != k);
        env.push((k.to_string(), v.to_string()));
    };
    for (k, v) in caller_env {
        if k == "PATH" || NEVER_PASSED.contains(&k.as_str()) || k.contains('=') || k.is_empty() {
            continue;
        }
        if policy.env.pass.iter().any(|g| glob_match(g, k)) {
            put(&mut env, k, v);
        }
    }
    put(&mut env, "PATH", SANDBOX_PATH);
    put(&mut env, "HOME", "/tmp");
    put(&mut env, "TMPDIR", "/tmp");
    for (k, v) in &policy.env.set {
        put(&mut env, k, v);
    }
    // The interpreter `python3` resolves to for the caller comes first even when
    // the policy sets PATH: its prefix is the one made visible.
    if let Some(bin) = interpreter_bin {
        let bin = bin.display().to_string();
        if let Some((_, path)) = env.iter_mut().find(|(k, _)| k == "PATH") {
            if !path.split(':').any(|d| d == bin) {
                *path = format!("{bin}:{path}");
            }
        }
    }
    env
}

/// Build the spec for one execution.
pub fn derive(policy: &Policy, request: &Request, request_id: &str) -> SandboxSpec {
    let caller_env: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let caller_path = caller_env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let pyenv_version = caller_env
        .iter()
        .find(|(k, _)| k == "PYENV_VERSION")
        .map(|(_, v)| v.as_str());
    let python = interp::resolve("python3", &caller_path, &request.cwd, pyenv_version);

    let mut read_paths: Vec<PathBuf> = policy.filesystem.read.clone();
    read_paths.extend(request.loosening.read_paths.iter().cloned());
    if let Some(p) = &python {
        read_paths.push(p.prefix.clone());
    }
    let mut write_paths: Vec<PathBuf> = policy.filesystem.write.clone();
    write_paths.extend(request.loosening.write_paths.iter().cloned());

    let l = &policy.limits;
    let limits = Limits {
        timeout_ms: l.timeout.ms,
        cpu_time_ms: l.cpu_time.ms,
        memory_bytes: l.memory,
        pids: l.pids,
        cpus: l.cpus,
        output_bytes: l.output,
        tmp_bytes: l.tmp,
        file_size_bytes: l.file_size,
        open_files: l.open_files,
    };
    let network = match policy.network.mode {
        NetworkMode::None => NetworkSpec::None,
        // Without an egress proxy for this run the allowlist cannot be honoured;
        // the empty namespace is the fail-closed reading of it. The engine
        // replaces this with `Proxy` when it runs one.
        NetworkMode::Allowlist => NetworkSpec::None,
        NetworkMode::Open => NetworkSpec::Open,
    };
    // `rw` is the overlay plus an automatic apply: every change reaches the host
    // through the one return path (the change-set policy), never by writing
    // straight through (DESIGN.md §1, "The return path").
    let (mode, apply) = match policy.workspace.mode {
        airlock_policy::WorkspaceMode::Overlay => (
            WorkspaceMode::Overlay,
            policy.workspace.apply == airlock_policy::model::ApplyMode::Auto,
        ),
        airlock_policy::WorkspaceMode::Ro => (WorkspaceMode::Ro, false),
        airlock_policy::WorkspaceMode::Rw => (WorkspaceMode::Overlay, true),
    };
    // What airlock owns and no run may write: the active policy file and the
    // state directory (a tokens file inside a workspace is refused by `serve`).
    // Each is named both as written and as resolved, against the root as
    // written, so that a symlink on the way does not hide it.
    let root = &policy.workspace.root;
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
    let mut owned: Vec<PathBuf> = Vec::new();
    let mut own = |p: PathBuf| {
        let p = airlock_policy::load::absolute_lexical(&request.cwd.join(p));
        if let Ok(real) = std::fs::canonicalize(&p) {
            if let Ok(rel) = real.strip_prefix(&real_root) {
                owned.push(root.join(rel));
            }
            owned.push(real);
        }
        owned.push(p);
    };
    if policy.source != airlock_policy::load::BUILTIN_ORIGIN {
        own(PathBuf::from(&policy.source));
    }
    if let Ok(state) = crate::state::resolve_state_dir() {
        own(state);
    }
    SandboxSpec {
        request_id: request_id.to_string(),
        argv: argv_for(request),
        cwd: request.cwd.clone(),
        env: environment(
            policy,
            &caller_env,
            python.as_ref().map(|p| p.bin.as_path()),
        ),
        workspace: WorkspaceSpec {
            root: policy.workspace.root.clone(),
            mode,
            protect: policy.workspace.protect.clone(),
            apply,
            changes: policy.changes.clone(),
            owned,
        },
        network,
        limits,
        read_paths,
        write_paths,
        hide_paths: policy.filesystem.hide.clone(),
        stdin: None,
        limit_enforcement: match l.enforcement {
            airlock_policy::model::LimitEnforcement::Cgroup => {
                airlock_sandbox::spec::LimitEnforcement::Cgroup
            }
            airlock_policy::model::LimitEnforcement::BestEffort => {
                airlock_sandbox::spec::LimitEnforcement::BestEffort
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("LANG", "LANG"));
        assert!(glob_match("LC_*", "LC_ALL"));
        assert!(glob_match("*", "X"));
        assert!(glob_match("A?C", "ABC"));
        assert!(!glob_match("LC_*", "LANG"));
        assert!(!glob_match("LANG", "LANGUAGE"));
    }

    #[test]
    fn environment_passes_only_what_the_policy_names() {
        let mut policy = airlock_policy::load::builtin_default(std::path::Path::new("/tmp"));
        policy.env.pass = vec!["LANG".into(), "LC_*".into(), "LD_*".into()];
        policy.env.set = vec![("PYTHONDONTWRITEBYTECODE".into(), "1".into())];
        let caller = vec![
            ("LANG".to_string(), "C.UTF-8".to_string()),
            ("LC_ALL".to_string(), "C".to_string()),
            ("AWS_SECRET_ACCESS_KEY".to_string(), "canary".to_string()),
            ("LD_PRELOAD".to_string(), "/evil.so".to_string()),
            (
                "PATH".to_string(),
                "/root/.pyenv/shims:/usr/bin".to_string(),
            ),
        ];
        let env = environment(&policy, &caller, None);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("LANG"), Some("C.UTF-8"));
        assert_eq!(get("LC_ALL"), Some("C"));
        assert_eq!(get("AWS_SECRET_ACCESS_KEY"), None);
        assert_eq!(get("LD_PRELOAD"), None);
        assert_eq!(get("PATH"), Some(SANDBOX_PATH));
        assert_eq!(get("PYTHONDONTWRITEBYTECODE"), Some("1"));
    }
}
