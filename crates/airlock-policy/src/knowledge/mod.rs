//! The program knowledge base: what programs do with their options, as data.
//!
//! `programs.toml` (versioned, compiled in) says, per program and subcommand,
//! how its options are spelled (short letters that take a value, long options
//! and their unique-prefix abbreviations, synonyms) and which options or
//! arguments execute another program, delete, write or read a path, reach the
//! network or change where configuration comes from, and what the gate does
//! with each: judge the inner command, check a value as a path, or give
//! `approval_required`, `deny` or `on_unknown`. It also says which environment
//! variables, set before a program, change what it does. A policy extends it
//! with `[[knowledge.program]]` and `[[knowledge.env]]` tables of the same shape;
//! the policy's entries win over the built-in ones of the same name.
//!
//! Every segment's argv is normalised once ([`normalize`]): short clusters split
//! (`-Rf` is `-R -f`, and `-R` is `-r` for rm), attached values split off
//! (`-f/etc/shadow`, `-mpip`), `--long=value` split, unique prefixes of long
//! options expanded where the program accepts them (`--rec` is `--recursive`),
//! and `--` ends the options. Rules match that form, and effects are found in
//! it, in one pass over the words.

mod built;
// Generated (see built.rs); rustfmt would make it differ from what the
// generator writes, which a test compares byte for byte.
#[rustfmt::skip]
mod builtin_generated;
mod effects;
#[cfg(test)]
pub(crate) mod generate;
mod glob_options;
mod normalize;
pub mod scripts;

pub use effects::{apply, Applied, InnerRun};
pub use glob_options::glob_option;
pub use normalize::{normalize, Normalized, Word};

use crate::shell::Access;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// The built-in knowledge base's text.
pub const PROGRAMS_TOML: &str = include_str!("programs.toml");
/// Its name in messages.
pub const BUILTIN_KNOWLEDGE_ORIGIN: &str = "<built-in knowledge base>";
/// The version of the knowledge base's format this build reads.
pub const FORMAT_VERSION: i64 = 1;

/// A knowledge base's text: borrowed from the data compiled in for the
/// built-in base (no allocation at start-up, see built.rs), owned for a
/// policy's extension.
pub type Text = Cow<'static, str>;
/// A list of a knowledge base's items: borrowed from the compiled-in data
/// for the built-in base, owned for a policy's extension.
pub type List<T> = Cow<'static, [T]>;

/// What a program's option or argument does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Runs another program or code.
    Exec,
    Delete,
    Write,
    Read,
    Network,
    /// Changes where configuration (and so behaviour) comes from.
    Config,
    /// Runs code given inline to an interpreter (`python -c`).
    Code,
}

impl Kind {
    pub const ALL: [(&'static str, Kind); 7] = [
        ("exec", Kind::Exec),
        ("delete", Kind::Delete),
        ("write", Kind::Write),
        ("read", Kind::Read),
        ("network", Kind::Network),
        ("config", Kind::Config),
        ("code", Kind::Code),
    ];
    pub fn as_str(self) -> &'static str {
        Kind::ALL
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("exec", |(n, _)| n)
    }
}

/// What the gate does when an effect is present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing beyond the other fields (`inner`, `path`): the inner command or the
    /// path is judged on its own. Also documents what is allowed on purpose.
    Judge,
    ApprovalRequired,
    Deny,
    /// The policy's `on_unknown`.
    OnUnknown,
}

impl Action {
    pub const ALL: [(&'static str, Action); 4] = [
        ("judge", Action::Judge),
        ("approval_required", Action::ApprovalRequired),
        ("deny", Action::Deny),
        ("on_unknown", Action::OnUnknown),
    ];
}

/// How an effect's inner command is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InnerCommand {
    None,
    /// The option's value is shell text (`tar --to-command`, `git rebase --exec`).
    Shell,
    /// The option's value, split at white space, is an argv (`rsync -e 'ssh -p 2'`).
    Words,
    /// The value and every word after it (`python -m pip install x`).
    ValueAndRest,
}

