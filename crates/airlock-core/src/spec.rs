//! Deriving a `SandboxSpec` from the policy (never from the agent's text, beyond
//! the argv the gate has already judged).

use airlock_policy::{Command, NetworkMode, Policy, Request};
use airlock_sandbox::native::interp;
use airlock_sandbox::{
    Limits, NetworkSpec, SandboxSpec, WorkspaceMode, WorkspaceSpec, GIT_CONFIG_FILE, SANDBOX_HOME,
};
use std::path::{Path, PathBuf};

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
        if k == "PATH"
            || NEVER_PASSED.contains(&k.as_str())
            || k.starts_with("GIT_CONFIG")
            || k.contains('=')
            || k.is_empty()
        {
            continue;
        }
        if policy.env.pass.iter().any(|g| glob_match(g, k)) {
            put(&mut env, k, v);
        }
    }
    put(&mut env, "PATH", SANDBOX_PATH);
    put(&mut env, "HOME", SANDBOX_HOME);
    put(
        &mut env,
        "XDG_CONFIG_HOME",
        &format!("{SANDBOX_HOME}/.config"),
    );
    put(&mut env, "TMPDIR", "/tmp");
    for (k, v) in &policy.env.set {
        put(&mut env, k, v);
    }
    // Git's configuration comes only from the repository and the read-only
    // file airlock writes from the policy (`env.git_config`), whatever HOME
    // and XDG_CONFIG_HOME say: never /etc/gitconfig, ~/.gitconfig or
    // $XDG_CONFIG_HOME/git/config, which a command could plant.
    put(&mut env, "GIT_CONFIG_NOSYSTEM", "1");
    put(&mut env, "GIT_CONFIG_GLOBAL", GIT_CONFIG_FILE);
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

/// The run's global git configuration (`GIT_CONFIG_GLOBAL`): airlock's
/// defaults, then the policy's `env.git_config`, which may override them.
///
/// * `safe.directory` names the workspace root only. It is idmapped to the
///   sandbox's user, so git trusts it anyway; other repositories a policy shows
///   (`filesystem.read`) keep git's ownership check, which is what stops a
///   foreign repository's `.git/config` from running its commands.
/// * `core.fsmonitor = false`: the hook git would run on every `status` and
///   `diff` is only an optimisation, and a sandbox has no daemon to keep.
///   A repository's own config may still set it; the workspace's `.git/config`
///   is a protected path, so only the user puts one there.
/// * `core.editor` and `sequence.editor` are `true`: nobody types into a
///   run, so an editor git opens (a commit without `-m`, `rebase -i`) would
///   read its keystrokes from the run's stdin, which the agent writes, and
///   vim runs `:!cmd` from there: a program the gate never saw. `true`
///   keeps the prepared text (`rebase --continue` works; an empty commit
///   message aborts the commit).
/// * No `core.hooksPath`: the workspace's `.git/hooks` is protected (the user's
///   own, e.g. pre-commit), and hooks run inside the sandbox like any command.
pub fn git_config_text(policy: &Policy) -> String {
    let mut sections: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut set = |key: &str, value: &str| {
        // `section.sub.section.name`: the section is up to the first dot, the
        // name after the last; git's keys are case-insensitive but for the subsection.
        let Some((section, rest)) = key.split_once('.') else {
            return;
        };
        let (header, name) = match rest.rsplit_once('.') {
            Some((sub, name)) => (format!("[{section} \"{sub}\"]"), name),
            None => (format!("[{section}]"), rest),
        };
        let quoted = format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""));
        let list = header == "[safe]" && name.eq_ignore_ascii_case("directory");
        let i = match sections.iter().position(|(h, _)| *h == header) {
            Some(i) => i,
            None => {
                sections.push((header, Vec::new()));
                sections.len() - 1
            }
        };
        let entries = &mut sections[i].1;
        // safe.directory is a list; every other key keeps its last value.
        if !list {
            entries.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        }
        entries.push((name.to_string(), quoted));
    };
    set(
        "safe.directory",
        &policy.workspace.root.display().to_string(),
    );
    set("core.fsmonitor", "false");
    set("core.editor", "true");
    set("sequence.editor", "true");
    for (k, v) in &policy.env.git_config {
        set(k, v);
    }
    let mut out = String::from(
        "# airlock: this run's only global git configuration (GIT_CONFIG_GLOBAL), read-only.\n\
         # From the policy's [env] git_config; /etc/gitconfig and ~/.gitconfig are not read.\n",
    );
    for (header, entries) in sections {
        out.push_str(&header);
        out.push('\n');
        for (name, value) in entries {
            out.push_str(&format!("\t{name} = {value}\n"));
        }
    }
    out
}

/// The names of a path airlock owns, for the change-set rules: `p` (relative
/// to `cwd`) as written and as resolved, and, resolved, under `root` as
/// written, so that a symlink on the way does not hide it.
pub fn owned_forms(root: &Path, cwd: &Path, p: &Path) -> Vec<PathBuf> {
    let p = airlock_policy::load::absolute_lexical(&cwd.join(p));
    let mut out = Vec::new();
    if let Ok(real) = std::fs::canonicalize(&p) {
        let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        if let Ok(rel) = real.strip_prefix(&real_root) {
            out.push(root.join(rel));
        }
        out.push(real);
    }
    out.push(p);
    out
}

