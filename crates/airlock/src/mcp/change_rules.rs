//! Which workspace paths a tool on the host executes or obeys without the user
//! running the project's code (git internals, gitfiles, editor, CI and agent
//! configuration, shell start-up files). A file tool never writes them
//! silently: the write is refused as `approval_required`, naming the rule.
//!
//! Kept in this one function so that it can be swapped for the change-set
//! classifier of issue 11 (one rule set for `--apply`, `rw` and file tools)
//! when that lands.

use std::path::{Component, Path};

/// Why a path needs a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeRule {
    /// A stable name for the rule (`git_metadata`, `shell_startup`, ...).
    pub rule: &'static str,
    /// One line: what reads the path and what a write there would do.
    pub reason: &'static str,
}

/// Entries directly under the workspace's own `.git/` that git only stores
/// data in (objects, refs, logs, the index, the heads): writing them cannot
/// make git run anything.
const GIT_SAFE: &[&str] = &[
    "objects",
    "refs",
    "logs",
    "index",
    "HEAD",
    "ORIG_HEAD",
    "FETCH_HEAD",
    "COMMIT_EDITMSG",
    "packed-refs",
];

/// File names a tool reads and acts on, wherever they are.
const FILES: &[(&str, &str, &str)] = &[
    (
        ".gitmodules",
        "git_metadata",
        "git reads submodule URLs and update commands from it",
    ),
    (
        ".gitattributes",
        "git_metadata",
        "git picks filter, diff and merge drivers by it",
    ),
    (
        ".envrc",
        "shell_startup",
        "direnv runs it on entering the folder",
    ),
    (".bashrc", "shell_startup", "a shell runs it at start-up"),
    (
        ".bash_profile",
        "shell_startup",
        "a shell runs it at start-up",
    ),
    (
        ".bash_login",
        "shell_startup",
        "a shell runs it at start-up",
    ),
    (".bash_logout", "shell_startup", "a shell runs it at exit"),
    (".profile", "shell_startup", "a shell runs it at start-up"),
    (".zshrc", "shell_startup", "a shell runs it at start-up"),
    (".zshenv", "shell_startup", "a shell runs it at start-up"),
    (".zprofile", "shell_startup", "a shell runs it at start-up"),
    (".zlogin", "shell_startup", "a shell runs it at start-up"),
    (".cshrc", "shell_startup", "a shell runs it at start-up"),
    (".tcshrc", "shell_startup", "a shell runs it at start-up"),
    (".kshrc", "shell_startup", "a shell runs it at start-up"),
    (
        ".mcp.json",
        "agent_config",
        "an agent starts the MCP servers it lists (each entry is a command line)",
    ),
    (
        ".pre-commit-config.yaml",
        "git_metadata",
        "the pre-commit hook runs what it lists at the next commit",
    ),
];

/// Folder names whose content a tool runs or obeys, wherever they are.
const DIRS: &[(&str, &str, &str)] = &[
    (
        ".vscode",
        "editor_config",
        "the editor runs tasks and settings from it",
    ),
    (
        ".idea",
        "editor_config",
        "the IDE runs run-configurations from it",
    ),
    (
        ".devcontainer",
        "editor_config",
        "the editor builds and runs a container from it",
    ),
    (
        ".claude",
        "agent_config",
        "an agent obeys its settings and hooks (commands)",
    ),
    (".codex", "agent_config", "an agent obeys its settings"),
    (
        ".cursor",
        "agent_config",
        "an agent obeys its rules and MCP servers",
    ),
    (".husky", "git_metadata", "git hooks run from it"),
];

/// `Some(rule)` when writing `rel` (a workspace-relative path of plain names)
/// would change what a host tool executes.
pub fn host_executable(rel: &Path) -> Option<ChangeRule> {
    let names: Vec<&std::ffi::OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    for (i, name) in names.iter().enumerate() {
        let last = i + 1 == names.len();
        if *name == ".git" {
            // The workspace's own repository: data files are fine, everything
            // else (config, hooks, info/, commondir, modules/, worktrees/, ...)
            // changes what git runs. A `.git` anywhere else, file or folder,
            // points git at another repository (or is one).
            let safe = i == 0
                && !last
                && names
                    .get(1)
                    .is_some_and(|n| GIT_SAFE.iter().any(|s| *n == *s));
            if !safe {
                return Some(ChangeRule {
                    rule: "git_metadata",
                    reason: "git reads its config, hooks and repository location from here; a change can make the next `git status` run a command",
                });
            }
            return None;
        }
        if !last {
            if let Some((_, rule, reason)) = DIRS.iter().find(|(d, _, _)| *name == *d) {
                return Some(ChangeRule { rule, reason });
            }
            if *name == ".github" && names.get(i + 1).is_some_and(|n| *n == "workflows") {
                return Some(ChangeRule {
                    rule: "ci_config",
                    reason: "CI runs the workflows in it with the repository's secrets",
                });
            }
            if *name == "fish" && i > 0 && names[i - 1] == ".config" {
                return Some(ChangeRule {
                    rule: "shell_startup",
                    reason: "fish runs its configuration at start-up",
                });
            }
        } else if let Some((_, rule, reason)) = FILES.iter().find(|(f, _, _)| *name == *f) {
            return Some(ChangeRule { rule, reason });
        } else if DIRS.iter().any(|(d, _, _)| *name == *d) {
            return Some(ChangeRule {
                rule: "editor_config",
                reason: "a tool runs or obeys what this folder holds",
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_executable_paths_need_a_person() {
        for p in [
            ".git/config",
            ".git/hooks/pre-commit",
            ".git/commondir",
            ".git/info/attributes",
            ".git/modules/sub/config",
            ".git/worktrees/w/config",
            ".git",
            "sub/.git",
            "sub/.git/config",
            "sub/.git/objects/ab/cd",
            ".gitmodules",
            "sub/.envrc",
            ".bashrc",
            "deep/er/.profile",
            ".vscode/tasks.json",
            "pkg/.vscode/settings.json",
            ".github/workflows/ci.yml",
            ".mcp.json",
            ".claude/settings.json",
            ".codex/config.toml",
            ".cursor/mcp.json",
            ".config/fish/config.fish",
            ".husky/pre-commit",
        ] {
            assert!(host_executable(Path::new(p)).is_some(), "{p}");
        }
        for p in [
            ".git/objects/ab/cdef",
            ".git/refs/heads/main",
            ".git/HEAD",
            ".git/index",
            ".git/logs/HEAD",
            ".gitignore",
            "src/main.rs",
            ".github/README.md",
            "notes/git/config",
            "README.md",
        ] {
            assert_eq!(host_executable(Path::new(p)), None, "{p}");
        }
    }
}