impl InnerCommand {
    pub const ALL: [(&'static str, InnerCommand); 4] = [
        ("none", InnerCommand::None),
        ("shell", InnerCommand::Shell),
        ("words", InnerCommand::Words),
        ("value_and_rest", InnerCommand::ValueAndRest),
    ];
}

/// A script language whose text the gate reads for commands that run or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    Sed,
    Awk,
}

impl Script {
    pub const ALL: [(&'static str, Script); 2] = [("sed", Script::Sed), ("awk", Script::Awk)];
}

/// What triggers an effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// An option, by canonical key (`-x` or `--name`).
    Option(Text),
    /// The n-th positional argument after the program (and its subcommand).
    Argument(usize),
    /// Any positional argument (`make ... SHELL=x` wherever it stands).
    AnyArgument,
    /// The program (or subcommand) itself, with at least this many positionals.
    Always { min_args: usize },
}

/// One thing a program may do, and what the gate does about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Effect {
    pub trigger: Trigger,
    /// Only when the value starts with one of these (`*` suffix) or equals one.
    pub when: List<Text>,
    /// Only when each of these options is also present (canonical keys).
    pub requires: List<Text>,
    /// Not when any of these options is present (`sed --sandbox`).
    pub unless: List<Text>,
    pub kind: Kind,
    pub action: Action,
    /// Check the value as a path with this access.
    pub path: Option<Access>,
    pub inner: InnerCommand,
    /// Read the value as a script of this language.
    pub script: Option<Script>,
    pub reason: Text,
}

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    No,
    /// Attached (`--opt=v`, `-ov`) or the next word.
    Required,
    /// Only attached (`sed -i.bak`, `--in-place=.bak`).
    Optional,
    /// Every word up to `;` or `+` (`find -exec`).
    Command,
}

/// A long option (or a whole-word single-dash option, `find -name`).
#[derive(Debug, Clone, PartialEq)]
pub struct LongOption {
    /// Without the leading `--`; a single-dash whole word keeps its `-` (`-exec`).
    pub name: Text,
    /// `--name`, or `-name` for a single-dash word.
    pub key: Text,
    pub takes: Takes,
    /// The short letter it means (`--recursive` is `-r`).
    pub short: Option<char>,
}

/// What the knowledge base knows of one program, or of one of its subcommands.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgramEntry {
    pub names: List<Text>,
    pub subcommand: Option<Text>,
    /// Accepts unique prefixes of its long options (GNU getopt_long, git).
    pub abbreviations: bool,
    /// Its first positional argument is a subcommand with its own entry.
    pub subcommands: bool,
    /// The program's own options are also read after the subcommand (cargo).
    pub globals_anywhere: bool,
    /// Option processing stops at the first positional (`env`, `timeout`, `ssh`).
    pub options_first: bool,
    /// `tar czf x`: a first word without a dash is a cluster of short options.
    pub old_style: bool,
    /// Short letters that take a value (attached or the next word).
    pub short_values: List<char>,
    /// Short letters that take a value only when attached.
    pub short_optional: List<char>,
    /// After these options (and their values) every word is an argument (`python -c`).
    pub stop_after: List<Text>,
    /// Short letters that mean another (`R` = `r` for rm).
    pub synonyms: List<(char, char)>,
    /// `--name` options; those whose name starts with `-` are single-dash words (`-name`).
    pub long: List<LongOption>,
    pub effects: List<Effect>,
    pub about: Text,
    /// Where it was defined (`<built-in knowledge base>:12` or the policy file's place).
    pub origin: Text,
}

impl ProgramEntry {
    /// `tar`, or `git rebase`.
    pub fn title(&self) -> String {
        let name = self.names.first().map_or("", |n| &**n);
        match &self.subcommand {
            Some(s) => format!("{name} {s}"),
            None => name.to_string(),
        }
    }

