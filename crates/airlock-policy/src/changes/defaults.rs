//! The built-in lists the change-set rules start from: what is data inside a
//! `.git`, what a person must approve anywhere in a workspace, what makes a
//! directory look like a repository, and which caches are dropped.

/// Names directly below a `.git` directory that host git only reads as data.
pub const GIT_SAFE: &[&str] = &[
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

/// Files and directories that a tool executes or obeys without the user running
/// the project's code: approval required by default, at any depth unless anchored.
pub const DEFAULT_APPROVAL: &[&str] = &[
    ".gitmodules",
    // Attributes name the filter, diff and merge drivers host git runs on
    // checkout and diff; `.lfsconfig` points git-lfs's at a server.
    ".gitattributes",
    ".lfsconfig",
    ".envrc",
    // What an allowed `.envrc` pulls in without a new `direnv allow`
    // (`source_env_if_exists .envrc.local`), and direnv's own layout.
    ".envrc.*",
    ".direnv/",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".cshrc",
    ".tcshrc",
    ".inputrc",
    ".config/fish/",
    ".vscode/",
    ".idea/",
    ".devcontainer/",
    // CI: what runs on the next push, under the repository's secrets, and
    // who must review it (`uses: ./.github/actions/x`, CODEOWNERS).
    "**/.github/workflows/",
    ".github/",
    ".gitlab-ci.yml",
    ".gitlab/",
    ".circleci/",
    "Jenkinsfile",
    ".travis.yml",
    "azure-pipelines.yml",
    ".azure-pipelines/",
    "bitbucket-pipelines.yml",
    ".buildkite/",
    ".drone.yml",
    ".woodpecker.yml",
    ".woodpecker/",
    // Coding agents' configuration: the MCP servers they start, their hooks.
    ".mcp.json",
    ".claude/",
    ".codex/",
    ".cursor/",
    ".gemini/",
    ".roo/",
    ".kiro/",
    ".amazonq/",
    ".continue/",
    ".windsurf/",
    ".opencode/",
    "opencode.json",
    ".aider.conf.yml",
    // Hook managers: host git runs these once core.hooksPath or pre-commit points at them.
    ".husky/",
    ".githooks/",
    ".pre-commit-config.yaml",
    // ... or the hooks a manager installed read them at every commit.
    "lefthook.yml",
    ".lefthook.yml",
    "lefthook-local.yml",
    ".lefthook-local.yml",
    ".overcommit.yml",
    ".lintstagedrc*",
    "lint-staged.config.*",
    // ... or the scripts lefthook runs from its `source_dir`s.
    ".lefthook/",
    ".lefthook-local/",
    // A workspace that is a home directory: git's and ssh's own configuration.
    ".gitconfig",
    ".config/git/",
    ".ssh/",
    // Toolchain selectors and tool configuration that name a program to run
    // on the tool's first call, before any of the project's code: rustup's
    // `path =` toolchain (any `cargo` or `rustc` below it), cargo's
    // `rustc-wrapper` (read from every parent directory; `cargo metadata`,
    // which editors run on opening a folder, calls it), npm's `script-shell`
    // (`npx`), yarn's `yarnPath`, pdb's start-up commands, mise's and asdf's
    // tools and hooks.
    "rust-toolchain",
    "rust-toolchain.toml",
    "**/.cargo/config",
    "**/.cargo/config.toml",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pdbrc",
    "mise.toml",
    "mise.*.toml",
    ".mise.toml",
    ".mise.*.toml",
    ".mise/",
    ".config/mise/",
    ".tool-versions",
    // Build-tool wrappers that download and run the program a file names on
    // an IDE's import or the wrapper's first call; R's start-up file.
    "**/gradle/wrapper/gradle-wrapper.properties",
    ".mvn/",
    ".bazeliskrc",
    ".bazelversion",
    ".Rprofile",
    // Other version control systems' repository configuration: hooks that run
    // on `hg status`, a pager or diff tool `jj` starts.
    "**/.hg/hgrc",
    "**/.hg/hgrc-not-shared",
    "**/.jj/repo/config.toml",
    // Editors' per-project configuration, executed or obeyed on opening.
    ".nvim.lua",
    ".nvimrc",
    ".exrc",
    ".vimrc",
    ".dir-locals.el",
    ".dir-locals-2.el",
    "*.code-workspace",
    "*.sublime-project",
    ".zed/",
    ".helix/",
    // A workspace that is a home directory: what the next login, shell, editor
    // or tool start runs or obeys (`~/.local/bin` is on Debian's PATH, before
    // /usr/bin), and the credential helpers and files tools read.
    ".local/bin/",
    // rustup's `~/.cargo/env`, bun, deno, volta, pyenv, asdf, mise and nix
    // put these first on PATH; bash-completion sources the completion files
    // in every interactive shell. (`bin/`, on Debian's PATH too, is held
    // only when the workspace is the home directory: see `Context::home`.)
    ".cargo/bin/",
    ".bun/bin/",
    ".deno/bin/",
    ".volta/bin/",
    ".pyenv/shims/",
    ".asdf/shims/",
    ".local/share/mise/shims/",
    ".nix-profile/",
    ".bash_completion",
    ".local/share/bash-completion/",
    ".bash_aliases",
    ".config/autostart/",
    ".config/systemd/",
    ".config/environment.d/",
    ".config/nvim/",
    ".config/direnv/",
    ".config/pip/",
    ".pip/",
    ".vim/",
    ".emacs",
    ".emacs.d/",
    ".kube/",
    ".docker/",
    ".aws/",
    ".ipython/",
    ".gdbinit",
    ".psqlrc",
    ".sqliterc",
    ".tmux.conf",
    ".xprofile",
    ".xinitrc",
    ".xsession",
    ".pam_environment",
    ".curlrc",
    ".wgetrc",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".gnupg/",
];

/// Names below a directory that, with a `HEAD` beside them, make host git take
/// that directory for a repository (a bare one, or a worktree's admin
/// directory) and obey its `config` when run inside it.
pub const GIT_DIR_NAMES: &[&str] = &[
    "HEAD",
    "config",
    "objects",
    "refs",
    "commondir",
    "gitdir",
    "hooks",
    "info",
    "packed-refs",
    "index",
];

/// Most bytes of a `.git/index` the classifier reads to check its entries.
pub const GIT_INDEX_MAX_BYTES: usize = 256 << 20;

/// Caches that are dropped from the change set rather than applied or reported.
pub const DEFAULT_DISCARD: &[&str] = &[
    "__pycache__/",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
];
