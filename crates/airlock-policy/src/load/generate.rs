//! Writes `builtin_policy_generated.rs`: the loader's result for
//! `default_policy.toml` as Rust data (see [`super::builtin`]), and the tests
//! that keep it current.

use super::builtin::regenerate_command;
use super::{walk, BUILTIN_ORIGIN, DEFAULT_POLICY_SHA256, DEFAULT_POLICY_TOML};
use crate::changes::ChangesPolicy;
use crate::model::*;
use crate::Policy;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Set while building and testing airlock-policy, it lets a changed
/// `default_policy.toml` compile (builtin.rs), and makes the test
/// `default_policy_generated_is_current` rewrite the file instead of failing.
const REGENERATE_ENV: &str = "AIRLOCK_REGENERATE";

const GENERATED_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/src/load/builtin_policy_generated.rs"
);

/// Stands for the workspace root in the policy that is rendered: the data
/// takes the root as a parameter.
const ROOT_MARK: &str = "/airlock-generate-root";

fn regenerating() -> bool {
    std::env::var_os(REGENERATE_ENV).is_some()
}

/// The built-in default, loaded with every check on.
fn loaded(root: &Path) -> Policy {
    let loaded = walk::load_text(DEFAULT_POLICY_TOML, BUILTIN_ORIGIN, Some(root))
        .unwrap_or_else(|e| panic!("the default policy must load: {e}"));
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    loaded.policy
}

/// `p` as the source of `builtin_policy_generated.rs`. Every struct is taken
/// apart with all its fields named, so a field added to the model does not
/// compile here until it is rendered; strings are written with `{:?}`, a valid
/// Rust literal for any of them.
pub fn render(p: &Policy) -> String {
    let Policy {
        workspace,
        network,
        commands,
        limits,
        env,
        filesystem,
        toolchains,
        sandbox,
        changes,
        knowledge,
        sha256,
        source,
    } = p;
    assert!(
        *knowledge == Default::default(),
        "the default policy has a [knowledge] section: render it"
    );
    let mut s = String::with_capacity(32 * 1024);
    s.push_str(concat!(
        "// @generated from default_policy.toml by the policy loader (load::walk) and\n",
        "// load::generate::render. Do not edit: after changing default_policy.toml, run\n",
        "//   ",
        regenerate_command!(),
        "\n",
        "// The crate does not build while this file is older than default_policy.toml, and\n",
        "// the tests default_policy_generated_* check it against the loader (load/builtin.rs).\n",
        "\n",
        "use super::builtin::{pairs, paths, rules, strings, StaticRule as R};\n",
        "use crate::changes::ChangesPolicy;\n",
        "use crate::model::*;\n",
        "use crate::Verdict;\n",
        "use std::path::PathBuf;\n",
        "\n",
    ));
    let _ = writeln!(
        s,
        "/// SHA-256 of the default_policy.toml this was made from.\npub const SOURCE_SHA256: &str = {sha256:?};\n"
    );

    let WorkspacePolicy {
        root,
        mode,
        protect,
        apply,
    } = workspace;
    assert_eq!(root, Path::new(ROOT_MARK));
    let NetworkPolicy {
        mode: network_mode,
        allow,
        deny,
        programs,
        subcommands,
    } = network;
    let CommandsPolicy {
        rules,
        on_unknown,
        max_command_bytes,
    } = commands;
    let Limits {
        timeout,
        cpu_time,
        memory,
        pids,
        cpus,
        output,
        tmp,
        file_size,
        open_files,
        enforcement,
    } = limits;
    let EnvPolicy {
        pass,
        set,
        git_config,
    } = env;
    let FilesystemPolicy { read, write, hide } = filesystem;
    let SandboxPolicy { backend } = sandbox;
    let ChangesPolicy {
        approval: changes_approval,
        allow: changes_allow,
        deny: changes_deny,
        discard,
        max_files,
        max_bytes,
        keep_for_ms,
        keep_bytes,
    } = changes;

    s.push_str("pub fn policy_data(root: PathBuf) -> Policy {\n    Policy {\n");
    let _ = writeln!(
        s,
        "        workspace: WorkspacePolicy {{\n            root,\n            mode: WorkspaceMode::{mode:?},\n            protect: paths({}),\n            apply: ApplyMode::{apply:?},\n        }},",
        path_list(protect)
    );
    let _ = writeln!(
        s,
        "        network: NetworkPolicy {{\n            mode: NetworkMode::{network_mode:?},\n            allow: strings({}),\n            deny: strings({}),\n            programs: strings({}),\n            subcommands: strings({}),\n        }},",
        strs(allow),
        strs(deny),
        strs(programs),
        strs(subcommands)
    );
    let _ = writeln!(
        s,
        "        commands: CommandsPolicy {{\n            rules: rules(RULES),\n            on_unknown: Verdict::{on_unknown:?},\n            max_command_bytes: {max_command_bytes},\n        }},"
    );
    let _ = writeln!(
        s,
        "        limits: Limits {{\n            timeout: Duration {{ ms: {} }},\n            cpu_time: Duration {{ ms: {} }},\n            memory: {memory},\n            pids: {pids},\n            cpus: {cpus:?},\n            output: {output},\n            tmp: {tmp},\n            file_size: {file_size},\n            open_files: {open_files},\n            enforcement: LimitEnforcement::{enforcement:?},\n        }},",
        timeout.ms, cpu_time.ms
    );
    let _ = writeln!(
        s,
        "        env: EnvPolicy {{\n            pass: strings({}),\n            set: pairs({}),\n            git_config: pairs({}),\n        }},",
        strs(pass),
        pair_list(set),
        pair_list(git_config)
    );
    let _ = writeln!(
        s,
        "        filesystem: FilesystemPolicy {{\n            read: paths({}),\n            write: paths({}),\n            hide: paths({}),\n        }},",
        path_list(read),
        path_list(write),
        path_list(hide)
    );
    let toolchains: Vec<String> = toolchains
        .iter()
        .map(|t| format!("Toolchain::{t:?}"))
        .collect();
    let _ = writeln!(s, "        toolchains: vec![{}],", toolchains.join(", "));
    let _ = writeln!(
        s,
        "        sandbox: SandboxPolicy {{\n            backend: SandboxBackend::{backend:?},\n        }},"
    );
    let _ = writeln!(
        s,
        "        changes: ChangesPolicy {{\n            approval: strings({}),\n            allow: strings({}),\n            deny: strings({}),\n            discard: strings({}),\n            max_files: {max_files:?},\n            max_bytes: {max_bytes:?},\n            keep_for_ms: {keep_for_ms:?},\n            keep_bytes: {keep_bytes:?},\n        }},",
        strs(changes_approval),
        strs(changes_allow),
        strs(changes_deny),
        strs(discard)
    );
    let _ = writeln!(
        s,
        "        knowledge: Default::default(),\n        sha256: SOURCE_SHA256.to_string(),\n        source: {source:?}.to_string(),\n    }}\n}}\n"
    );

    s.push_str("static RULES: &[R] = &[\n");
    for rule in rules {
        let Rule {
            name,
            prefix,
            decision,
            reason,
        } = rule;
        let prefix: Vec<String> = prefix.iter().map(|alts| strs(alts)).collect();
        let _ = writeln!(
            s,
            "    R {{\n        name: {name:?},\n        prefix: &[{}],\n        decision: Verdict::{decision:?},\n        reason: {reason:?},\n    }},",
            prefix.join(", ")
        );
    }
    s.push_str("];\n");
    s
}