    pub fn canonical_short(&self, c: char) -> char {
        self.synonyms
            .iter()
            .find(|(from, _)| *from == c)
            .map_or(c, |(_, to)| *to)
    }

    /// A `--long` option by exact name, or by unique prefix where the program
    /// accepts abbreviations. An ambiguous prefix is kept as written (the
    /// program refuses it).
    pub fn long_option(&self, name: &str) -> Option<&LongOption> {
        let double = || self.long.iter().filter(|o| !o.name.starts_with('-'));
        if let Some(o) = double().find(|o| o.name == name) {
            return Some(o);
        }
        let mut found = None;
        for o in double() {
            if self.abbreviations && !name.is_empty() && o.name.starts_with(name) {
                if found.is_some() {
                    return None;
                }
                found = Some(o);
            }
        }
        found
    }
}

/// What setting an environment variable before a program does.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvEntry {
    /// Exact names, or prefixes ending in `*` (`GIT_*`).
    pub names: List<Text>,
    pub kind: Kind,
    pub action: Action,
    pub reason: Text,
    pub origin: Text,
    /// The value is options of this program (`CFLAGS` of `gcc`): judged with
    /// its entry, as if written on its command line.
    pub options_of: Option<Text>,
}

/// A knowledge base: the built-in one, or a policy's extension.
#[derive(Debug, Clone, Default)]
pub struct Knowledge {
    pub version: i64,
    pub programs: List<ProgramEntry>,
    pub env: List<EnvEntry>,
    /// Files (by name, or by path under a home directory) that configure
    /// programs: writing one needs approval (`~/.gitconfig` can set
    /// core.fsmonitor, and the sandbox's HOME is where git looks).
    pub config_files: List<Text>,
    /// Program name → (subcommand, index in `programs`); the last definition
    /// wins. Looked up by `&str`, without allocating.
    index: HashMap<Text, Vec<(Option<Text>, usize)>>,
    /// Exact env names → index; prefixes are scanned (few).
    env_exact: HashMap<Text, usize>,
}

impl PartialEq for Knowledge {
    fn eq(&self, other: &Self) -> bool {
        self.version == other.version
            && self.programs == other.programs
            && self.env == other.env
            && self.config_files == other.config_files
    }
}

impl Knowledge {
    pub fn new(version: i64, programs: List<ProgramEntry>, env: List<EnvEntry>) -> Self {
        // Sized up front: growing the tables rehashes every key, a good part
        // of what building the built-in base costs.
        let names = programs.iter().map(|p| p.names.len()).sum();
        let mut index: HashMap<Text, Vec<(Option<Text>, usize)>> = HashMap::with_capacity(names);
        for (i, p) in programs.iter().enumerate() {
            for n in p.names.iter() {
                let subs = index.entry(n.clone()).or_default();
                subs.retain(|(s, _)| *s != p.subcommand);
                subs.push((p.subcommand.clone(), i));
            }
        }
        let mut env_exact = HashMap::with_capacity(env.iter().map(|e| e.names.len()).sum());
        for (i, e) in env.iter().enumerate() {
            for n in e.names.iter() {
                if !n.ends_with('*') {
                    env_exact.insert(n.clone(), i);
                }
            }
        }
        Knowledge {
            version,
            programs,
            env,
            config_files: List::default(),
            index,
            env_exact,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.programs.is_empty() && self.env.is_empty()
    }

    fn program(&self, name: &str, sub: Option<&str>) -> Option<&ProgramEntry> {
        self.index
            .get(name)?
            .iter()
            .find(|(s, _)| s.as_deref() == sub)
            .map(|&(_, i)| &self.programs[i])
    }

    fn env_entry(&self, name: &str) -> Option<&EnvEntry> {
        if let Some(&i) = self.env_exact.get(name) {
            return Some(&self.env[i]);
        }
        // The longest matching prefix.
        self.env
            .iter()
            .flat_map(|e| e.names.iter().map(move |n| (n, e)))
            .filter_map(|(n, e)| {
                let p = n.strip_suffix('*')?;
                name.starts_with(p).then_some((p.len(), e))
            })
            .max_by_key(|(len, _)| *len)
            .map(|(_, e)| e)
    }
}

/// The built-in knowledge base, made once per process from the data the
/// loader produced from [`PROGRAMS_TOML`] when airlock was built (30-40 µs,
/// against about 1.5 ms to parse the text).
///
/// There is no failure to fall back from at run time: a `programs.toml` that
/// does not load, or data that is not the loader's result for it, fails the
/// build or the tests (see `built.rs`).
pub fn builtin() -> &'static Knowledge {
    static KB: OnceLock<Knowledge> = OnceLock::new();
    KB.get_or_init(built::knowledge)
}

