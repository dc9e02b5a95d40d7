//! The change-set policy: what may flow back from a run to the host workspace.
//!
//! Every change a run leaves (an overlay's upper layer applied by `--apply` or
//! by `rw` mode, and later the MCP/HTTP file tools) is judged here, one entry at
//! a time, by [`classify`], a pure function of the entry, the `[changes]`
//! section and a [`Context`] naming the paths that airlock itself owns. The
//! answer is a [`Classification`]: a [`Disposition`] with the rule that made it
//! and a one-line reason that names the path, the rule and what would allow it.
//!
//! Order of the rules (first match wins):
//! 1. airlock's own files (policy, tokens, state directory) and `workspace.protect`: deny;
//! 2. `[changes] deny`: deny;
//! 3. a file named like a policy file (`airlock.toml`); FIFOs, sockets, device
//!    nodes; symlinks whose target leaves the workspace, that lie inside a
//!    `.git` directory, or whose target is itself denied (held, for a held
//!    target); a `.git/index` listing entries inside `.git` or above the root:
//!    deny (an index that cannot be read to check it: approval required);
//! 4. `[changes] discard` (caches): discarded, never applied;
//! 5. `[changes] allow`: allow (overrides 6, never 1-3);
//! 6. host-executable metadata (git internals outside a safe set, a `.git` at any
//!    depth, a work-tree file the host's git configuration runs or reads, a
//!    directory the set makes look like a git repository, the default
//!    approval list, `[changes] approval`): approval required;
//! 7. everything else: allow, with the mode normalised (set-uid, set-gid and
//!    sticky bits stripped; no world-writable bit unless the host entry had it).

mod defaults;
pub mod envrc;
pub mod git_config;
mod git_dir;
pub mod git_index;
pub mod git_objects;
mod git_pack;
mod links;
mod package_json;
mod pattern;

pub use defaults::*;
pub use links::{resolve_target, resolves_inside, target_inside, MAX_LINK_HOPS};
pub use pattern::Pattern;

use git_dir::*;

use crate::load::POLICY_FILE_NAME;
use serde::{Deserialize, Serialize};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// `[changes]` as loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangesPolicy {
    /// Patterns added to [`DEFAULT_APPROVAL`].
    pub approval: Vec<String>,
    /// Patterns allowed even though the defaults or `approval` hold them for a person.
    pub allow: Vec<String>,
    /// Patterns never applied.
    pub deny: Vec<String>,
    /// Patterns dropped silently (counted); replaces [`DEFAULT_DISCARD`] when set.
    pub discard: Vec<String>,
    /// Most files (entries) one apply may write; `None`: the overlay's inode cap.
    pub max_files: Option<u64>,
    /// Most bytes of file data one apply may write; `None`: the overlay's size cap.
    pub max_bytes: Option<u64>,
    /// How long a change set that was not applied stays kept for `airlock
    /// apply RUN_ID` (ms); `None`: [`DEFAULT_KEEP_FOR_MS`].
    #[serde(default)]
    pub keep_for_ms: Option<u64>,
    /// Most bytes all kept change sets together may take in the state
    /// directory (oldest dropped first); `None`: [`DEFAULT_KEEP_BYTES`]; 0 keeps none.
    #[serde(default)]
    pub keep_bytes: Option<u64>,
}

/// Default age after which a kept change set is removed: one day.
pub const DEFAULT_KEEP_FOR_MS: u64 = 24 * 3600 * 1000;
/// Default bound on the bytes of all kept change sets together: 1 GiB.
pub const DEFAULT_KEEP_BYTES: u64 = 1 << 30;

impl Default for ChangesPolicy {
    fn default() -> Self {
        ChangesPolicy {
            approval: Vec::new(),
            allow: Vec::new(),
            deny: Vec::new(),
            discard: DEFAULT_DISCARD.iter().map(|s| s.to_string()).collect(),
            max_files: None,
            max_bytes: None,
            keep_for_ms: None,
            keep_bytes: None,
        }
    }
}

/// What happened to a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// The type of the changed entry (for a deletion: of what was deleted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryType {
    File,
    Dir,
    Symlink,
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
}

impl EntryType {
    /// From `st_mode`'s type bits.
    pub fn from_mode(mode: u32) -> EntryType {
        match mode & 0o170000 {
            0o040000 => EntryType::Dir,
            0o120000 => EntryType::Symlink,
            0o010000 => EntryType::Fifo,
            0o140000 => EntryType::Socket,
            0o020000 => EntryType::CharDevice,
            0o060000 => EntryType::BlockDevice,
            _ => EntryType::File,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EntryType::File => "file",
            EntryType::Dir => "dir",
            EntryType::Symlink => "symlink",
            EntryType::Fifo => "fifo",
            EntryType::Socket => "socket",
            EntryType::CharDevice => "char_device",
            EntryType::BlockDevice => "block_device",
        }
    }
}

/// One change, as the classifier sees it.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// Relative to the workspace root, without `..` (anything else is denied).
    pub rel: &'a Path,
    pub kind: ChangeKind,
    pub file_type: EntryType,
    /// Permission bits (with set-id and sticky bits) of the new entry.
    pub mode: u32,
    /// Permission bits of the host entry it replaces, if there is one.
    pub host_mode: Option<u32>,
    /// The type of the host entry it replaces, if there is one: a directory
    /// replaced by a file removes the directory's whole tree on the host.
    pub host_type: Option<EntryType>,
    /// For a symlink: its target, as stored.
    pub symlink_target: Option<&'a Path>,
}

impl<'a> Entry<'a> {
    /// A plain write at `rel` (mode 0644, nothing on the host there): what
    /// a link, an index entry or a commit turns into on the host.
    pub fn written(rel: &'a Path, kind: ChangeKind, file_type: EntryType) -> Entry<'a> {
        Entry {
            rel,
            kind,
            file_type,
            mode: 0o644,
            host_mode: None,
            host_type: None,
            symlink_target: None,
        }
    }
}

/// The workspace as the change set would leave it, for the rules that look
/// beyond the entry judged: where a symlink leads, whether a directory would
/// look like a git repository, what a `.git/index` lists. Paths are relative
/// to the workspace root. An answer it cannot give (the default methods) never
/// lets a change through that the answer could have refused: an unreadable
/// index needs a person.
pub trait View {
    /// The target of the symlink at `p`, if `p` is one.
    fn link(&self, _p: &Path) -> Option<PathBuf> {
        None
    }
    /// Whether something (of any type, a final symlink not followed) is at `p`.
    fn exists(&self, _p: &Path) -> bool {
        false
    }
    /// The contents of the regular file at `p`, if at most `max` bytes.
    fn read(&self, _p: &Path, _max: usize) -> Option<Vec<u8>> {
        None
    }
    /// The contents of the host's regular file at `p` as it is now (before
    /// the change set), if at most `max` bytes.
    fn read_host(&self, _p: &Path, _max: usize) -> Option<Vec<u8>> {
        None
    }
    /// A `.git` below the host's directory `dir` (a nested repository that
    /// deleting `dir` deletes), searched to a bounded depth and size.
    fn nested_git(&self, _dir: &Path) -> Option<PathBuf> {
        None
    }
    /// Whether the host has an entry at `p` (before the change set).
    fn host_has(&self, _p: &Path) -> bool {
        false
    }
    /// The names in the directory at `p` (a final symlink not followed).
    fn names(&self, _p: &Path) -> Vec<std::ffi::OsString> {
        Vec::new()
    }
    /// Up to `len` bytes of the regular file at `p` from `offset` (fewer at
    /// its end).
    fn read_at(&self, _p: &Path, _offset: u64, _len: usize) -> Option<Vec<u8>> {
        None
    }
}

/// A view that knows nothing beyond the entry (see [`View`]'s defaults).
pub struct NoView;

impl View for NoView {}

/// A view that knows only its symlinks: `f(p)` is the target of the link at `p`.
impl<F: Fn(&Path) -> Option<PathBuf>> View for F {
    fn link(&self, p: &Path) -> Option<PathBuf> {
        self(p)
    }
}

/// A work-tree path, relative to the workspace root, that a host tool runs,
/// puts on PATH or reads as configuration, by the host's own configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostNamed {
    pub path: PathBuf,
    /// A directory whose every entry the tool may run (`core.hooksPath`,
    /// `PATH_add bin`).
    pub dir: bool,
    /// The key or directive and the file that set it, for the reason.
    pub by: String,
    pub tool: NamedBy,
}

/// Whose configuration names a [`HostNamed`] path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedBy {
    /// git's (system, user, repository): see [`git_config`].
    Git,
    /// The workspace root's `.envrc`, which direnv loads: see [`envrc`].
    Direnv,
}

impl NamedBy {
    /// The rule a held path is reported under.
    pub fn rule(self) -> &'static str {
        match self {
            NamedBy::Git => "builtin.git_config_named",
            NamedBy::Direnv => "builtin.envrc_named",
        }
    }

    /// Whose configuration names the path (`by`), and what the tool does
    /// with it.
    fn says(self, by: &str) -> String {
        match self {
            NamedBy::Git => format!("the host's git configuration names ({by}): host git runs it or reads it as configuration (at `git commit`, `git add`, `git diff`)"),
            NamedBy::Direnv => format!("the host's `.envrc` names ({by}): direnv puts it on the user's PATH or loads it in the user's shell as they enter the directory"),
        }
    }
}

/// What the caller knows that the policy text does not.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// Absolute workspace root (absolute symlink targets are judged against it).
    pub root: PathBuf,
    /// Paths (relative to root) that airlock owns: the active policy file, the
    /// tokens file, the state directory. Never written, in any mode.
    pub airlock_owned: Vec<PathBuf>,
    /// `workspace.protect`, relative to root.
    pub protect: Vec<PathBuf>,
    /// Work-tree paths the host's git or direnv configuration runs or reads
    /// as configuration (see [`git_config`], [`envrc`]); empty unless
    /// [`Context::with_host_config`] read them.
    pub host_named: Vec<HostNamed>,
    /// The root is an airlock-owned path or lies inside one (a workspace in
    /// the state directory): every change would write airlock's own files,
    /// so every change is denied. The front ends refuse such a workspace
    /// before anything runs; this is the second line.
    pub root_owned: Option<PathBuf>,
    /// The root is the home directory of the user airlock acts for (see
    /// [`Context::with_home`]): its `bin/` is on that user's PATH.
    pub root_is_home: bool,
    /// That user's home directory, when known: `$HOME` and `~` in an
    /// `.envrc` stand for it.
    pub home: Option<PathBuf>,
}

impl Context {
    /// A context for `root`, with the airlock-owned absolute `paths` that lie
    /// inside it made relative (those outside cannot be reached by a change),
    /// and an owned path that holds the root itself kept as `root_owned`.
    pub fn new(root: &Path, owned: &[PathBuf], protect: &[PathBuf]) -> Context {
        Context {
            root_owned: owned
                .iter()
                .find(|p| p.is_absolute() && root.starts_with(p))
                .cloned(),
            root: root.to_path_buf(),
            airlock_owned: owned
                .iter()
                .filter_map(|p| {
                    if p.is_absolute() {
                        p.strip_prefix(root).ok().map(Path::to_path_buf)
                    } else {
                        Some(p.clone())
                    }
                })
                .filter(|p| !p.as_os_str().is_empty())
                .collect(),
            protect: protect.to_vec(),
            host_named: Vec::new(),
            root_is_home: false,
            home: None,
        }
    }

    /// This context with the work-tree paths that host git, run in the
    /// workspace by the user whose home [`Context::with_home`] gave, would
    /// execute or read as configuration, and those the root's `.envrc` puts
    /// on PATH or loads, as the host's files say now. Reads the host.
    pub fn with_host_config(mut self) -> Context {
        let home = self.home.as_deref();
        self.host_named = git_config::host_named(&self.root, home);
        let root = envrc::host_named(&self.root, home);
        self.add_named(root);
        self
    }