fn strs(v: &[String]) -> String {
    let items: Vec<String> = v.iter().map(|x| format!("{x:?}")).collect();
    format!("&[{}]", items.join(", "))
}

fn path_list(v: &[PathBuf]) -> String {
    let items: Vec<String> = v
        .iter()
        .map(|p| {
            let p = p
                .to_str()
                .unwrap_or_else(|| panic!("{} is not UTF-8", p.display()));
            format!("{p:?}")
        })
        .collect();
    format!("&[{}]", items.join(", "))
}

fn pair_list(v: &[(String, String)]) -> String {
    let items: Vec<String> = v.iter().map(|(a, b)| format!("({a:?}, {b:?})")).collect();
    format!("&[{}]", items.join(", "))
}

/// The data compiled in is the fully checked load's value, for any root.
#[test]
fn default_policy_generated_equals_the_loader() {
    if regenerating() {
        eprintln!("{REGENERATE_ENV} is set: not comparing the data being regenerated");
        return;
    }
    for root in ["/", "/w", "/tmp/a b/ü"] {
        let root = Path::new(root);
        assert!(
            super::builtin_default(root) == loaded(root),
            "builtin_policy_generated.rs differs from the loader's result for default_policy.toml; regenerate it with: {}",
            regenerate_command!()
        );
    }
    assert_eq!(
        super::builtin_default(Path::new("/")).sha256,
        DEFAULT_POLICY_SHA256
    );
}

/// The checked-in file is, byte for byte, what rendering the loader's result
/// gives now; with AIRLOCK_REGENERATE set, it is rewritten instead.
#[test]
fn default_policy_generated_is_current() {
    let want = render(&loaded(Path::new(ROOT_MARK)));
    crate::knowledge::generate::check_generated_file(
        GENERATED_PATH,
        &want,
        "default_policy.toml",
        regenerate_command!(),
    );
}