/// [`builtin`]'s construction, uncached: for benchmarks.
#[doc(hidden)]
pub fn builtin_uncached() -> Knowledge {
    built::knowledge()
}

/// The knowledge the gate consults: a policy's extension over the built-in base.
#[derive(Debug, Clone, Copy)]
pub struct Kb<'k> {
    pub extension: &'k Knowledge,
    pub builtin: &'k Knowledge,
    /// The policy's own additions to the return path's approval list
    /// (`[changes] approval`), held like the built-in ones.
    pub approval: &'k [String],
}

impl<'k> Kb<'k> {
    pub fn new(extension: &'k Knowledge) -> Self {
        Kb {
            extension,
            builtin: builtin(),
            approval: &[],
        }
    }

    /// The knowledge a policy gives the gate: its extension, and its
    /// `[changes] approval` patterns as config files.
    pub fn of(policy: &'k crate::Policy) -> Self {
        Kb {
            approval: &policy.changes.approval,
            ..Kb::new(&policy.knowledge.0)
        }
    }

    /// The built-in knowledge base alone.
    pub fn builtin_only() -> Kb<'static> {
        static EMPTY: OnceLock<Knowledge> = OnceLock::new();
        Kb {
            extension: EMPTY.get_or_init(Knowledge::default),
            builtin: builtin(),
            approval: &[],
        }
    }

    pub fn program(&self, name: &str, sub: Option<&str>) -> Option<&'k ProgramEntry> {
        if !self.extension.programs.is_empty() {
            if let Some(p) = self.extension.program(name, sub) {
                return Some(p);
            }
        }
        self.builtin.program(name, sub)
    }

    /// The config-file pattern a written path matches, if any. A pattern
    /// matches the whole path or its tail after a `/`. Besides `config_files`,
    /// the names the return path holds for a person in any workspace
    /// ([`crate::changes::DEFAULT_APPROVAL`]: `.envrc`, `.vscode/`,
    /// `rust-toolchain.toml`, …) count, at any depth of the path as written,
    /// so that the gate asks before a line writes one and then runs the tool
    /// that obeys it.
    pub fn config_file(&self, path: &str) -> Option<&'k str> {
        let path = path.trim_end_matches('/');
        self.extension
            .config_files
            .iter()
            .chain(self.builtin.config_files.iter())
            .map(|p| &**p)
            .find(|p| {
                path == *p || (path.ends_with(p) && path[..path.len() - p.len()].ends_with('/'))
            })
            .or_else(|| held_for_approval(path))
            .or_else(|| self.held_by_policy(path))
    }

    /// The policy's `[changes] approval` pattern `path` matches at any depth,
    /// if any. Compiled per call: the list is short and usually empty, and a
    /// write is rare among a line's words.
    fn held_by_policy(&self, path: &str) -> Option<&'k str> {
        use crate::changes::Pattern;
        let at = std::path::Path::new(path);
        self.approval
            .iter()
            .find(|p| Pattern::new(p).is_ok_and(|pat| pat.matches_at_any_depth(at)))
            .map(|p| p.as_str())
    }

    pub fn env(&self, name: &str) -> Option<&'k EnvEntry> {
        if !self.extension.env.is_empty() {
            if let Some(e) = self.extension.env_entry(name) {
                return Some(e);
            }
        }
        self.builtin.env_entry(name)
    }
}