    /// The same context, with what the `.envrc` files below the root name in
    /// the directories of the `changed` paths (relative to the root), where
    /// direnv would load them. Reads the host.
    pub fn with_envrc_below<'a>(mut self, changed: impl IntoIterator<Item = &'a Path>) -> Context {
        let named = envrc::named_below(&self.root, self.home.as_deref(), changed);
        self.add_named(named);
        self
    }

    fn add_named(&mut self, named: Vec<HostNamed>) {
        for n in named {
            if !self
                .host_named
                .iter()
                .any(|h| h.path == n.path && h.dir == n.dir)
            {
                self.host_named.push(n);
            }
        }
    }

    /// The same context, told the home directory (`$HOME`) of the user
    /// airlock acts for: when it is the root, `bin/` is held as well, since
    /// Debian's `~/.profile` puts `~/bin` on PATH before /usr/bin. (In any
    /// other workspace `bin/` is an ordinary project directory.)
    pub fn with_home(mut self, home: Option<&Path>) -> Context {
        let same = |a: &Path, b: &Path| {
            a == b
                || std::fs::canonicalize(a)
                    .ok()
                    .zip(std::fs::canonicalize(b).ok())
                    .is_some_and(|(a, b)| a == b)
        };
        let home = home.filter(|h| h.is_absolute());
        self.root_is_home =
            home.is_some_and(|h| !self.root.as_os_str().is_empty() && same(h, &self.root));
        self.home = home.map(Path::to_path_buf);
        self
    }
}

/// The answer for one change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    Allow,
    ApprovalRequired,
    Deny,
    /// Dropped (a cache): neither applied nor listed one by one.
    Discard,
}

impl Disposition {
    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::Allow => "allow",
            Disposition::ApprovalRequired => "approval_required",
            Disposition::Deny => "deny",
            Disposition::Discard => "discard",
        }
    }
}

/// A disposition with its rule and reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Classification {
    pub disposition: Disposition,
    /// Which rule decided: `changes.deny[2]`, `builtin.git_metadata`, ….
    pub rule: String,
    /// One line naming the path, the rule and what would allow it (empty for allow).
    pub reason: String,
    /// For an allowed added or modified entry: the permission bits to apply.
    pub mode: Option<u32>,
}

/// A path as printable, lossless text: UTF-8 stays as it is except `\`, which
/// doubles, and control characters (C0, DEL, C1, and the bidi/line separators),
/// which become `\n`, `\t`, `\xNN` or `\u{…}`; bytes that are not UTF-8 become
/// `\xNN`. Two different paths never print the same, and nothing printed can
/// start a new line or move the cursor.
pub fn escape_path(p: &Path) -> String {
    escape_bytes(p.as_os_str().as_bytes())
}