/// Whether `p` lies in a tree the sandbox shows from the host: the
/// workspace, a read path or a write path, each as written or resolved.
pub fn shown_by(spec: &SandboxSpec, p: &Path) -> bool {
    std::iter::once(&spec.workspace.root)
        .chain(&spec.read_paths)
        .chain(&spec.write_paths)
        .flat_map(|t| std::iter::once(t.clone()).chain(std::fs::canonicalize(t).ok()))
        .any(|t| p.starts_with(&t))
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
    // What airlock owns and no run may write: the active policy file, the
    // state directory and the audit signing key and checkpoint file (a tokens
    // file inside a workspace is refused by `serve`).
    // Each is named both as written and as resolved, against the root as
    // written, so that a symlink on the way does not hide it.
    let root = &policy.workspace.root;
    let mut owned: Vec<PathBuf> = Vec::new();
    if policy.source != airlock_policy::load::BUILTIN_ORIGIN {
        owned.extend(owned_forms(root, &request.cwd, Path::new(&policy.source)));
    }
    if let Ok(state) = crate::state::resolve_state_dir() {
        owned.extend(owned_forms(root, &request.cwd, &state));
    }
    for (_, file) in crate::ledger::audit_files_from_env() {
        owned.extend(owned_forms(root, &request.cwd, &file));
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
            // The engine names the run's directory under the state directory.
            keep: None,
            list: None,
            // This process's: the caller's for `airlock run` and `apply`,
            // the server's user's for `airlock serve`.
            home: std::env::var_os("HOME").map(PathBuf::from),
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
        git_config: git_config_text(policy),
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
    /// Issue 12: HOME is the run's own, git reads only airlock's global file,
    /// whatever the caller passes or the policy sets.
    #[test]
    fn home_and_git_configuration_are_airlocks() {
        let mut policy = airlock_policy::load::builtin_default(std::path::Path::new("/w"));
        policy.env.pass = vec!["GIT_*".into(), "XDG_*".into()];
        policy.env.set = vec![
            ("GIT_CONFIG_GLOBAL".into(), "/tmp/.gitconfig".into()),
            ("GIT_CONFIG_NOSYSTEM".into(), "0".into()),
        ];
        let caller = vec![
            (
                "GIT_CONFIG_GLOBAL".to_string(),
                "/root/.gitconfig".to_string(),
            ),
            ("GIT_CONFIG_COUNT".to_string(), "1".to_string()),
            ("GIT_CONFIG_KEY_0".to_string(), "core.pager".to_string()),
            ("GIT_AUTHOR_NAME".to_string(), "someone".to_string()),
        ];
        let env = environment(&policy, &caller, None);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("HOME"), Some("/home/airlock"));
        assert_eq!(get("XDG_CONFIG_HOME"), Some("/home/airlock/.config"));
        assert_eq!(get("GIT_CONFIG_NOSYSTEM"), Some("1"));
        assert_eq!(get("GIT_CONFIG_GLOBAL"), Some("/etc/airlock/gitconfig"));
        assert_eq!(get("GIT_CONFIG_COUNT"), None);
        assert_eq!(get("GIT_CONFIG_KEY_0"), None);
        assert_eq!(get("GIT_AUTHOR_NAME"), Some("someone"));
    }

    #[test]
    fn git_config_text_from_the_policy() {
        let mut policy = airlock_policy::load::builtin_default(std::path::Path::new("/w"));
        let text = git_config_text(&policy);
        assert!(text.contains("[safe]\n\tdirectory = \"/w\"\n"), "{text}");
        assert!(
            text.contains("[core]\n\tfsmonitor = \"false\"\n\teditor = \"true\"\n"),
            "{text}"
        );
        assert!(text.contains("[sequence]\n\teditor = \"true\"\n"), "{text}");
        policy.env.git_config = vec![
            ("user.name".into(), "Agent \"A\" \\ B".into()),
            ("safe.directory".into(), "/other".into()),
            ("core.fsmonitor".into(), "true".into()),
            (
                "url.https://mirror.example/.insteadOf".into(),
                "https://github.com/".into(),
            ),
        ];
        let text = git_config_text(&policy);
        assert!(
            text.contains("\tname = \"Agent \\\"A\\\" \\\\ B\"\n"),
            "{text}"
        );
        assert!(
            text.contains("\tdirectory = \"/w\"\n\tdirectory = \"/other\"\n"),
            "{text}"
        );
        assert!(text.contains("\tfsmonitor = \"true\"\n"), "{text}");
        assert!(!text.contains("\"false\""), "{text}");
        assert!(
            text.contains(
                "[url \"https://mirror.example/\"]\n\tinsteadOf = \"https://github.com/\"\n"
            ),
            "{text}"
        );
    }
}