/// The pattern of the change-set rules' built-in approval list that `path`
/// (as a command names it) matches at any depth, if any.
fn held_for_approval(path: &str) -> Option<&'static str> {
    use crate::changes::{Pattern, DEFAULT_APPROVAL};
    static LIST: OnceLock<Vec<(&'static str, Pattern)>> = OnceLock::new();
    let list = LIST.get_or_init(|| {
        DEFAULT_APPROVAL
            .iter()
            .filter_map(|p| Pattern::new(p).ok().map(|pat| (*p, pat)))
            .collect()
    });
    let path = std::path::Path::new(path);
    list.iter()
        .find(|(_, pat)| pat.matches_at_any_depth(path))
        .map(|(text, _)| *text)
}

/// A policy's extension of the knowledge base, shared cheaply between requests.
/// It serialises as nothing: the policy's text (hashed in `sha256`) holds it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extension(pub Arc<Knowledge>);

impl serde::Serialize for Extension {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

impl<'de> serde::Deserialize<'de> for Extension {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <serde::de::IgnoredAny as serde::Deserialize>::deserialize(d)?;
        Ok(Extension::default())
    }
}

/// What the gate does about a segment because of the knowledge base.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub action: Action,
    /// `tar --checkpoint-action`, `env HOME`: the entry and what triggered it.
    pub entry: String,
    /// Where the entry is defined.
    pub origin: String,
    /// The option or assignment as written.
    pub shown: String,
    pub kind: Kind,
    pub reason: String,
}

impl Finding {
    /// A sentence for a model: what was found, why, and which entry said so.
    pub fn sentence(&self) -> String {
        format!(
            "`{}` {} (knowledge base: `{}`, {})",
            crate::shell::words::short(&self.shown),
            self.reason,
            self.entry,
            self.origin
        )
    }
}

/// The finding for an environment assignment `name=value` set for a program.
pub fn env_finding(kb: Kb<'_>, name: &str, value: &str) -> Option<Finding> {
    let shown = format!("{name}={value}");
    match kb.env(name) {
        Some(e) if e.options_of.is_some() => options_value_finding(kb, e, name, value)
            .or_else(|| (e.action != Action::Judge).then(|| Finding {
                action: e.action,
                entry: format!("env {name}"),
                origin: e.origin.to_string(),
                shown: shown.clone(),
                kind: e.kind,
                reason: e.reason.to_string(),
            })),
        Some(e) if e.action == Action::Judge => None,
        Some(e) => Some(Finding {
            action: e.action,
            entry: format!("env {name}"),
            origin: e.origin.to_string(),
            shown,
            kind: e.kind,
            reason: e.reason.to_string(),
        }),
        None => Some(Finding {
            action: Action::OnUnknown,
            entry: format!("env {name}"),
            origin: "not in the knowledge base".into(),
            shown,
            kind: Kind::Config,
            reason: "sets a variable the knowledge base does not know; what it changes cannot be judged (add it to [[knowledge.env]] to say)".into(),
        }),
    }
}