/// [`escape_path`] on raw bytes.
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for ch in chunk.valid().chars() {
            match ch {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                    out.push_str(&format!("\\x{:02x}", c as u32))
                }
                c if (0x80..0xa0).contains(&(c as u32))
                    || matches!(c as u32, 0x200e | 0x200f | 0x2028 | 0x2029)
                    || (0x202a..=0x202e).contains(&(c as u32))
                    || (0x2066..=0x2069).contains(&(c as u32)) =>
                {
                    out.push_str(&format!("\\u{{{:x}}}", c as u32))
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

fn deny(rule: impl Into<String>, reason: String) -> Classification {
    Classification {
        disposition: Disposition::Deny,
        rule: rule.into(),
        reason,
        mode: None,
    }
}

fn approval(rule: impl Into<String>, reason: String) -> Classification {
    Classification {
        disposition: Disposition::ApprovalRequired,
        rule: rule.into(),
        reason,
        mode: None,
    }
}

/// `rel` is `p` or lies below it; or (when the change replaces or removes `rel`)
/// `rel` is an ancestor of `p`, so the change would take `p` with it.
fn touches(rel: &Path, p: &Path, kind: ChangeKind) -> bool {
    rel.starts_with(p) || (kind != ChangeKind::Added && p.starts_with(rel))
}

/// The `[changes]` lists compiled once, with the context: judge many entries
/// with [`Rules::classify`].
#[derive(Debug, Clone)]
pub struct Rules {
    ctx: Context,
    deny: Vec<(String, Pattern)>,
    discard: Vec<(String, Pattern)>,
    allow: Vec<(String, Pattern)>,
    approval: Vec<(String, Pattern)>,
    /// What is left of the bytes the checks of git's objects may inflate,
    /// shared by every entry these rules judge (see [`git_objects`]).
    inflate_budget: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

fn compile<'a>(prefix: &str, list: impl Iterator<Item = &'a str>) -> Vec<(String, Pattern)> {
    // The loader refuses bad patterns; one that slips through (a policy built by
    // hand) matches nothing rather than failing the whole apply.
    list.enumerate()
        .filter_map(|(i, p)| {
            Pattern::new(p)
                .ok()
                .map(|pat| (format!("{prefix}[{i}]"), pat))
        })
        .collect()
}

impl Rules {
    pub fn new(policy: &ChangesPolicy, ctx: Context) -> Rules {
        let mut approval = compile("builtin.approval", DEFAULT_APPROVAL.iter().copied());
        approval.extend(compile(
            "changes.approval",
            policy.approval.iter().map(String::as_str),
        ));
        // A case-insensitive work tree takes `.VSCODE/tasks.json` for
        // `.vscode/tasks.json`: what needs a person does in any case.
        // (`allow` and `discard` stay exact: they let more through.)
        let approval = approval
            .into_iter()
            .map(|(rule, p)| (rule, p.ignoring_case()))
            .collect();
        Rules {
            ctx,
            deny: compile("changes.deny", policy.deny.iter().map(String::as_str)),
            discard: compile("changes.discard", policy.discard.iter().map(String::as_str)),
            allow: compile("changes.allow", policy.allow.iter().map(String::as_str)),
            approval,
            inflate_budget: std::sync::Arc::new(std::sync::atomic::AtomicU64::new(
                git_objects::INFLATE_BUDGET_BYTES,
            )),
        }
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Judges one change. Pure: reads nothing but its arguments.
    pub fn classify(&self, entry: &Entry<'_>) -> Classification {
        self.classify_with(entry, &NoView)
    }

    /// [`Rules::classify`], with `view` showing the workspace the change set
    /// leaves: a symlink is judged by where its target resolves there (not
    /// only lexically) and as strictly as that target; a directory the set
    /// makes look like a git repository, and a `.git/index` whose entries
    /// name git's own files, are caught.
    /// The entries of a run's index that the host's index does not hold as
    /// they are (new paths, or other objects at a path): the user's `git
    /// restore .` or `git checkout` writes them into the work tree, so each
    /// is judged as that write, and one the rules hold holds the index.
    /// (A sandbox could stage a workflow or a hook manager's config and
    /// delete it from the work tree: no change there, yet on the host.)
    fn staged_writes(
        &self,
        staged: &[git_index::Staged],
        view: &dyn View,
        shown: &str,
    ) -> Option<Classification> {
        let host: std::collections::HashSet<git_index::Staged> = view
            .read_host(Path::new(".git/index"), GIT_INDEX_MAX_BYTES)
            .and_then(|d| git_index::entries(&d).ok())
            .unwrap_or_default()
            .into_iter()
            .collect();
        let new: Vec<(PathBuf, &git_index::Staged)> = staged
            .iter()
            .filter(|s| !host.contains(*s))
            .map(|s| (PathBuf::from(std::ffi::OsStr::from_bytes(&s.path)), s))
            .collect();
        // Each judged beside the others, as `git checkout` writes them together.
        let grown = WithWrites::new(view, new.iter().map(|(p, _)| p.as_path()));
        for (path, s) in &new {
            // A symlink git creates is judged as one: where it leads. (A
            // `HEAD` that is a symlink to `refs/heads/x` is one git accepts:
            // the name is held first.)
            if s.mode & 0o170000 == 0o120000
                && matches!(s.objects.len(), 20 | 32)
                && git_dir_maker(path).is_none()
            {
                let target =
                    git_objects::staged_link_target(view, &s.objects, &self.inflate_budget);
                if let Some((disposition, why)) = self.held_link(path, target.as_deref(), &grown) {
                    let reason = format!(
                        "`{shown}` stages the symlink `{}`, which the user's `git restore .` or `git checkout` would create in the work tree: {why}",
                        escape_path(path)
                    );
                    return Some(match disposition {
                        Disposition::Deny => {
                            deny("builtin.git_index", format!("{reason}; nothing allows it"))
                        }
                        _ => approval(
                            "builtin.git_index",
                            format!("{reason}; a person must approve it"),
                        ),
                    });
                }
                continue;
            }
            let why = if let Some(why) = git_dir_maker(path) {
                Some(why.to_string())
            } else {
                // The work tree holding that very content already (judged
                // itself, or the host's) is what restoring it writes.
                let same = matches!(s.objects.len(), 20 | 32)
                    && view
                        .read(path, GIT_INDEX_MAX_BYTES)
                        .is_some_and(|d| git_objects::blob_name(&d, s.objects.len()) == s.objects);
                self.held_write(path, EntryType::File, &grown)
                    .filter(|_| !same)
            };
            if let Some(why) = why {
                return Some(approval(
                    "builtin.git_index",
                    format!(
                        "`{shown}` stages `{}`, which the user's `git restore .` or `git checkout` would write into the work tree, where a change is held ({why}); a person must approve it",
                        escape_path(path)
                    ),
                ));
            }
        }
        None
    }

    /// A symlink at `rel` stands in for a directory: a host tool looking up a
    /// name below it (git reading `.config/git/config`) reads what the link
    /// leads to, which was judged under its own path. So a link whose path
    /// leads towards a name the rules protect, deny or hold is judged as that
    /// name would be, whatever it points at now (its target could be filled
    /// later).
    fn held_below_link(&self, rel: &Path, shown: &str) -> Option<Classification> {
        let ctx = &self.ctx;
        if let Some(p) = ctx
            .airlock_owned
            .iter()
            .chain(&ctx.protect)
            .find(|p| p.starts_with(rel) && *p != rel)
        {
            return Some(deny(
                "builtin.symlink_parent",
                format!(
                    "`{shown}` is a symlink where `{}`, which a run may not change (airlock's own file or workspace.protect), would be looked up through it; nothing allows it",
                    escape_path(p)
                ),
            ));
        }
        if let Some(n) = ctx
            .host_named
            .iter()
            .find(|n| n.path.starts_with(rel) && n.path != rel)
        {
            let what = match n.tool {
                NamedBy::Git => "which host git runs or reads",
                NamedBy::Direnv => "which the host's `.envrc` puts on PATH or loads",
            };
            return Some(approval(
                n.tool.rule(),
                format!(
                    "`{shown}` is a symlink through which `{}` would be reached, {what} ({}); a person must approve it, or make it a directory",
                    escape_path(&n.path),
                    n.by
                ),
            ));
        }
        let below = |list: &[(String, Pattern)]| {
            list.iter()
                .find(|(_, p)| !p.matches(rel) && p.may_match_below(rel))
                .map(|(rule, p)| (rule.clone(), p.as_str().to_string()))
        };
        if let Some((rule, p)) = below(&self.deny) {
            return Some(deny(
                rule,
                format!("`{shown}` is a symlink through which names matching `{p}` in [changes] deny would be reached; nothing allows it, make it a directory"),
            ));
        }
        let (rule, p) = below(&self.approval)?;
        Some(approval(
            rule,
            format!("`{shown}` is a symlink through which names matching `{p}` would be reached, which host tools execute or obey; a person must approve it, or make it a directory"),
        ))
    }

    /// Why the rules hold a new `file_type` at `path` (host git writing it
    /// there from an index or a commit), or `None` where they allow it.
    fn held_write(&self, path: &Path, file_type: EntryType, view: &dyn View) -> Option<String> {
        let c = self.classify_with(
            &Entry::written(path, ChangeKind::Added, file_type),
            &NoIndexView(view),
        );
        matches!(
            c.disposition,
            Disposition::Deny | Disposition::ApprovalRequired
        )
        .then_some(c.reason)
    }

    /// Why the rules refuse or hold a symlink that host git would create at
    /// `path` with `target` (from a tree or an index entry of mode 120000):
    /// judged as the same link in the work tree would be (a target outside
    /// the workspace is denied, one into a held path held), unless the work
    /// tree has that very link. A target that could not be read (`None`)
    /// needs a person.
    fn held_link(
        &self,
        path: &Path,
        target: Option<&[u8]>,
        view: &dyn View,
    ) -> Option<(Disposition, String)> {
        let Some(target) = target else {
            return Some((
                Disposition::ApprovalRequired,
                format!("its target cannot be read from git's objects (larger than {} bytes, or not found)", git_objects::LINK_MAX_BYTES),
            ));
        };
        let target = Path::new(std::ffi::OsStr::from_bytes(target));
        if view.link(path).is_some_and(|t| t == target) {
            return None;
        }
        let c = self.classify_with(
            &Entry {
                symlink_target: Some(target),
                ..Entry::written(path, ChangeKind::Added, EntryType::Symlink)
            },
            &NoIndexView(view),
        );
        matches!(
            c.disposition,
            Disposition::Deny | Disposition::ApprovalRequired
        )
        .then_some((c.disposition, c.reason))
    }

    /// A loose object the run wrote: refused unless it is the object its name
    /// says; if a commit, the files its new trees name, each
    /// judged as the work-tree write `git reset --hard` or `git checkout`
    /// makes of it, unless the resulting work tree holds that very content
    /// already (see [`git_objects`]).
    fn committed_writes(&self, rel: &Path, view: &dyn View, shown: &str) -> Option<Classification> {
        use git_objects::Written;
        let (blobs, trees, links) = match git_objects::written(view, rel, &self.inflate_budget) {
            Written::Nothing => return None,
            Written::Forged => {
                return Some(deny(
                    "builtin.git_objects",
                    format!("`{shown}` is a loose object whose content is not the object its name says; host git reads an object by its name without checking it, and would take this for the one named (the host's, where it has one: a tree of `HEAD` replaced this way is what `git reset --hard` writes); nothing allows it"),
                ))
            }
            Written::Unreadable(why) => {
                return Some(approval(
                    "builtin.git_commit",
                    format!("`{shown}` is a commit the run wrote that cannot be read to check the files it would have git write ({why}); a person must approve it"),
                ))
            }
            Written::Files {
                blobs,
                trees,
                links,
            } => (blobs, trees, links),
        };
        // Each judged in the work tree the commit produces: beside the
        // others it writes (a bare repository's `HEAD`, `objects`, `refs`
        // and `config`, none of them held alone).
        let grown = WithWrites::new(
            view,
            blobs
                .iter()
                .map(|(p, _)| p.as_path())
                .chain(trees.iter().map(PathBuf::as_path)),
        );
        let held = |path: &Path, file_type: EntryType| {
            // Git refuses to write such a name from a tree.
            if !git_index::path_ok(path.as_os_str().as_bytes()) {
                return None;
            }
            match git_dir_maker(path) {
                Some(why) if file_type == EntryType::File => Some(why.to_string()),
                _ => self.held_write(path, file_type, &grown),
            }
        };
        // A symlink git creates is judged as one: where it leads.
        for (path, target) in &links {
            if !git_index::path_ok(path.as_os_str().as_bytes()) {
                continue;
            }
            if let Some((disposition, why)) = self.held_link(path, target.as_deref(), &grown) {
                let reason = format!(
                    "`{shown}` is a commit that puts the symlink `{}` into its tree, which the user's `git reset --hard` or `git checkout` would create in the work tree: {why}",
                    escape_path(path)
                );
                return Some(match disposition {
                    Disposition::Deny => deny("builtin.git_commit", format!("{reason}; nothing allows it")),
                    _ => approval("builtin.git_commit", format!("{reason}; a person must approve it (`git log -p` shows the commit once applied)")),
                });
            }
        }
        let found = blobs
            .iter()
            .filter_map(|(path, oid)| {
                let why = held(path, EntryType::File)?;
                let same = view
                    .read(path, GIT_INDEX_MAX_BYTES)
                    .is_some_and(|d| git_objects::blob_name(&d, oid.len()) == *oid);
                (!same).then_some((path, why))
            })
            .chain(trees.iter().filter_map(|dir| {
                let why = held(dir, EntryType::Dir)?;
                (!view.exists(dir)).then_some((dir, why))
            }))
            .next();
        let (path, why) = found?;
        Some(approval(
            "builtin.git_commit",
            format!(
                "`{shown}` is a commit that puts `{}` into its tree, which the user's `git reset --hard` or `git checkout` would write into the work tree, where a change is held ({why}); a person must approve it (`git log -p` shows the commit once applied)",
                escape_path(path)
            ),
        ))
    }

    pub fn classify_with(&self, entry: &Entry<'_>, view: &dyn View) -> Classification {
        let links = |p: &Path| view.link(p);
        let ctx = &self.ctx;
        let rel = entry.rel;
        let shown = escape_path(rel);
        if rel.as_os_str().is_empty()
            || rel.components().any(|c| !matches!(c, Component::Normal(_)))
        {
            return deny(
                "builtin.path",
                format!("`{shown}` is not a plain path inside the workspace; nothing allows it"),
            );
        }
        // 1. airlock's own files, then workspace.protect.
        if let Some(owned) = &ctx.root_owned {
            return deny(
                "builtin.airlock_owned",
                format!(
                    "`{shown}` would change a file in `{}`, which airlock owns (the workspace root lies inside it): a run may never write there; run airlock from a workspace outside airlock's state directory",
                    escape_path(owned)
                ),
            );
        }
        for owned in &ctx.airlock_owned {
            if touches(rel, owned, entry.kind) {
                return deny(
                    "builtin.airlock_owned",
                    format!(
                        "`{shown}` would change `{}`, which airlock owns (policy, tokens or state); a run may never write it, edit it on the host instead",
                        escape_path(owned)
                    ),
                );
            }
        }
        for (i, p) in ctx.protect.iter().enumerate() {
            if touches(rel, p, entry.kind) {
                return deny(
                    format!("workspace.protect[{i}]"),
                    format!(
                        "`{shown}` would change the protected path `{}` (workspace.protect); remove it from `protect` to allow",
                        escape_path(p)
                    ),
                );
            }
        }
        // A policy file by the name airlock looks for (`airlock.toml` in the
        // working directory) would rule the next run, even where none exists yet.
        if rel.file_name().map(|n| n.as_bytes()) == Some(POLICY_FILE_NAME.as_bytes()) {
            return deny(
                "builtin.policy_file",
                format!("`{shown}` is named like a policy file ({POLICY_FILE_NAME}), which the next run would obey; a run may never write one, edit it on the host instead"),
            );
        }
        // 2. [changes] deny.
        if let Some((rule, p)) = self.deny.iter().find(|(_, p)| p.matches(rel)) {
            return deny(
                rule.clone(),
                format!(
                    "`{shown}` matches `{}` in [changes] deny; remove it from that list to allow",
                    p.as_str()
                ),
            );
        }
        // 3. What the entry is.
        if entry.kind != ChangeKind::Deleted {
            match entry.file_type {
                EntryType::Fifo
                | EntryType::Socket
                | EntryType::CharDevice
                | EntryType::BlockDevice => {
                    return deny(
                        "builtin.special_file",
                        format!(
                            "`{shown}` is a {}; special files are never copied to the host (nothing allows it)",
                            entry.file_type.as_str()
                        ),
                    );
                }
                EntryType::Symlink => {
                    if let Some(held) = self.held_below_link(rel, &shown) {
                        return held;
                    }
                    let target = entry.symlink_target.unwrap_or(Path::new(""));
                    let resolved = if target_inside(rel, target, &ctx.root) {
                        resolve_target(rel, target, &ctx.root, &links)
                    } else {
                        None
                    };
                    let Some(resolved) = resolved else {
                        return deny(
                            "builtin.symlink_out",
                            format!(
                                "`{shown}` is a symlink to `{}`, which resolves outside the workspace; nothing allows it, copy the file instead",
                                escape_path(target)
                            ),
                        );
                    };
                    // Host git writes files inside .git in place (COMMIT_EDITMSG,
                    // logs): through a link there it would write wherever it leads.
                    if inside_git_dir(rel) {
                        return deny(
                            "builtin.git_symlink",
                            format!(
                                "`{shown}` is a symlink inside a `.git` directory (to `{}`), through which host git would write another file; nothing allows it",
                                escape_path(target)
                            ),
                        );
                    }
                    // What is written through the link lands on its target: the
                    // link is judged as strictly as a change of the target.
                    if !resolved.as_os_str().is_empty() {
                        let as_target =
                            Entry::written(&resolved, ChangeKind::Modified, EntryType::File);
                        let t = self.classify_with(&as_target, &NoIndexView(view));
                        if matches!(
                            t.disposition,
                            Disposition::Deny | Disposition::ApprovalRequired
                        ) {
                            let reason = format!(
                                "`{shown}` is a symlink to `{}`, and a change there is refused: {}",
                                escape_path(&resolved),
                                t.reason
                            );
                            return Classification {
                                disposition: t.disposition,
                                rule: t.rule,
                                reason,
                                mode: None,
                            };
                        }
                    }
                }
                _ => {}
            }
            // An index that lists git's own files writes them on `git restore .`.
            if is_top_git_index(rel) && entry.file_type == EntryType::File {
                match view
                    .read(rel, GIT_INDEX_MAX_BYTES)
                    .map(|d| git_index::entries(&d))
                {
                    Some(Ok(staged)) => {
                        if let Some(held) = self.staged_writes(&staged, view, &shown) {
                            return held;
                        }
                    }
                    Some(Err(p @ git_index::IndexProblem::BadPath(_))) => {
                        return deny(
                            "builtin.git_index",
                            format!("`{shown}` {p}; nothing allows it"),
                        );
                    }
                    Some(Err(p @ git_index::IndexProblem::Unreadable(_))) => {
                        return approval(
                            "builtin.git_index",
                            format!("`{shown}` {p}; a person must approve it"),
                        );
                    }
                    None => {
                        return approval(
                            "builtin.git_index",
                            format!("`{shown}` could not be read to check the paths it lists (larger than {GIT_INDEX_MAX_BYTES} bytes, or gone); a person must approve it"),
                        );
                    }
                }
            }
            // What changes which object a name stands for.
            if let Some(held) = object_store_write(rel, entry.file_type, view, &shown) {
                return held;
            }
            // A commit the run wrote: `git reset --hard` writes its tree.
            if entry.file_type == EntryType::File {
                if let Some(held) = self.committed_writes(rel, view, &shown) {
                    return held;
                }
            }
        }
        // 4. Discard.
        if let Some((rule, p)) = self.discard.iter().find(|(_, p)| p.matches(rel)) {
            return Classification {
                disposition: Disposition::Discard,
                rule: rule.clone(),
                reason: format!(
                    "`{shown}` matches `{}` in [changes] discard (a cache)",
                    p.as_str()
                ),
                mode: None,
            };
        }
        let set_id = entry.kind != ChangeKind::Deleted
            && entry.file_type != EntryType::Symlink
            && entry.mode & 0o7000 != 0;
        let allowed = Classification {
            disposition: Disposition::Allow,
            rule: if set_id {
                "builtin.mode".into()
            } else {
                String::new()
            },
            reason: if set_id {
                format!(
                    "`{shown}` had mode {:04o}: set-uid, set-gid and sticky bits are stripped on the way to the host",
                    entry.mode & 0o7777
                )
            } else {
                String::new()
            },
            mode: (entry.kind != ChangeKind::Deleted && entry.file_type != EntryType::Symlink)
                .then(|| normal_mode(entry)),
        };
        // 5. [changes] allow.
        if let Some((rule, _)) = self.allow.iter().find(|(_, p)| p.matches(rel)) {
            return Classification {
                rule: rule.clone(),
                ..allowed
            };
        }
        // 6. Host-executable metadata, and what host git cannot rebuild.
        // An entry of another type in its place removes the host's as a
        // deletion does (a directory with its whole tree).
        let removes = match entry.kind {
            ChangeKind::Deleted => Some("deleting"),
            _ if entry.host_type.is_some_and(|t| t != entry.file_type) => Some("replacing"),
            _ => None,
        };
        if let Some(verb) = removes {
            if let Some(what) = git_history(rel) {
                return approval(
                    "builtin.git_history",
                    format!(
                        "{verb} `{shown}` removes {what}, which host git cannot rebuild (commits that were never pushed are lost); a person must approve it, or add a pattern for it to [changes] allow"
                    ),
                );
            }
            if let Some(git) = view.nested_git(rel) {
                return approval(
                    "builtin.git_history",
                    format!(
                        "{verb} `{shown}` removes the repository at `{}` with all its history, which host git cannot rebuild (commits that were never pushed are lost); a person must approve it, or add a pattern for it to [changes] allow",
                        escape_path(&git)
                    ),
                );
            }
        }
        if let Some(why) = git_metadata(rel) {
            return approval(
                "builtin.git_metadata",
                format!(
                    "`{shown}` {why}, which host git reads and may execute (hooks, core.fsmonitor, gitdir); a person must approve it, or add a pattern for it to [changes] allow"
                ),
            );
        }
        if entry.kind != ChangeKind::Deleted {
            if let Some(n) = ctx
                .host_named
                .iter()
                .find(|n| rel == n.path || (n.dir && rel.starts_with(&n.path)))
            {
                let what = if n.path.as_os_str().is_empty() {
                    "in the workspace, all of which"
                } else if n.dir && rel != n.path {
                    "in a directory"
                } else {
                    "a file"
                };
                return approval(
                    n.tool.rule(),
                    format!(
                        "`{shown}` is {what} {}; a person must approve it, or add a pattern for it to [changes] allow",
                        n.tool.says(&n.by)
                    ),
                );
            }
            if let Some(dir) = makes_git_dir(rel, view) {
                let d = if dir.as_os_str().is_empty() {
                    "the workspace root".to_string()
                } else {
                    format!("`{}`", escape_path(&dir))
                };
                return approval(
                    "builtin.git_dir_lookalike",
                    format!(
                        "`{shown}` is part of {d}, which would look like a git repository to host git (a HEAD with objects and refs, or a commondir): git run there obeys its config and hooks; a person must approve it, or add a pattern for it to [changes] allow"
                    ),
                );
            }
        }
        if let Some((rule, p)) = self.approval.iter().find(|(_, p)| p.matches(rel)) {
            return approval(
                rule.clone(),
                format!(
                    "`{shown}` matches `{}` ({rule}): a file that a tool on the host executes or obeys; a person must approve it, or add a pattern for it to [changes] allow",
                    p.as_str()
                ),
            );
        }
        if ctx.root_is_home && rel.starts_with("bin") {
            return approval(
                "builtin.home_bin",
                format!(
                    "`{shown}` is in `bin/` of a workspace that is the user's home directory, which the login shell puts on PATH before /usr/bin (a `bin/git` there runs at the next `git`); a person must approve it, or add a pattern for it to [changes] allow"
                ),
            );
        }
        if entry.kind != ChangeKind::Deleted
            && entry.file_type == EntryType::File
            && rel.file_name().is_some_and(|n| n == "package.json")
        {
            if let Some(why) = package_json::hooks_changed(rel, view) {
                return approval(
                    "builtin.package_json_hooks",
                    format!(
                        "`{shown}` {why}: the git hooks a hook manager installed (husky, yorkie, simple-git-hooks, lint-staged, pre-commit) read them and run their commands at the user's next `git commit` or `git push`; a person must approve it, or add a pattern for it to [changes] allow"
                    ),
                );
            }
        }
        allowed
    }
}

/// Judges one change against `policy` in `ctx` (compiles the lists each call:
/// for many entries build [`Rules`] once). Pure.
pub fn classify(entry: &Entry<'_>, policy: &ChangesPolicy, ctx: &Context) -> Classification {
    Rules::new(policy, ctx.clone()).classify(entry)
}

/// The permission bits an allowed entry gets on the host.
pub fn normal_mode(entry: &Entry<'_>) -> u32 {
    let mut mode = entry.mode & 0o777;
    let host_world_writable = entry.host_mode.is_some_and(|m| m & 0o002 != 0);
    if !host_world_writable {
        mode &= !0o002;
    }
    mode
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    fn ctx() -> Context {
        Context::new(
            Path::new("/w"),
            &[
                PathBuf::from("/w/airlock.toml"),
                PathBuf::from("/w/.airlock-state"),
                PathBuf::from("/elsewhere/tokens"),
            ],
            &[PathBuf::from(".git/hooks"), PathBuf::from(".git/config")],
        )
    }

    fn entry(rel: &str, kind: ChangeKind, t: EntryType) -> Entry<'_> {
        Entry {
            rel: Path::new(rel),
            kind,
            file_type: t,
            mode: 0o644,
            host_mode: None,
            host_type: None,
            symlink_target: None,
        }
    }

    fn judge(rel: &str) -> Disposition {
        classify(
            &entry(rel, ChangeKind::Added, EntryType::File),
            &ChangesPolicy::default(),
            &ctx(),
        )
        .disposition
    }

    #[test]
    fn ordinary_files_are_allowed() {
        assert_eq!(judge("src/main.py"), Disposition::Allow);
        assert_eq!(judge("README.md"), Disposition::Allow);
        assert_eq!(judge("a/.gitignore"), Disposition::Allow);
    }

    /// The root's `.envrc` on the host says `PATH_add bin`: a run that writes
    /// `bin/git` would be run at the user's next `git status` there.
    #[test]
    fn paths_the_hosts_envrc_names_are_held() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".envrc"), "PATH_add bin\ndotenv\nuse flake\n").unwrap();
        let ctx = Context::new(root, &[], &[]).with_host_config();
        let rules = Rules::new(&ChangesPolicy::default(), ctx);
        for rel in ["bin/git", "bin", ".env", "flake.nix"] {
            let c = rules.classify(&entry(rel, ChangeKind::Added, EntryType::File));
            assert_eq!(c.disposition, Disposition::ApprovalRequired, "{rel}");
            assert_eq!(c.rule, "builtin.envrc_named", "{rel}");
            assert!(
                c.reason.contains("PATH_add bin") || rel != "bin/git",
                "{}",
                c.reason
            );
        }
        for rel in ["binx/git", "src/bin/tool", "README.md"] {
            let c = rules.classify(&entry(rel, ChangeKind::Added, EntryType::File));
            assert_eq!(c.disposition, Disposition::Allow, "{rel}: {}", c.reason);
        }
        // Without the host's .envrc nothing is named.
        std::fs::remove_file(root.join(".envrc")).unwrap();
        let rules = Rules::new(
            &ChangesPolicy::default(),
            Context::new(root, &[], &[]).with_host_config(),
        );
        let c = rules.classify(&entry("bin/git", ChangeKind::Added, EntryType::File));
        assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
    }

    /// A directive whose path the reader cannot resolve may name any path:
    /// every change is held, and the reason says how to narrow it.
    #[test]
    fn an_envrc_path_behind_an_expansion_holds_every_change() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join(".envrc"),
            "PATH_add \"$(git rev-parse --show-toplevel)/tools\"\n",
        )
        .unwrap();
        let rules = Rules::new(
            &ChangesPolicy::default(),
            Context::new(root, &[], &[]).with_host_config(),
        );
        for rel in ["tools/git", "src/main.py", "README.md"] {
            let c = rules.classify(&entry(rel, ChangeKind::Added, EntryType::File));
            assert_eq!(c.disposition, Disposition::ApprovalRequired, "{rel}");
            assert_eq!(c.rule, "builtin.envrc_named", "{rel}");
            assert!(c.reason.contains("write the path out"), "{}", c.reason);
        }
        // Deleting is still judged as before: nothing is planted by it.
        let c = rules.classify(&entry("README.md", ChangeKind::Deleted, EntryType::File));
        assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
    }

    #[test]
    fn files_the_host_git_config_names_are_held() {
        let mut ctx = ctx();
        let named = |p: &str, dir: bool| HostNamed {
            path: p.into(),
            dir,
            by: "filter.s.clean in /w/.git/config".into(),
            tool: NamedBy::Git,
        };
        ctx.host_named = vec![named(".hooks", true), named("scripts/clean.sh", false)];
        let rules = Rules::new(&ChangesPolicy::default(), ctx);
        let judged = |rel: &str, kind: ChangeKind, t: EntryType| {
            let mut e = entry(rel, kind, t);
            e.symlink_target = Some(Path::new("elsewhere"));
            rules.classify(&e)
        };
        for rel in [".hooks/pre-commit", ".hooks", "scripts/clean.sh"] {
            let c = judged(rel, ChangeKind::Modified, EntryType::File);
            assert_eq!(c.disposition, Disposition::ApprovalRequired, "{rel}");
            assert_eq!(c.rule, "builtin.git_config_named", "{rel}");
            assert!(c.reason.contains("filter.s.clean"), "{}", c.reason);
        }
        // A symlink the named file would be reached through.
        let c = judged("scripts", ChangeKind::Added, EntryType::Symlink);
        assert_eq!(c.rule, "builtin.git_config_named", "{}", c.reason);
        // Neighbours, and deleting a named file, are not held.
        for (rel, kind) in [
            ("scripts/other.sh", ChangeKind::Added),
            (".hooksx", ChangeKind::Added),
            ("scripts/clean.sh", ChangeKind::Deleted),
        ] {
            let c = judged(rel, kind, EntryType::File);
            assert_eq!(c.disposition, Disposition::Allow, "{rel}: {}", c.reason);
        }
    }

    #[test]
    fn git_metadata_needs_a_person_except_the_safe_set() {
        for p in [
            ".git/objects/ab/cdef",
            ".git/refs/heads/main",
            ".git/logs/HEAD",
            ".git/ORIG_HEAD",
            ".git/FETCH_HEAD",
            ".git/COMMIT_EDITMSG",
            "sub/.git/objects/x",
        ] {
            assert_eq!(judge(p), Disposition::Allow, "{p}");
        }
        for p in [
            ".git/commondir",
            // Their entries are checked through a view; without one, unread.
            ".git/index",
            ".git/packed-refs",
            ".git/info/attributes",
            ".git/modules/lib/config",
            ".git/worktrees/w/gitdir",
            ".git/description",
            ".git",
            "sub/.git",
            "a/b/c/.git",
            "sub/.git/config",
            ".git/objects/x/.git/config",
            ".gitmodules",
            "sub/.envrc",
            ".bashrc",
            "home/.profile",
            ".vscode/settings.json",
            ".idea/workspace.xml",
            ".devcontainer/devcontainer.json",
            ".github/workflows/ci.yml",
            "pkg/.github/workflows/ci.yml",
            ".mcp.json",
            ".claude/settings.json",
            ".codex/config.toml",
            ".cursor/mcp.json",
            ".husky/pre-commit",
        ] {
            assert_eq!(judge(p), Disposition::ApprovalRequired, "{p}");
        }
        // Protected paths stay denied, as before.
        assert_eq!(judge(".git/config"), Disposition::Deny);
        assert_eq!(judge(".git/hooks/pre-commit"), Disposition::Deny);
    }

    /// On a case-insensitive work tree (or under NTFS's and HFS+'s name
    /// rules) `.GIT`, `.git.`, `git~1` are `.git`, and `.VSCODE` is
    /// `.vscode`: held as they are.
    #[test]
    fn other_spellings_of_git_and_held_names_are_held() {
        for p in [
            ".GIT/hooks/pre-commit",
            ".Git/config",
            ".GIT/objects/ab/cdef",
            ".git./config",
            ".git . /config",
            "git~1/config",
            "GIT~1/hooks/x",
            ".git::$INDEX_ALLOCATION/config",
            "sub/.g\u{200c}it/config",
            "sub/.GIT",
            ".VSCODE/tasks.json",
            ".Envrc",
            "x/.GitHub/workflows/ci.yml",
        ] {
            let c = classify(
                &entry(p, ChangeKind::Added, EntryType::File),
                &ChangesPolicy::default(),
                &ctx(),
            );
            assert_eq!(c.disposition, Disposition::ApprovalRequired, "{p}");
        }
        // Host git writes through a link inside `.git` in place: denied in
        // any spelling.
        let c = classify(
            &link(".GIT/COMMIT_EDITMSG", "config"),
            &ChangesPolicy::default(),
            &ctx(),
        );
        assert_eq!(c.disposition, Disposition::Deny, "{}", c.reason);
        for p in [
            ".gitignore",
            ".github2/x",
            "git/x",
            "legit/x",
            ".gitx/config",
        ] {
            assert_eq!(judge(p), Disposition::Allow, "{p}");
        }
    }

    /// A resulting workspace given as paths: `dir/` a directory, `link -> t`
    /// a symlink, anything else a file (with `.git/index` holding `index`).
    #[derive(Default)]
    struct MapView {
        paths: Vec<&'static str>,
        index: Vec<u8>,
        /// The host's `.git/index` before the change set.
        host_index: Vec<u8>,
        /// Regular files of the resulting workspace, with their contents.
        files: Vec<(String, Vec<u8>)>,
        /// Regular files of the host before the change set.
        host_files: Vec<(String, Vec<u8>)>,
    }

    impl View for MapView {
        fn link(&self, p: &Path) -> Option<PathBuf> {
            self.paths.iter().find_map(|e| {
                let (l, t) = e.split_once(" -> ")?;
                (Path::new(l) == p).then(|| PathBuf::from(t))
            })
        }
        fn exists(&self, p: &Path) -> bool {
            self.paths.iter().any(|e| {
                let name = e.split(" -> ").next().unwrap().trim_end_matches('/');
                Path::new(name) == p || Path::new(name).starts_with(p)
            }) || self.files.iter().any(|(f, _)| Path::new(f).starts_with(p))
        }
        fn read(&self, p: &Path, _max: usize) -> Option<Vec<u8>> {
            if let Some((_, d)) = self.files.iter().find(|(f, _)| Path::new(f) == p) {
                return Some(d.clone());
            }
            (p == Path::new(".git/index")).then(|| self.index.clone())
        }
        fn read_host(&self, p: &Path, _max: usize) -> Option<Vec<u8>> {
            if let Some((_, d)) = self.host_files.iter().find(|(f, _)| Path::new(f) == p) {
                return Some(d.clone());
            }
            (p == Path::new(".git/index") && !self.host_index.is_empty())
                .then(|| self.host_index.clone())
        }
    }

    /// A commit the run wrote writes its tree on `git reset --hard`: a file
    /// its new trees name that the rules hold holds the commit, unless the
    /// resulting work tree holds that very content.
    #[test]
    fn a_commit_naming_a_held_file_is_held_unless_the_work_tree_has_it() {
        use git_objects::tests::{loose, name_of, tree};
        let path_of = |oid: &[u8]| {
            let h = hex::encode(oid);
            format!(".git/objects/{}/{}", &h[..2], &h[2..])
        };
        let workflow = b"on: push\n".to_vec();
        let readme = b"hello\n".to_vec();
        let wf_tree = tree(&[("100644", "x.yml", &name_of("blob", &workflow))]);
        let gh_tree = tree(&[("40000", "workflows", &name_of("tree", &wf_tree))]);
        let root = tree(&[
            ("40000", ".github", &name_of("tree", &gh_tree)),
            ("100644", "README.md", &name_of("blob", &readme)),
        ]);
        let commit = format!(
            "tree {}\nauthor a <a@a> 0 +0000\ncommitter a <a@a> 0 +0000\n\nx\n",
            hex::encode(name_of("tree", &root))
        )
        .into_bytes();
        let commit_path = path_of(&name_of("commit", &commit));
        let objects = vec![
            (path_of(&name_of("tree", &wf_tree)), loose("tree", &wf_tree)),
            (path_of(&name_of("tree", &gh_tree)), loose("tree", &gh_tree)),
            (path_of(&name_of("tree", &root)), loose("tree", &root)),
            (commit_path.clone(), loose("commit", &commit)),
        ];
        let judge = |work_tree: Vec<(String, Vec<u8>)>| {
            let mut files = objects.clone();
            files.extend(work_tree);
            let view = MapView {
                files,
                ..MapView::default()
            };
            judge_in(
                &view,
                &entry(&commit_path, ChangeKind::Added, EntryType::File),
            )
        };
        // The work tree lacks the workflow: `git reset --hard` would write it.
        let c = judge(vec![("README.md".into(), readme.clone())]);
        assert_eq!(
            (c.disposition, c.rule.as_str()),
            (Disposition::ApprovalRequired, "builtin.git_commit"),
            "{}",
            c.reason
        );
        assert!(c.reason.contains(".github/workflows/x.yml"), "{}", c.reason);
        // Other content there: the same.
        let c = judge(vec![
            ("README.md".into(), readme.clone()),
            (".github/workflows/x.yml".into(), b"other".to_vec()),
        ]);
        assert_eq!(c.disposition, Disposition::ApprovalRequired, "{}", c.reason);
        // The work tree holds that very content (it went through the rules as
        // a work-tree change, or was there): an ordinary commit.
        let c = judge(vec![
            ("README.md".into(), b"changed".to_vec()),
            (".github/workflows/x.yml".into(), workflow.clone()),
        ]);
        assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
        // Not a commit, or not an object at all: nothing to read.
        let blob_path = path_of(&name_of("blob", &readme));
        let view = MapView {
            files: vec![(blob_path.clone(), loose("blob", &readme))],
            ..MapView::default()
        };
        let c = judge_in(
            &view,
            &entry(&blob_path, ChangeKind::Added, EntryType::File),
        );
        assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
        // A commit that is not zlib: a person.
        let view = MapView {
            files: vec![(commit_path.clone(), b"junk".to_vec())],
            ..MapView::default()
        };
        let c = judge_in(
            &view,
            &entry(&commit_path, ChangeKind::Added, EntryType::File),
        );
        assert_eq!(c.disposition, Disposition::ApprovalRequired, "{}", c.reason);
        // A pack is not read: a person.
        let c = judge_in(
            &MapView::default(),
            &entry(
                ".git/objects/pack/pack-1.pack",
                ChangeKind::Added,
                EntryType::File,
            ),
        );
        assert_eq!(
            (c.disposition, c.rule.as_str()),
            (Disposition::ApprovalRequired, "builtin.git_objects")
        );
    }

    /// The loose objects of a commit (no parent) whose tree holds `files`
    /// (path, mode, content), and the commit's path among them.
    fn commit_of(files: &[(&str, &str, &[u8])]) -> (String, Vec<(String, Vec<u8>)>) {
        use git_objects::tests::{loose, name_of};
        let path_of = |oid: &[u8]| {
            let h = hex::encode(oid);
            format!(".git/objects/{}/{}", &h[..2], &h[2..])
        };
        fn build(files: &[(&str, &str, &[u8])], out: &mut Vec<(Vec<u8>, Vec<u8>)>) -> Vec<u8> {
            use git_objects::tests::{name_of, tree};
            let mut names: Vec<&str> = files
                .iter()
                .map(|(p, _, _)| p.split('/').next().unwrap())
                .collect();
            names.sort();
            names.dedup();
            let mut entries: Vec<(String, String, Vec<u8>)> = Vec::new();
            for n in names {
                if let Some((_, mode, data)) = files.iter().find(|(p, _, _)| *p == n) {
                    let oid = name_of("blob", data);
                    out.push((oid.clone(), git_objects::tests::loose("blob", data)));
                    entries.push((mode.to_string(), n.to_string(), oid));
                } else {
                    let below: Vec<(&str, &str, &[u8])> = files
                        .iter()
                        .filter_map(|(p, m, d)| {
                            Some((p.strip_prefix(n)?.strip_prefix('/')?, *m, *d))
                        })
                        .collect();
                    let body = build(&below, out);
                    let oid = name_of("tree", &body);
                    out.push((oid.clone(), git_objects::tests::loose("tree", &body)));
                    entries.push(("40000".into(), n.to_string(), oid));
                }
            }
            let refs: Vec<(&str, &str, &[u8])> = entries
                .iter()
                .map(|(m, n, o)| (m.as_str(), n.as_str(), o.as_slice()))
                .collect();
            tree(&refs)
        }
        let mut objects = Vec::new();
        let root = build(files, &mut objects);
        let root_oid = name_of("tree", &root);
        objects.push((root_oid.clone(), loose("tree", &root)));
        let commit = format!(
            "tree {}\nauthor a <a@a> 0 +0000\ncommitter a <a@a> 0 +0000\n\nx\n",
            hex::encode(&root_oid)
        )
        .into_bytes();
        let commit_oid = name_of("commit", &commit);
        objects.push((commit_oid.clone(), loose("commit", &commit)));
        (
            path_of(&commit_oid),
            objects.into_iter().map(|(o, d)| (path_of(&o), d)).collect(),
        )
    }

    /// A commit that brings a directory looking like a repository (a bare
    /// one's `HEAD`, `objects`, `refs`, `config`) is held, though each of
    /// its files alone is an ordinary name: a `HEAD` or `commondir` outside
    /// `.git` by its name, the rest beside what the commit writes.
    #[test]
    fn a_commit_bringing_a_bare_repository_lookalike_is_held() {
        let judge = |files: &[(&str, &str, &[u8])], work_tree: &[&'static str]| {
            let (commit, objects) = commit_of(files);
            let view = MapView {
                paths: work_tree.to_vec(),
                files: objects,
                ..MapView::default()
            };
            judge_in(&view, &entry(&commit, ChangeKind::Added, EntryType::File))
        };
        let bare: &[(&str, &str, &[u8])] = &[
            ("fix/HEAD", "100644", b"ref: refs/heads/main\n"),
            (
                "fix/objects/info/alternates",
                "100644",
                b"../../.git/objects\n",
            ),
            ("fix/refs/heads/main", "100644", b"0123\n"),
            ("fix/config", "100644", b"[diff]\n\texternal = sh -c x\n"),
            ("README.md", "100644", b"hi\n"),
        ];
        let c = judge(bare, &["README.md"]);
        assert_eq!(
            (c.disposition, c.rule.as_str()),
            (Disposition::ApprovalRequired, "builtin.git_commit"),
            "{}",
            c.reason
        );
        assert!(c.reason.contains("`fix/"), "{}", c.reason);
        // `HEAD` there already (an earlier run's, allowed alone): the
        // commit's `objects` and `refs` beside it make the repository.
        let c = judge(&bare[1..], &["README.md", "fix/HEAD"]);
        assert_eq!(
            (c.disposition, c.rule.as_str()),
            (Disposition::ApprovalRequired, "builtin.git_commit"),
            "{}",
            c.reason
        );
        assert!(
            c.reason.contains("look like a git repository"),
            "{}",
            c.reason
        );
        // A worktree's admin directory: `commondir`.
        let c = judge(&[("w/commondir", "100644", b"../..\n")], &[]);
        assert_eq!(c.disposition, Disposition::ApprovalRequired, "{}", c.reason);
        // An ordinary project's `config/`, `objects/`, `refs/` pass.
        let c = judge(
            &[
                ("config/routes.rb", "100644", b"x"),
                ("src/objects/a.py", "100644", b"x"),
                ("src/refs/b.py", "100644", b"x"),
            ],
            &[],
        );
        assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
    }

    /// The same for an index: a staged `commondir`, and staged `objects`
    /// and `config` beside a `HEAD` the work tree has.
    #[test]
    fn an_index_staging_a_lookalikes_files_is_held() {
        use git_index::tests::index_v2;
        let judge = |names: &[&[u8]], work_tree: Vec<&'static str>| {
            let view = MapView {
                paths: work_tree,
                index: index_v2(names),
                ..MapView::default()
            };
            judge_in(
                &view,
                &entry(".git/index", ChangeKind::Modified, EntryType::File),
            )
        };
        let c = judge(
            &[b"README.md", b"fix/config", b"fix/objects/x"],
            vec!["fix/HEAD"],
        );
        assert_eq!(
            (c.disposition, c.rule.as_str()),
            (Disposition::ApprovalRequired, "builtin.git_index"),
            "{}",
            c.reason
        );
        let c = judge(&[b"README.md", b"w/commondir"], vec![]);
        assert_eq!(c.disposition, Disposition::ApprovalRequired, "{}", c.reason);
        // Git takes a symlink `HEAD` to `refs/heads/x` for a HEAD.
        let view = MapView {
            index: git_index::tests::index_v2_of(&[(0o120000, b"fix/HEAD", [0xab; 20])]),
            ..MapView::default()
        };
        let c = judge_in(
            &view,
            &entry(".git/index", ChangeKind::Modified, EntryType::File),
        );
        assert!(c.reason.contains("a `HEAD`"), "{}", c.reason);
        let c = judge(&[b"README.md", b"src/config", b"src/objects/x"], vec![]);
        assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
    }

    /// A symlink in a run's commit or index is judged as the link git
    /// creates: out of the workspace denied, into a held or protected path
    /// as that path, its target unreadable held.
    #[test]
    fn committed_and_staged_symlinks_are_judged_as_symlinks() {
        use git_index::tests::index_v2_of;
        use git_objects::tests::{loose, name_of};
        let by_commit = |target: &[u8], work_tree: Vec<&'static str>| {
            let (commit, objects) = commit_of(&[
                ("README.md", "100644", b"hi\n"),
                ("notes", "120000", target),
            ]);
            let view = MapView {
                paths: work_tree,
                files: objects,
                ..MapView::default()
            };
            judge_in(&view, &entry(&commit, ChangeKind::Added, EntryType::File))
        };
        let by_index = |target: &[u8], stored: bool| {
            let oid = name_of("blob", target);
            let h = hex::encode(&oid);
            let view = MapView {
                index: index_v2_of(&[
                    (0o100644, b"README.md", [0xab; 20]),
                    (0o120000, b"notes", oid.clone().try_into().unwrap()),
                ]),
                files: if stored {
                    vec![(
                        format!(".git/objects/{}/{}", &h[..2], &h[2..]),
                        loose("blob", target),
                    )]
                } else {
                    Vec::new()
                },
                ..MapView::default()
            };
            judge_in(
                &view,
                &entry(".git/index", ChangeKind::Modified, EntryType::File),
            )
        };
        for (target, want) in [
            (&b"/home/u/.ssh/authorized_keys"[..], Disposition::Deny),
            (b"../../etc/passwd", Disposition::Deny),
            (b".git/hooks", Disposition::Deny),
            (b".envrc", Disposition::ApprovalRequired),
            (b".github/workflows/x.yml", Disposition::ApprovalRequired),
            (b"README.md", Disposition::Allow),
        ] {
            let shown = String::from_utf8_lossy(target);
            let c = by_commit(target, vec!["README.md"]);
            assert_eq!(c.disposition, want, "commit {shown}: {}", c.reason);
            if want != Disposition::Allow {
                assert_eq!(c.rule, "builtin.git_commit", "{shown}");
                assert!(c.reason.contains("symlink `notes`"), "{}", c.reason);
            }
            let c = by_index(target, true);
            assert_eq!(c.disposition, want, "index {shown}: {}", c.reason);
            if want != Disposition::Allow {
                assert_eq!(c.rule, "builtin.git_index", "{shown}");
            }
        }
        // The work tree has that very link: nothing new.
        let c = by_commit(b"/etc/passwd", vec!["README.md", "notes -> /etc/passwd"]);
        assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
        // A target that cannot be read: a person.
        let c = by_index(b"README.md", false);
        assert_eq!(c.disposition, Disposition::ApprovalRequired, "{}", c.reason);
    }

    /// Host git reads an object by its name without checking it: a loose
    /// object must be the object its name says, and what makes a name stand
    /// for another object (replace refs, alternates, commit-graphs, pack
    /// indexes) needs a person.
    #[test]
    fn what_makes_a_name_stand_for_another_object_is_held() {
        use git_objects::tests::{loose, name_of, tree};
        let path_of = |oid: &[u8]| {
            let h = hex::encode(oid);
            format!(".git/objects/{}/{}", &h[..2], &h[2..])
        };
        let judge = |files: Vec<(String, Vec<u8>)>, host: Vec<(String, Vec<u8>)>, rel: &str| {
            let view = MapView {
                files,
                host_files: host,
                ..MapView::default()
            };
            judge_in(&view, &entry(rel, ChangeKind::Modified, EntryType::File))
        };
        // The host's tree, and one with an `.envrc` stored under its name.
        let readme = name_of("blob", b"hi\n");
        let honest = tree(&[("100644", "README", &readme)]);
        let evil = tree(&[
            ("100644", ".envrc", &name_of("blob", b"echo pwned\n")),
            ("100644", "README", &readme),
        ]);
        let at = path_of(&name_of("tree", &honest));
        let c = judge(vec![(at.clone(), loose("tree", &evil))], vec![], &at);
        assert_eq!(
            (c.disposition, c.rule.as_str()),
            (Disposition::Deny, "builtin.git_objects"),
            "{}",
            c.reason
        );
        // The object its name says (git freshening it) passes; so does a
        // new blob; garbage needs a person.
        let c = judge(vec![(at.clone(), loose("tree", &honest))], vec![], &at);
        assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
        let blob_at = path_of(&readme);
        let c = judge(
            vec![(blob_at.clone(), loose("blob", b"hi\n"))],
            vec![],
            &blob_at,
        );
        assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
        let c = judge(
            vec![(blob_at.clone(), b"not zlib".to_vec())],
            vec![],
            &blob_at,
        );
        assert_eq!(c.disposition, Disposition::ApprovalRequired, "{}", c.reason);
        let mut trailing = loose("blob", b"hi\n");
        trailing.push(0);
        let c = judge(vec![(blob_at.clone(), trailing)], vec![], &blob_at);
        assert_eq!(c.disposition, Disposition::ApprovalRequired, "{}", c.reason);
        // Replace refs, alternates, commit-graphs and pack files: a person.
        for rel in [
            ".git/refs/replace/31418df53795275a494630ee06a6ad6abbf0989e",
            ".git/objects/info/alternates",
            ".git/objects/info/commit-graph",
            ".git/objects/info/commit-graphs/graph-1.graph",
            ".git/objects/pack/pack-1.idx",
            ".git/objects/pack/multi-pack-index",
        ] {
            let c = judge(vec![(rel.into(), b"x".to_vec())], vec![], rel);
            assert_eq!(
                (c.disposition, c.rule.as_str()),
                (Disposition::ApprovalRequired, "builtin.git_objects"),
                "{rel}: {}",
                c.reason
            );
        }
        // packed-refs: held when it gains a replace ref, not otherwise.
        let refs = "# pack-refs with: peeled fully-peeled sorted\n1111111111111111111111111111111111111111 refs/heads/main\n";
        let replace = format!("{refs}2222222222222222222222222222222222222222 refs/replace/3333333333333333333333333333333333333333\n");
        let p = ".git/packed-refs";
        let c = judge(vec![(p.into(), refs.into())], vec![], p);
        assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
        let c = judge(
            vec![(p.into(), replace.clone().into())],
            vec![(p.into(), refs.into())],
            p,
        );
        assert_eq!(c.disposition, Disposition::ApprovalRequired, "{}", c.reason);
        let c = judge(
            vec![(p.into(), replace.clone().into())],
            vec![(p.into(), replace.into())],
            p,
        );
        assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
        // HEAD: a branch or an object name passes; anything else makes the
        // host's repository unreadable to git (or hands it the parent's).
        for ok in [
            "ref: refs/heads/main\n",
            "ref: refs/heads/feature/x-1",
            "1111111111111111111111111111111111111111\n",
        ] {
            let c = judge(vec![(".git/HEAD".into(), ok.into())], vec![], ".git/HEAD");
            assert_eq!(c.disposition, Disposition::Allow, "{ok:?}: {}", c.reason);
        }
        for bad in [
            "x\n",
            "ref: HEAD\n",
            "ref: refs/heads/../../config\n",
            "ref: refs/\n",
            "11111111\n",
        ] {
            let c = judge(vec![(".git/HEAD".into(), bad.into())], vec![], ".git/HEAD");
            assert_eq!(
                (c.disposition, c.rule.as_str()),
                (Disposition::ApprovalRequired, "builtin.git_objects"),
                "{bad:?}: {}",
                c.reason
            );
        }
        // Deleting a replace ref puts the object back: allowed.
        let c = judge_in(
            &MapView::default(),
            &entry(
                ".git/refs/replace/31418df53795275a494630ee06a6ad6abbf0989e",
                ChangeKind::Deleted,
                EntryType::File,
            ),
        );
        assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
    }

    /// `git restore .` writes what the index stages: a staged file the rules
    /// hold in the work tree holds the index, unless the host's index stages
    /// it as it is.
    #[test]
    fn an_index_staging_a_held_file_is_held_unless_the_host_stages_it_too() {
        use git_index::tests::index_v2;
        let judge = |index: Vec<u8>, host_index: Vec<u8>| {
            let view = MapView {
                index,
                host_index,
                ..MapView::default()
            };
            judge_in(
                &view,
                &entry(".git/index", ChangeKind::Modified, EntryType::File),
            )
        };
        for held in [
            &b".github/workflows/x.yml"[..],
            b".envrc",
            b".husky/pre-commit",
            b"src/HEAD",
        ] {
            let c = judge(index_v2(&[b"README.md", held]), index_v2(&[b"README.md"]));
            assert_eq!(
                (c.disposition, c.rule.as_str()),
                (Disposition::ApprovalRequired, "builtin.git_index"),
                "{}",
                String::from_utf8_lossy(held)
            );
            assert!(c.reason.contains("git restore"), "{}", c.reason);
            // Staged as it is on the host already: nothing new is written.
            let same = index_v2(&[b"README.md", held]);
            let c = judge(same.clone(), same);
            assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
        }
        let c = judge(index_v2(&[b"README.md", b"src/x.py"]), Vec::new());
        assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
    }

    /// What an allowed `.envrc` or a hook manager's config pulls in, and
    /// what a home directory's PATH and shells start, are held as their
    /// configs are.
    #[test]
    fn files_that_trusted_configs_and_a_homes_path_run_are_held() {
        for p in [
            ".envrc.local",
            "sub/.envrc.private",
            ".direnv/python-3.12/bin/python",
            ".lefthook/pre-commit/lint.sh",
            ".lefthook-local/pre-push/x.sh",
            ".cargo/bin/git",
            ".bun/bin/git",
            ".deno/bin/git",
            ".volta/bin/node",
            ".pyenv/shims/python",
            ".asdf/shims/python",
            ".local/share/mise/shims/node",
            ".nix-profile/bin/git",
            ".bash_completion",
            ".local/share/bash-completion/completions/git",
        ] {
            assert_eq!(judge(p), Disposition::ApprovalRequired, "{p}");
        }
        // A project's own `bin/` and nested `.cargo/bin` are its business.
        for p in ["bin/tool", "crates/x/.cargo/bin/y", ".envrc-example"] {
            assert_eq!(judge(p), Disposition::Allow, "{p}");
        }
    }

    /// `bin/` is on the login PATH only as `~/bin`: held in a workspace that
    /// is the home directory, and only there.
    #[test]
    fn bin_is_held_only_when_the_workspace_is_home() {
        let judge_home = |home: Option<&str>, rel: &str| {
            let ctx = ctx().with_home(home.map(Path::new));
            classify(
                &entry(rel, ChangeKind::Added, EntryType::File),
                &ChangesPolicy::default(),
                &ctx,
            )
        };
        let c = judge_home(Some("/w"), "bin/git");
        assert_eq!(
            (c.disposition, c.rule.as_str()),
            (Disposition::ApprovalRequired, "builtin.home_bin")
        );
        assert!(c.reason.contains("home directory"), "{}", c.reason);
        assert_eq!(
            judge_home(Some("/w/"), "bin").disposition,
            Disposition::ApprovalRequired
        );
        for (home, rel) in [
            (Some("/home/u"), "bin/git"),
            (None, "bin/git"),
            (Some("/w"), "src/bin/git"),
            (Some("/w"), "binaries/x"),
        ] {
            assert_eq!(
                judge_home(home, rel).disposition,
                Disposition::Allow,
                "{home:?} {rel}"
            );
        }
    }

    /// A `package.json` is held when its hook-manager keys change against the
    /// host's, not for its dependencies or scripts.
    #[test]
    fn package_json_is_held_when_its_hook_keys_change() {
        let host = br#"{"name":"x","scripts":{"test":"jest"},"husky":{"hooks":{"pre-commit":"lint-staged"}},"lint-staged":{"*.js":"eslint"}}"#.to_vec();
        let judge = |rel: &str, now: &[u8], host: Option<&[u8]>| {
            let view = MapView {
                files: vec![(rel.to_string(), now.to_vec())],
                host_files: host
                    .map(|h| vec![(rel.to_string(), h.to_vec())])
                    .unwrap_or_default(),
                ..MapView::default()
            };
            judge_in(&view, &entry(rel, ChangeKind::Modified, EntryType::File))
        };
        // Ordinary edits, and the hook keys reordered or reformatted.
        for now in [
            &br#"{"name":"x","scripts":{"test":"vitest"},"dependencies":{"a":"1"},"husky":{"hooks":{"pre-commit":"lint-staged"}},"lint-staged":{"*.js":"eslint"}}"#[..],
            br#"{ "lint-staged": { "*.js": "eslint" }, "husky": { "hooks": { "pre-commit": "lint-staged" } }, "name": "y" }"#,
        ] {
            let c = judge("package.json", now, Some(&host));
            assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
        }
        let c = judge(
            "web/package.json",
            br#"{"name":"x","dependencies":{}}"#,
            None,
        );
        assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
        for (rel, now, host) in [
            ("package.json", &br#"{"name":"x","husky":{"hooks":{"pre-commit":"curl x|sh"}},"lint-staged":{"*.js":"eslint"}}"#[..], Some(&host[..])),
            ("package.json", br#"{"name":"x","husky":{"hooks":{"pre-commit":"lint-staged"}},"lint-staged":{"*.js":"sh -c evil"}}"#, Some(&host[..])),
            ("web/package.json", br#"{"gitHooks":{"pre-commit":"sh x"}}"#, None),
            ("package.json", br#"{"simple-git-hooks":{"pre-push":"sh x"}}"#, None),
            ("package.json", br#"{"pre-commit":["evil"]}"#, None),
            ("package.json", br#"{"pre-push":["evil"]}"#, None),
            // Not JSON (an editor's half-written file): cannot be compared.
            ("package.json", b"{ oops", Some(&host[..])),
        ] {
            let c = judge(rel, now, host);
            assert_eq!(
                (c.disposition, c.rule.as_str()),
                (Disposition::ApprovalRequired, "builtin.package_json_hooks"),
                "{}",
                String::from_utf8_lossy(now)
            );
        }
        // Unreadable (too large, gone): a person.
        let view = MapView::default();
        let c = judge_in(
            &view,
            &entry("package.json", ChangeKind::Modified, EntryType::File),
        );
        assert_eq!(c.disposition, Disposition::ApprovalRequired);
        // Deleting one runs nothing.
        let c = judge_in(
            &view,
            &entry("package.json", ChangeKind::Deleted, EntryType::File),
        );
        assert_eq!(c.disposition, Disposition::Allow);
    }

    fn judge_in(view: &MapView, e: &Entry<'_>) -> Classification {
        Rules::new(&ChangesPolicy::default(), ctx()).classify_with(e, view)
    }

    fn link<'a>(rel: &'a str, target: &'a str) -> Entry<'a> {
        Entry {
            symlink_target: Some(Path::new(target)),
            ..entry(rel, ChangeKind::Added, EntryType::Symlink)
        }
    }

    #[test]
    fn deleting_where_git_keeps_history_needs_a_person() {
        for p in [
            ".git/objects",
            ".git/objects/pack",
            ".git/refs",
            ".git/refs/heads",
            ".git/HEAD",
            ".git/packed-refs",
            ".git/logs",
            "vendor/lib/.git/objects",
        ] {
            let c = judge_in(
                &MapView::default(),
                &entry(p, ChangeKind::Deleted, EntryType::Dir),
            );
            assert_eq!(
                (c.disposition, c.rule.as_str()),
                (Disposition::ApprovalRequired, "builtin.git_history"),
                "{p}"
            );
        }
        // What gc, repack and branch -d delete stays allowed.
        for p in [
            ".git/objects/ab/cdef0123",
            ".git/objects/pack/pack-1.pack",
            ".git/refs/heads/topic",
            ".git/logs/refs/heads/topic",
        ] {
            let c = judge_in(
                &MapView::default(),
                &entry(p, ChangeKind::Deleted, EntryType::File),
            );
            assert_eq!(c.disposition, Disposition::Allow, "{p}: {}", c.reason);
        }
        // Writing them is ordinary git work.
        let c = judge_in(
            &MapView {
                files: vec![(".git/HEAD".into(), b"ref: refs/heads/main\n".to_vec())],
                ..Default::default()
            },
            &entry(".git/HEAD", ChangeKind::Modified, EntryType::File),
        );
        assert_eq!(c.disposition, Disposition::Allow, "{}", c.reason);
        // Another type in their place removes them as a deletion does: a
        // file where `.git/objects` was, a directory where HEAD was.
        for (p, was, now) in [
            (".git/objects", EntryType::Dir, EntryType::File),
            (".git/logs", EntryType::Dir, EntryType::File),
            (".git/HEAD", EntryType::File, EntryType::Dir),
        ] {
            let mut e = entry(p, ChangeKind::Modified, now);
            e.host_type = Some(was);
            let c = judge_in(&MapView::default(), &e);
            assert_eq!(
                (c.disposition, c.rule.as_str()),
                (Disposition::ApprovalRequired, "builtin.git_history"),
                "{p}"
            );
            assert!(c.reason.starts_with("replacing"), "{}", c.reason);
        }
    }

    #[test]
    fn a_symlink_inside_git_or_to_a_held_path_is_held_like_its_target() {
        let view = MapView {
            paths: vec![".git/config", "src/"],
            index: Vec::new(),
            host_index: Vec::new(),
            files: Vec::new(),
            host_files: Vec::new(),
        };
        // Host git writes COMMIT_EDITMSG in place: through the link, into config.
        let c = judge_in(&view, &link(".git/COMMIT_EDITMSG", "config"));
        assert_eq!(
            (c.disposition, c.rule.as_str()),
            (Disposition::Deny, "builtin.git_symlink")
        );
        let c = judge_in(&view, &link("notes", ".git/config"));
        assert_eq!(c.disposition, Disposition::Deny, "{c:?}");
        assert!(
            c.reason.contains("symlink to `.git/config`"),
            "{}",
            c.reason
        );
        for (l, t) in [
            ("h", ".git/hooks"),
            ("x", ".git/info/attributes"),
            ("e", ".envrc"),
        ] {
            let c = judge_in(&view, &link(l, t));
            assert_ne!(c.disposition, Disposition::Allow, "{l} -> {t}: {c:?}");
        }
        assert_eq!(
            judge_in(&view, &link("pol", "airlock.toml")).disposition,
            Disposition::Deny
        );
        // Links to ordinary files, and to the root, stay allowed.
        assert_eq!(
            judge_in(&view, &link("m", "src/main.rs")).disposition,
            Disposition::Allow
        );
        assert_eq!(
            judge_in(&view, &link("src/here", "..")).disposition,
            Disposition::Allow
        );
    }

    #[test]
    fn a_directory_made_to_look_like_a_git_repository_needs_a_person() {
        let bare = MapView {
            paths: vec![
                "src/HEAD",
                "src/objects/",
                "src/refs/heads/main",
                "src/config",
            ],
            index: Vec::new(),
            host_index: Vec::new(),
            files: Vec::new(),
            host_files: Vec::new(),
        };
        for p in [
            "src/config",
            "src/HEAD",
            "src/objects/info/alternates",
            "src/hooks/pre-commit",
        ] {
            let c = judge_in(&bare, &entry(p, ChangeKind::Added, EntryType::File));
            assert_eq!(
                (c.disposition, c.rule.as_str()),
                (Disposition::ApprovalRequired, "builtin.git_dir_lookalike"),
                "{p}"
            );
        }
        let worktree = MapView {
            paths: vec!["w/HEAD", "w/commondir"],
            index: Vec::new(),
            host_index: Vec::new(),
            files: Vec::new(),
            host_files: Vec::new(),
        };
        let c = judge_in(
            &worktree,
            &entry("w/commondir", ChangeKind::Added, EntryType::File),
        );
        assert_eq!(c.disposition, Disposition::ApprovalRequired);
        // A `config` directory or a `hooks` folder of an ordinary project is not one.
        let project = MapView {
            paths: vec!["config/routes.rb", "src/hooks/use.js", "src/objects/x.py"],
            index: Vec::new(),
            host_index: Vec::new(),
            files: Vec::new(),
            host_files: Vec::new(),
        };
        for p in ["config/routes.rb", "src/hooks/use.js", "src/objects/x.py"] {
            let c = judge_in(&project, &entry(p, ChangeKind::Modified, EntryType::File));
            assert_eq!(c.disposition, Disposition::Allow, "{p}: {c:?}");
        }
    }

    #[test]
    fn an_index_listing_gits_own_files_is_denied() {
        let e = entry(".git/index", ChangeKind::Modified, EntryType::File);
        let with = |names: &[&[u8]]| MapView {
            paths: vec![".git/index"],
            index: git_index::tests::index_v2(names),
            host_index: Vec::new(),
            files: Vec::new(),
            host_files: Vec::new(),
        };
        assert_eq!(
            judge_in(&with(&[b"a", b"src/b"]), &e).disposition,
            Disposition::Allow
        );
        let c = judge_in(&with(&[b"a", b".git/hooks/pre-commit"]), &e);
        assert_eq!(
            (c.disposition, c.rule.as_str()),
            (Disposition::Deny, "builtin.git_index")
        );
        assert!(c.reason.contains(".git/hooks/pre-commit"), "{}", c.reason);
        let junk = MapView {
            paths: vec![".git/index"],
            index: b"junk".to_vec(),
            host_index: Vec::new(),
            files: Vec::new(),
            host_files: Vec::new(),
        };
        assert_eq!(
            judge_in(&junk, &e).disposition,
            Disposition::ApprovalRequired
        );
    }

    #[test]
    fn airlock_owned_paths_are_always_denied_even_when_allowed() {
        let policy = ChangesPolicy {
            allow: vec!["**".into(), "airlock.toml".into()],
            ..ChangesPolicy::default()
        };
        for (p, kind) in [
            ("airlock.toml", ChangeKind::Modified),
            ("airlock.toml", ChangeKind::Deleted),
            (".airlock-state/tokens", ChangeKind::Added),
        ] {
            let c = classify(&entry(p, kind, EntryType::File), &policy, &ctx());
            assert_eq!(c.disposition, Disposition::Deny, "{p}");
            assert_eq!(c.rule, "builtin.airlock_owned");
            assert!(c.reason.contains(p), "{}", c.reason);
        }
        // Deleting the directory holding the policy file would delete it too.
        let c = classify(
            &entry("sub", ChangeKind::Deleted, EntryType::Dir),
            &policy,
            &Context::new(
                Path::new("/w"),
                &[PathBuf::from("/w/sub/airlock.toml")],
                &[],
            ),
        );
        assert_eq!(c.disposition, Disposition::Deny);
    }

    /// Finding 1 of the audit review: a workspace inside the state directory
    /// (or equal to it) is all airlock's own; no change there is applied,
    /// however the rules would judge it.
    #[test]
    fn a_root_inside_an_owned_path_owns_every_change() {
        let policy = ChangesPolicy {
            allow: vec!["**".into()],
            ..ChangesPolicy::default()
        };
        for root in ["/state/audit", "/state"] {
            let ctx = Context::new(Path::new(root), &[PathBuf::from("/state")], &[]);
            for (p, kind) in [
                ("audit-000001.jsonl", ChangeKind::Modified),
                ("head.json", ChangeKind::Modified),
                ("new.txt", ChangeKind::Added),
                ("ap-1.json", ChangeKind::Deleted),
            ] {
                let c = classify(&entry(p, kind, EntryType::File), &policy, &ctx);
                assert_eq!(c.disposition, Disposition::Deny, "{root} {p}");
                assert_eq!(c.rule, "builtin.airlock_owned");
                assert!(c.reason.contains("/state"), "{}", c.reason);
            }
        }
        // A sibling of the owned path is not inside it.
        let ctx = Context::new(Path::new("/state2"), &[PathBuf::from("/state")], &[]);
        let c = classify(
            &entry("x", ChangeKind::Added, EntryType::File),
            &policy,
            &ctx,
        );
        assert_ne!(c.disposition, Disposition::Deny);
    }

    #[test]
    fn special_files_symlinks_out_and_set_id_are_denied() {
        let p = ChangesPolicy::default();
        for t in [
            EntryType::Fifo,
            EntryType::Socket,
            EntryType::CharDevice,
            EntryType::BlockDevice,
        ] {
            let c = classify(&entry("x", ChangeKind::Added, t), &p, &ctx());
            assert_eq!(c.disposition, Disposition::Deny);
        }
        // Deleting a FIFO that was on the host is fine.
        let c = classify(
            &entry("x", ChangeKind::Deleted, EntryType::Fifo),
            &p,
            &ctx(),
        );
        assert_eq!(c.disposition, Disposition::Allow);
        for (rel, target, ok) in [
            ("src/a", "/root/.bashrc", false),
            ("src/a", "/", false),
            ("src/a", "/etc/shadow", false),
            ("src/a", "../../x", false),
            ("src/a", "../x", true),
            ("src/a", "b/../../c", true),
            ("src/a", "/w/src/b", true),
            ("src/a", "/wx/b", false),
            ("src/a", "", false),
        ] {
            let mut e = entry(rel, ChangeKind::Added, EntryType::Symlink);
            e.symlink_target = Some(Path::new(target));
            let c = classify(&e, &p, &ctx());
            let want = if ok {
                Disposition::Allow
            } else {
                Disposition::Deny
            };
            assert_eq!(c.disposition, want, "{rel} -> {target}: {}", c.reason);
        }
        let mut e = entry("bin/x", ChangeKind::Added, EntryType::File);
        e.mode = 0o4755;
        let c = classify(&e, &p, &ctx());
        assert_eq!((c.disposition, c.mode), (Disposition::Allow, Some(0o755)));
        assert!(c.reason.contains("4755"), "{}", c.reason);
        e.mode = 0o2755;
        assert_eq!(classify(&e, &p, &ctx()).mode, Some(0o755));
        assert_eq!(judge("sub/airlock.toml"), Disposition::Deny);
    }

    #[test]
    fn modes_are_normalised() {
        let p = ChangesPolicy::default();
        let mut e = entry("f", ChangeKind::Added, EntryType::File);
        e.mode = 0o666;
        assert_eq!(classify(&e, &p, &ctx()).mode, Some(0o664));
        e.host_mode = Some(0o666);
        assert_eq!(classify(&e, &p, &ctx()).mode, Some(0o666));
        let mut d = entry("d", ChangeKind::Added, EntryType::Dir);
        d.mode = 0o3777;
        assert_eq!(classify(&d, &p, &ctx()).mode, Some(0o775));
    }

    #[test]
    fn policy_lists_extend_and_override_the_defaults() {
        let p = ChangesPolicy {
            approval: vec!["Makefile".into()],
            allow: vec![".vscode/settings.json".into()],
            deny: vec!["secrets/".into()],
            discard: vec!["*.log".into()],
            ..ChangesPolicy::default()
        };
        let j = |rel: &str| {
            classify(&entry(rel, ChangeKind::Added, EntryType::File), &p, &ctx()).disposition
        };
        assert_eq!(j("Makefile"), Disposition::ApprovalRequired);
        assert_eq!(j(".vscode/settings.json"), Disposition::Allow);
        assert_eq!(j(".vscode/tasks.json"), Disposition::ApprovalRequired);
        assert_eq!(j("secrets/k"), Disposition::Deny);
        assert_eq!(j("a/b.log"), Disposition::Discard);
        // `discard` replaced the default list.
        assert_eq!(j("__pycache__/x.pyc"), Disposition::Allow);
        assert_eq!(judge("a/__pycache__/x.pyc"), Disposition::Discard);
        assert_eq!(judge(".pytest_cache/v"), Disposition::Discard);
    }

    /// A symlink stands in for a directory: one through which a held or
    /// refused name would be looked up is judged as that name; other links
    /// to directories (a package manager's) pass.
    #[test]
    fn a_symlink_leading_towards_a_held_name_is_judged_as_it() {
        let p = ChangesPolicy {
            deny: vec!["config/prod/".into()],
            ..ChangesPolicy::default()
        };
        let ctx = Context::new(
            Path::new("/w"),
            &[PathBuf::from("/w/airlock.toml")],
            &[PathBuf::from("secrets/key")],
        );
        let j = |rel: &str, target: &str| {
            let e = Entry {
                symlink_target: Some(Path::new(target)),
                ..entry(rel, ChangeKind::Added, EntryType::Symlink)
            };
            let c = classify(&e, &p, &ctx);
            (c.disposition, c.rule)
        };
        assert_eq!(j(".config", "cfg").0, Disposition::ApprovalRequired);
        assert_eq!(j(".github", "gh").0, Disposition::ApprovalRequired);
        assert_eq!(
            j("a/b/.github", "../../gh").0,
            Disposition::ApprovalRequired
        );
        assert_eq!(j(".cargo", "c").0, Disposition::ApprovalRequired);
        assert_eq!(j("config", "cfg").0, Disposition::Deny);
        assert_eq!(
            j("secrets", "s"),
            (Disposition::Deny, "builtin.symlink_parent".to_string())
        );
        for (rel, target) in [
            ("node_modules/pkg", "../packages/pkg"),
            ("node_modules/.bin/tool", "../pkg/cli.js"),
            ("cfg", "config2"),
            ("build", "."),
        ] {
            assert_eq!(j(rel, target).0, Disposition::Allow, "{rel}");
        }
    }

    #[test]
    fn reasons_name_the_path_the_rule_and_the_way_out() {
        let c = classify(
            &entry(".git/commondir", ChangeKind::Added, EntryType::File),
            &ChangesPolicy::default(),
            &ctx(),
        );
        assert_eq!(c.rule, "builtin.git_metadata");
        assert!(c.reason.contains(".git/commondir"), "{}", c.reason);
        assert!(c.reason.contains("[changes] allow"), "{}", c.reason);
    }

    #[test]
    fn escaping_is_lossless_and_inert() {
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(escape_bytes(b"a\nb"), "a\\nb");
        assert_eq!(escape_bytes(b"\x1b[2J"), "\\x1b[2J");
        assert_eq!(escape_bytes(b"\xff"), "\\xff");
        assert_eq!(escape_bytes(b"\\xff"), "\\\\xff");
        assert_ne!(escape_bytes(b"\xff"), escape_bytes(b"\xfe"));
        assert_eq!(escape_bytes("é\u{202e}".as_bytes()), "é\\u{202e}");
        let p = Path::new(OsStr::from_bytes(b"x/\xc3"));
        assert_eq!(escape_path(p), "x/\\xc3");
    }

    #[test]
    fn odd_paths_are_denied_not_panicked_on() {
        for p in ["", "/abs", "../up", "a/../b"] {
            assert_eq!(judge(p), Disposition::Deny, "{p:?}");
        }
    }

    #[test]
    fn link_targets_resolve_through_existing_and_new_links() {
        use std::collections::HashMap;
        let root = Path::new("/w");
        let view: HashMap<PathBuf, PathBuf> = [
            ("inner", "/etc"),
            ("up", "../.."),
            ("a", "b"),
            ("b", "c"),
            ("c", "/w/ok"),
            ("loop1", "loop2"),
            ("loop2", "loop1"),
            ("sub/rel", "../inner"),
        ]
        .into_iter()
        .map(|(k, v)| (PathBuf::from(k), PathBuf::from(v)))
        .collect();
        let links = |p: &Path| view.get(p).cloned();
        let inside =
            |rel: &str, t: &str| resolves_inside(Path::new(rel), Path::new(t), root, &links);
        // Lexically inside, out through a host link on the way.
        assert!(!inside("link", "inner/passwd"));
        assert!(!inside("d/link", "../inner/shadow"));
        assert!(!inside("link", "up/x"));
        assert!(!inside("link", "sub/rel/passwd"));
        // Chains of links that stay inside, and loops.
        assert!(inside("link", "a"));
        assert!(inside("link", "a/file"));
        assert!(!inside("link", "loop1"));
        assert!(inside("link", "src/main.py"));
        assert!(inside("d/link", "../src"));
        assert!(!inside("link", "/etc/passwd"));
        // The classifier denies them.
        let rules = Rules::new(&ChangesPolicy::default(), ctx());
        let e = Entry {
            symlink_target: Some(Path::new("inner/passwd")),
            ..entry("link", ChangeKind::Added, EntryType::Symlink)
        };
        assert_eq!(rules.classify(&e).disposition, Disposition::Allow);
        let c = rules.classify_with(&e, &links);
        assert_eq!(c.disposition, Disposition::Deny);
        assert_eq!(c.rule, "builtin.symlink_out");
    }
}