/// `CFLAGS='-wrapper …'`: a variable whose value is a program's options,
/// judged as those options on its command line (its entry's effects, `@FILE`,
/// what it passes to the linker, assembler and preprocessor). Paths it names
/// are not checked from the environment, so they need approval.
fn options_value_finding(kb: Kb<'_>, e: &EnvEntry, name: &str, value: &str) -> Option<Finding> {
    let program = e.options_of.as_deref()?;
    let finding = |action, reason: String| Finding {
        action,
        entry: format!("env {name}"),
        origin: e.origin.to_string(),
        shown: format!("{name}={value}"),
        kind: Kind::Exec,
        reason,
    };
    // The value as the program gets it (quotes taken off); one the gate
    // cannot read, or that still holds quotes or expansions a recipe's shell
    // would read again, is not judged.
    let special = |v: &str| v.contains(['\'', '"', '\\', '$', '`']);
    let unquoted = if special(value) {
        crate::shell::literal_word(value).filter(|v| !special(v))
    } else {
        Some(value.to_string())
    };
    let Some(unquoted) = unquoted else {
        return Some(finding(
            Action::OnUnknown,
            format!(
                "holds quotes or expansions, so the `{program}` options it passes cannot be read"
            ),
        ));
    };
    let argv: Vec<String> = std::iter::once(program)
        .chain(unquoted.split_whitespace())
        .map(String::from)
        .collect();
    if let Some(f) = argv[1..].iter().find(|w| w.len() > 1 && w.starts_with('@')) {
        return Some(finding(
            Action::OnUnknown,
            format!(
                "passes `{program}` the response file `{f}`, whose options the gate does not see"
            ),
        ));
    }
    if argv[1..]
        .iter()
        .any(|w| w.starts_with("-plugin") || w.starts_with("--plugin"))
    {
        return Some(finding(
            Action::ApprovalRequired,
            "passes the linker a plugin to load, code of the caller's choice".into(),
        ));
    }
    let norm = normalize(&argv, kb);
    let applied = effects::apply(&argv, &norm);
    if let Some(f) = applied
        .findings
        .iter()
        .filter(|f| f.action != Action::Judge)
        .max_by_key(|f| f.action == Action::Deny)
    {
        return Some(finding(
            f.action,
            format!("passes `{program}` `{}`, which {}", f.shown, f.reason),
        ));
    }
    let mut writes: Vec<String> = applied.paths.iter().map(|p| p.0.clone()).collect();
    for (tool, items) in crate::shell::passed_lists(&argv) {
        let fx = crate::shell::list_effects(tool, &items);
        if let Some(f) = fx.response_file {
            return Some(finding(
                Action::OnUnknown,
                format!("passes a response file `{f}` on to a tool of `{program}`, whose options the gate does not see"),
            ));
        }
        if fx.plugin {
            return Some(finding(
                Action::ApprovalRequired,
                "passes the linker a plugin to load, code of the caller's choice".into(),
            ));
        }
        writes.extend(fx.writes);
    }
    if let Some(w) = writes.first() {
        return Some(finding(
            Action::ApprovalRequired,
            format!("names a file `{w}` that `{program}` reads or writes, which the gate does not check when it comes from the environment"),
        ));
    }
    None
}

/// Whether a known variable changes what programs do (for plain `X=v`
/// assignments, which only matter if the name is already exported).
/// A variable whose value is a program's options (`CFLAGS`) counts too: its
/// value is judged (`CFLAGS='-wrapper …'; export CFLAGS`), a harmless one passes.
pub fn env_known_risky(kb: Kb<'_>, name: &str) -> bool {
    kb.env(name)
        .is_some_and(|e| e.action != Action::Judge || e.options_of.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn shown(s: &str) -> Vec<String> {
        let a = argv(s);
        normalize(&a, Kb::builtin_only()).shown(&a[0])
    }

    #[test]
    fn the_builtin_base_loads() {
        crate::load::knowledge_from_str(PROGRAMS_TOML, BUILTIN_KNOWLEDGE_ORIGIN)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(builtin().programs.len() > 40);
        assert!(Kb::builtin_only().program("git", Some("reset")).is_some());
    }

    #[test]
    fn spellings_normalise() {
        assert_eq!(shown("rm -Rf x"), ["rm", "-r", "-f", "x"]);
        assert_eq!(
            shown("rm --rec --for x"),
            ["rm", "--recursive", "--force", "x"]
        );
        assert_eq!(shown("rm -- -rf"), ["rm", "--", "-rf"]);
        assert_eq!(shown("git reset --har"), ["git", "reset", "--hard"]);
        assert_eq!(
            shown("git -C src --git-d=.git status"),
            ["git", "-C src", "--git-dir=.git", "status"]
        );
        assert_eq!(
            shown("grep -f/etc/shadow x"),
            ["grep", "-f /etc/shadow", "x"]
        );
        assert_eq!(
            shown("python3 -Im pip install x"),
            ["python3", "-I", "-m pip", "install", "x"]
        );
        assert_eq!(shown("python3 -mpip"), ["python3", "-m pip"]);
        assert_eq!(
            shown("tar czf o.tgz src"),
            ["tar", "-c", "-z", "-f o.tgz", "src"]
        );
        assert_eq!(
            shown("sed -i.bak s/a/b/ f"),
            ["sed", "-i .bak", "s/a/b/", "f"]
        );
        assert_eq!(
            shown("find . -exec rm {} ; -delete"),
            ["find", ".", "-exec", "-delete"]
        );
        // Ambiguous prefixes stay as written (grep --fil: --file or --files-…).
        assert_eq!(shown("grep --fil=x y"), ["grep", "--fil=x", "y"]);
        // Programs without an entry: clusters split, nothing else guessed.
        assert_eq!(
            shown("frob -abc --long=v w"),
            ["frob", "-a", "-b", "-c", "--long=v", "w"]
        );
    }

    #[test]
    fn effects_are_found() {
        let a = argv("tar --checkpoint-act=exec=id -cf o.tar src");
        let n = normalize(&a, Kb::builtin_only());
        let applied = apply(&a, &n);
        assert_eq!(applied.findings.len(), 1);
        assert_eq!(applied.findings[0].entry, "tar --checkpoint-action");
        assert_eq!(applied.findings[0].action, Action::ApprovalRequired);
        assert!(applied
            .paths
            .iter()
            .any(|(p, a, _)| p == "o.tar" && *a == Access::Write));
        let a = argv("python3 -Im pip install x");
        let n = normalize(&a, Kb::builtin_only());
        assert_eq!(
            apply(&a, &n).inner,
            [InnerRun::Argv {
                wrapper: vec!["python3".into(), "-m pip".into()],
                argv: argv("pip install x"),
            }]
        );
    }

    #[test]
    fn environment_entries() {
        let kb = Kb::builtin_only();
        assert!(env_finding(kb, "LANG", "C").is_none());
        assert!(env_finding(kb, "LC_ALL", "C").is_none());
        assert_eq!(
            env_finding(kb, "GIT_DIR", "x").unwrap().action,
            Action::ApprovalRequired
        );
        assert_eq!(
            env_finding(kb, "GIT_CONFIG_GLOBAL", "x").unwrap().action,
            Action::OnUnknown
        );
        assert_eq!(
            env_finding(kb, "HOME", "/x").unwrap().action,
            Action::ApprovalRequired
        );
        assert_eq!(
            env_finding(kb, "LD_PRELOAD", "x").unwrap().action,
            Action::OnUnknown
        );
        assert_eq!(
            env_finding(kb, "ZZZ_UNKNOWN", "x").unwrap().action,
            Action::OnUnknown
        );
        assert!(env_known_risky(kb, "PATH"));
        assert!(!env_known_risky(kb, "X"));
    }

    /// Normalising is one pass: 16 times the words cost about 16 times as
    /// much, not 256 times (the best of several runs, so that a loaded
    /// machine does not decide).
    #[test]
    fn normalising_is_linear() {
        let time = |n: usize| {
            let mut a = vec!["tar".to_string()];
            for i in 0..n {
                a.push(if i % 2 == 0 {
                    "-Rf".into()
                } else {
                    "--checkpoint-act=echo".into()
                });
            }
            (0..7)
                .map(|_| {
                    let t = std::time::Instant::now();
                    let norm = normalize(&a, Kb::builtin_only());
                    std::hint::black_box(apply(&a, &norm));
                    t.elapsed()
                })
                .min()
                .unwrap_or_default()
        };
        let small = time(1000);
        let big = time(16000);
        assert!(
            big < small * 16 * 6,
            "16x the words took {big:?} against {small:?}"
        );
    }
}
