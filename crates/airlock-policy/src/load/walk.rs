//! Walks the spanned TOML tree of a policy file, section by section, checking
//! every key and value and remembering where each came from.

use super::units::{parse_duration, parse_size};
use super::{sha256_hex, Diagnostic, Loaded, Location, PolicyError};
use crate::model::*;
use crate::rules::{split_plain, ArgvShape};
use crate::Verdict;
use std::cell::OnceCell;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

mod changes;
mod knowledge;
mod sandbox;

type SValue<'i> = Spanned<DeValue<'i>>;

const SECTIONS: &[&str] = &[
    "workspace",
    "network",
    "commands",
    "limits",
    "env",
    "filesystem",
    "toolchains",
    "rule",
    "sandbox",
    "changes",
    "knowledge",
];
const WORKSPACE_KEYS: &[&str] = &["root", "mode", "protect", "apply"];
const NETWORK_KEYS: &[&str] = &["mode", "allow", "deny", "programs", "subcommands"];
const COMMANDS_KEYS: &[&str] = &[
    "allow",
    "approval",
    "deny",
    "on_unknown",
    "max_command_bytes",
];
const LIMITS_KEYS: &[&str] = &[
    "timeout",
    "cpu_time",
    "memory",
    "pids",
    "cpus",
    "output",
    "tmp",
    "file_size",
    "open_files",
    "enforcement",
];
const ENV_KEYS: &[&str] = &["pass", "set", "git_config"];
const FILESYSTEM_KEYS: &[&str] = &["read", "write", "hide"];
const TOOLCHAINS_KEYS: &[&str] = &["use"];
const RULE_KEYS: &[&str] = &["name", "prefix", "decision", "reason", "match", "not_match"];

/// The default command-size bound: 64 KiB.
pub const DEFAULT_MAX_COMMAND_BYTES: usize = 64 * 1024;
const MAX_MAX_COMMAND_BYTES: u64 = 16 << 20;

pub fn default_limits() -> Limits {
    Limits {
        timeout: Duration { ms: 30_000 },
        cpu_time: Duration { ms: 30_000 },
        memory: 512 << 20,
        pids: 128,
        cpus: 1.0,
        output: 1 << 20,
        tmp: 64 << 20,
        file_size: 256 << 20,
        open_files: 1024,
        enforcement: LimitEnforcement::Cgroup,
    }
}

/// Load text whose relative root is resolved against `base_dir`.
pub fn load_text_with_base(
    text: &str,
    origin: &str,
    base_dir: &Path,
) -> Result<Loaded, PolicyError> {
    load(text, origin, base_dir, None)
}

/// Parse a knowledge base file (the built-in `programs.toml`).
pub fn knowledge_from_str(
    text: &str,
    origin: &str,
) -> Result<crate::knowledge::Knowledge, PolicyError> {
    let mut w = Walker::new(text, origin);
    let doc = match DeTable::parse(text) {
        Ok(doc) => doc,
        Err(err) => {
            let at = err.span().map(|s| s.start).unwrap_or(0);
            let message = err.message().trim().to_string();
            w.error(at..at, format!("not valid TOML: {message}"));
            return Err(w.into_error());
        }
    };
    let kb = w.knowledge(doc.get_ref(), "");
    if !w.errors.is_empty() {
        return Err(w.into_error());
    }
    Ok(kb)
}

/// Load text; `root_override` replaces `workspace.root` (the built-in default is
/// rooted where airlock runs, whatever its text says): the tests' reference
/// for the compiled-in default (`load/builtin.rs`).
#[cfg(test)]
pub fn load_text(
    text: &str,
    origin: &str,
    root_override: Option<&Path>,
) -> Result<Loaded, PolicyError> {
    let base = root_override.unwrap_or(Path::new("."));
    load(text, origin, base, root_override)
}

fn load(
    text: &str,
    origin: &str,
    base_dir: &Path,
    root_override: Option<&Path>,
) -> Result<Loaded, PolicyError> {
    let mut w = Walker::new(text, origin);
    let doc = match DeTable::parse(text) {
        Ok(doc) => doc,
        Err(err) => {
            let at = err.span().map(|s| s.start).unwrap_or(0);
            let message = err.message().trim().to_string();
            w.error(at..at, format!("not valid TOML: {message}"));
            return Err(w.into_error());
        }
    };
    let policy = w.policy(doc.get_ref(), base_dir, root_override);
    if !w.errors.is_empty() {
        return Err(w.into_error());
    }
    let mut policy = policy;
    policy.sha256 = sha256_hex(text);
    policy.source = origin.to_string();
    sort(&mut w.warnings);
    Ok(Loaded {
        policy,
        warnings: w.warnings,
    })
}

/// Diagnostics in file order, whatever order the sections were read in.
fn sort(d: &mut [Diagnostic]) {
    d.sort_by_key(|d| (d.location.line, d.location.column));
}

struct Walker<'t> {
    text: &'t str,
    origin: String,
    /// Where each line starts: made on the first diagnostic, as a clean
    /// policy never needs it.
    line_starts: OnceCell<Vec<usize>>,
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
}

/// Where each rule prefix was seen, to warn about one prefix under two decisions.
struct PrefixSeen {
    name: String,
    decision: Verdict,
    span: Range<usize>,
}

impl<'t> Walker<'t> {
    fn new(text: &'t str, origin: &str) -> Self {
        Walker {
            text,
            origin: origin.to_string(),
            line_starts: OnceCell::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn location(&self, offset: usize) -> Location {
        let offset = offset.min(self.text.len());
        let line_starts = self.line_starts.get_or_init(|| {
            let mut starts = vec![0];
            starts.extend(self.text.match_indices('\n').map(|(i, _)| i + 1));
            starts
        });
        let line = match line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = line_starts[line];
        let mut col_end = offset;
        while !self.text.is_char_boundary(col_end) {
            col_end -= 1;
        }
        let column = self.text[start..col_end].chars().count() + 1;
        Location {
            origin: self.origin.clone(),
            line: line + 1,
            column,
        }
    }

    fn error(&mut self, span: Range<usize>, message: String) {
        let location = self.location(span.start);
        self.errors.push(Diagnostic { location, message });
    }

    fn warn(&mut self, span: Range<usize>, message: String) {
        let location = self.location(span.start);
        self.warnings.push(Diagnostic { location, message });
    }

    fn into_error(mut self) -> PolicyError {
        sort(&mut self.errors);
        PolicyError::Invalid {
            diagnostics: self.errors,
        }
    }

    fn unknown_key(&mut self, span: Range<usize>, key: &str, section: &str, valid: &[&str]) {
        let place = if section.is_empty() {
            "at the top level".to_string()
        } else {
            format!("in [{section}]")
        };
        let what = if section.is_empty() { "section" } else { "key" };
        let message = match closest(key, valid) {
            Some(best) => format!("unknown {what} `{key}` {place}; did you mean `{best}`?"),
            None => format!(
                "unknown {what} `{key}` {place}; expected one of: {}",
                valid.join(", ")
            ),
        };
        self.error(span, message);
    }

    /// The entries of a table, each key checked against `valid`.
    fn entries<'a, 'i>(
        &mut self,
        table: &'a DeTable<'i>,
        section: &str,
        valid: &[&str],
    ) -> Vec<(&'a str, &'a SValue<'i>)> {
        let mut out = Vec::new();
        for (k, v) in table.iter() {
            let key: &str = k.get_ref();
            if valid.contains(&key) {
                out.push((key, v));
            } else {
                self.unknown_key(k.span(), key, section, valid);
            }
        }
        out
    }

    fn table<'a, 'i>(&mut self, v: &'a SValue<'i>, what: &str) -> Option<&'a DeTable<'i>> {
        match v.get_ref() {
            DeValue::Table(t) => Some(t),
            other => {
                self.error(
                    v.span(),
                    format!("`{what}` must be a table, found {}", type_name(other)),
                );
                None
            }
        }
    }

    fn string(&mut self, v: &SValue<'_>, what: &str) -> Option<String> {
        match v.get_ref() {
            DeValue::String(s) => Some(s.to_string()),
            other => {
                self.error(
                    v.span(),
                    format!("`{what}` must be a string, found {}", type_name(other)),
                );
                None
            }
        }
    }

    /// Refuses a path-valued entry holding NUL or another ASCII control
    /// character: no file name airlock should be pointed at has one, a NUL
    /// cannot reach the kernel at all (the run would fail later with a
    /// misleading error), and the others hide what the path is on a terminal.
    /// True when `p` is clean.
    fn clean_path(&mut self, span: Range<usize>, what: &str, p: &str) -> bool {
        let Some(c) = p.chars().find(char::is_ascii_control) else {
            return true;
        };
        self.error(
            span,
            format!(
                "`{what}` entry {} holds the control character {}: paths may not contain NUL or other control characters (a NUL cannot be passed to the kernel); write the path without it",
                p.escape_default(),
                c.escape_default()
            ),
        );
        false
    }

    /// An array of strings, each with its span.
    fn strings(&mut self, v: &SValue<'_>, what: &str) -> Vec<(String, Range<usize>)> {
        self.strs(v, what)
            .into_iter()
            .map(|(s, span)| (s.to_string(), span))
            .collect()
    }

    /// [`Walker::strings`] borrowed from the document, for the callers that
    /// keep no copy (the command lists, a String each saved).
    fn strs<'a>(&mut self, v: &'a SValue<'_>, what: &str) -> Vec<(&'a str, Range<usize>)> {
        let DeValue::Array(items) = v.get_ref() else {
            self.error(
                v.span(),
                format!(
                    "`{what}` must be an array of strings, found {}",
                    type_name(v.get_ref())
                ),
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in items.iter() {
            match item.get_ref() {
                DeValue::String(s) => out.push((&**s, item.span())),
                other => self.error(
                    item.span(),
                    format!(
                        "`{what}` must be an array of strings; this element is {}",
                        type_name(other)
                    ),
                ),
            }
        }
        out
    }

    fn enum_value<T: Copy>(
        &mut self,
        v: &SValue<'_>,
        what: &str,
        options: &[(&str, T)],
    ) -> Option<T> {
        let s = self.string(v, what)?;
        if let Some((_, t)) = options.iter().find(|(name, _)| *name == s) {
            return Some(*t);
        }
        let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
        let hint = match closest(&s, &names) {
            Some(best) => format!("; did you mean \"{best}\"?"),
            None => String::new(),
        };
        self.error(
            v.span(),
            format!(
                "`{what}` must be one of {}, found \"{s}\"{hint}",
                names
                    .iter()
                    .map(|n| format!("\"{n}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
        None
    }

    fn duration(&mut self, v: &SValue<'_>, what: &str) -> Option<Duration> {
        let s = self.string(v, what)?;
        match parse_duration(&s) {
            Ok(0) => {
                self.error(v.span(), format!("`{what}` must be more than 0"));
                None
            }
            Ok(ms) => Some(Duration { ms }),
            Err(e) => {
                self.error(v.span(), format!("`{what}`: {e}"));
                None
            }
        }
    }

    fn size(&mut self, v: &SValue<'_>, what: &str, min: u64, min_text: &str) -> Option<u64> {
        let bytes = match v.get_ref() {
            DeValue::String(s) => match parse_size(s) {
                Ok(b) => b,
                Err(e) => {
                    self.error(v.span(), format!("`{what}`: {e}"));
                    return None;
                }
            },
            DeValue::Integer(i) => {
                match i64::from_str_radix(&i.as_str().replace('_', ""), i.radix()) {
                    Ok(n) if n >= 0 => n as u64,
                    _ => {
                        self.error(v.span(), format!("`{what}` must be a positive size"));
                        return None;
                    }
                }
            }
            other => {
                self.error(
                    v.span(),
                    format!(
                        "`{what}` must be a size such as \"512MiB\", found {}",
                        type_name(other)
                    ),
                );
                return None;
            }
        };
        if bytes < min {
            self.error(
                v.span(),
                format!("`{what}` is impossibly small: it must be at least {min_text}"),
            );
            return None;
        }
        Some(bytes)
    }

    fn integer(&mut self, v: &SValue<'_>, what: &str, min: i64, max: i64) -> Option<i64> {
        let DeValue::Integer(i) = v.get_ref() else {
            self.error(
                v.span(),
                format!(
                    "`{what}` must be an integer, found {}",
                    type_name(v.get_ref())
                ),
            );
            return None;
        };
        match i64::from_str_radix(&i.as_str().replace('_', ""), i.radix()) {
            Ok(n) if n >= min && n <= max => Some(n),
            Ok(n) => {
                self.error(
                    v.span(),
                    format!("`{what}` = {n} is impossible: it must be between {min} and {max}"),
                );
                None
            }
            Err(_) => {
                self.error(v.span(), format!("`{what}` is not a valid integer"));
                None
            }
        }
    }

    fn policy(
        &mut self,
        doc: &DeTable<'_>,
        base_dir: &Path,
        root_override: Option<&Path>,
    ) -> Policy {
        let mut policy = Policy {
            workspace: WorkspacePolicy {
                root: absolute_lexical(root_override.unwrap_or(base_dir)),
                mode: WorkspaceMode::Overlay,
                protect: vec![PathBuf::from(".git/hooks"), PathBuf::from(".git/config")],
                apply: ApplyMode::Manual,
            },
            network: NetworkPolicy {
                mode: NetworkMode::None,
                allow: vec![],
                deny: vec![],
                programs: vec![],
                subcommands: vec![],
            },
            commands: CommandsPolicy {
                rules: vec![],
                on_unknown: Verdict::Deny,
                max_command_bytes: DEFAULT_MAX_COMMAND_BYTES,
            },
            limits: default_limits(),
            env: EnvPolicy {
                pass: vec![],
                set: vec![],
                git_config: vec![],
            },
            filesystem: FilesystemPolicy {
                read: vec![],
                write: vec![],
                hide: vec![],
            },
            toolchains: vec![],
            sandbox: SandboxPolicy::default(),
            changes: crate::changes::ChangesPolicy::default(),
            knowledge: Default::default(),
            sha256: String::new(),
            source: String::new(),
        };
        let mut seen: HashMap<String, PrefixSeen> = HashMap::new();
        let mut cpu_time_set = false;
        let mut pending_rules: Vec<(Rule, Vec<Example>)> = Vec::new();
        for (section, value) in self.entries(doc, "", SECTIONS) {
            match section {
                "workspace" => {
                    if let Some(t) = self.table(value, "workspace") {
                        self.workspace(t, base_dir, root_override, &mut policy.workspace);
                    }
                }
                "network" => {
                    if let Some(t) = self.table(value, "network") {
                        self.network(t, &mut policy.network);
                    }
                }
                "commands" => {
                    if let Some(t) = self.table(value, "commands") {
                        self.commands(t, &mut policy.commands, &mut seen);
                    }
                }
                "limits" => {
                    if let Some(t) = self.table(value, "limits") {
                        cpu_time_set = self.limits(t, &mut policy.limits);
                    }
                }
                "env" => {
                    if let Some(t) = self.table(value, "env") {
                        self.env(t, &mut policy.env);
                    }
                }
                "filesystem" => {
                    if let Some(t) = self.table(value, "filesystem") {
                        self.filesystem(t, &mut policy.filesystem);
                    }
                }
                "toolchains" => {
                    if let Some(t) = self.table(value, "toolchains") {
                        self.toolchains(t, &mut policy.toolchains);
                    }
                }
                "rule" => self.rules(value, &mut pending_rules, &mut seen),
                "sandbox" => {
                    if let Some(t) = self.table(value, "sandbox") {
                        self.sandbox(t, &mut policy.sandbox);
                    }
                }
                "changes" => {
                    if let Some(t) = self.table(value, "changes") {
                        self.changes(t, &mut policy.changes);
                    }
                }
                "knowledge" => {
                    if let Some(t) = self.table(value, "knowledge") {
                        let kb = self.knowledge(t, "knowledge");
                        policy.knowledge = crate::knowledge::Extension(std::sync::Arc::new(kb));
                    }
                }
                _ => {}
            }
        }
        if !cpu_time_set {
            policy.limits.cpu_time = policy.limits.timeout;
        }
        if policy.network.mode == NetworkMode::Allowlist && policy.network.allow.is_empty() {
            if let Some((_, v)) = doc.iter().find(|(k, _)| k.get_ref() == "network") {
                self.warn(
                    v.span(),
                    "network mode \"allowlist\" with an empty `allow` list reaches no host; it behaves as mode \"none\"".into(),
                );
            }
        }
        // Examples are checked after every section is read, against the rule alone.
        for (rule, examples) in pending_rules {
            for ex in &examples {
                self.check_example(&rule, ex);
            }
            policy.commands.rules.push(rule);
        }
        policy
    }

    fn workspace(
        &mut self,
        t: &DeTable<'_>,
        base_dir: &Path,
        root_override: Option<&Path>,
        out: &mut WorkspacePolicy,
    ) {
        for (key, v) in self.entries(t, "workspace", WORKSPACE_KEYS) {
            match key {
                "root" => {
                    if let Some(s) = self.string(v, "workspace.root") {
                        if s.is_empty() {
                            self.error(v.span(), "`workspace.root` must not be empty; use \".\" for the policy file's folder".into());
                        } else if !self.clean_path(v.span(), "workspace.root", &s) {
                        } else if root_override.is_none() {
                            out.root = absolute_lexical(&base_dir.join(&s));
                            if !out.root.is_dir() {
                                self.error(
                                    v.span(),
                                    format!(
                                        "`workspace.root` = \"{s}\" is {}, which is not a directory",
                                        out.root.display()
                                    ),
                                );
                            }
                        }
                    }
                }
                "mode" => {
                    if let Some(m) = self.enum_value(
                        v,
                        "workspace.mode",
                        &[
                            ("overlay", WorkspaceMode::Overlay),
                            ("ro", WorkspaceMode::Ro),
                            ("rw", WorkspaceMode::Rw),
                        ],
                    ) {
                        out.mode = m;
                    }
                }
                "apply" => {
                    if let Some(m) = self.enum_value(
                        v,
                        "workspace.apply",
                        &[("manual", ApplyMode::Manual), ("auto", ApplyMode::Auto)],
                    ) {
                        out.apply = m;
                    }
                }
                "protect" => {
                    out.protect.clear();
                    for (p, span) in self.strings(v, "workspace.protect") {
                        let path = PathBuf::from(&p);
                        if !self.clean_path(span.clone(), "workspace.protect", &p) {
                        } else if p.is_empty()
                            || path.is_absolute()
                            || path.components().any(|c| c == Component::ParentDir)
                        {
                            self.error(span, format!("`workspace.protect` entry \"{p}\" must be a path relative to the workspace root, without `..`"));
                        } else {
                            out.protect.push(path);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn network(&mut self, t: &DeTable<'_>, out: &mut NetworkPolicy) {
        for (key, v) in self.entries(t, "network", NETWORK_KEYS) {
            match key {
                "mode" => {
                    if let Some(m) = self.enum_value(
                        v,
                        "network.mode",
                        &[
                            ("none", NetworkMode::None),
                            ("allowlist", NetworkMode::Allowlist),
                            ("open", NetworkMode::Open),
                        ],
                    ) {
                        out.mode = m;
                    }
                }
                "allow" | "deny" => {
                    let what = format!("network.{key}");
                    for (p, span) in self.strings(v, &what) {
                        match check_host_pattern(&p, key == "allow") {
                            Ok(()) => {
                                if key == "allow" {
                                    out.allow.push(p.to_ascii_lowercase())
                                } else {
                                    out.deny.push(p.to_ascii_lowercase())
                                }
                            }
                            Err(e) => self.error(span, format!("`{what}` entry \"{p}\": {e}")),
                        }
                    }
                }
                "programs" => {
                    for (p, span) in self.strings(v, "network.programs") {
                        if p.is_empty() || p.contains(char::is_whitespace) || p.contains('/') {
                            self.error(span, format!("`network.programs` entry \"{p}\" must be a program name (no spaces or slashes)"));
                        } else {
                            out.programs.push(p);
                        }
                    }
                }
                "subcommands" => {
                    for (p, span) in self.strings(v, "network.subcommands") {
                        if p.split_whitespace().count() < 2 {
                            self.error(span, format!("`network.subcommands` entry \"{p}\" must be a program and a subcommand, such as \"git fetch\""));
                        } else {
                            out.subcommands
                                .push(p.split_whitespace().collect::<Vec<_>>().join(" "));
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn commands(
        &mut self,
        t: &DeTable<'_>,
        out: &mut CommandsPolicy,
        seen: &mut HashMap<String, PrefixSeen>,
    ) {
        for (key, v) in self.entries(t, "commands", COMMANDS_KEYS) {
            match key {
                "allow" | "approval" | "deny" => {
                    let decision = match key {
                        "allow" => Verdict::Allow,
                        "approval" => Verdict::ApprovalRequired,
                        _ => Verdict::Deny,
                    };
                    let what = format!("commands.{key}");
                    for (i, (text, span)) in self.strs(v, &what).into_iter().enumerate() {
                        let prefix = split_plain(text);
                        if prefix.is_empty() {
                            self.error(span, format!("`{what}` entry {i} is empty; expected an argv prefix such as \"git status\""));
                            continue;
                        }
                        let name = indexed_name(&what, i);
                        self.note_prefix(seen, &prefix, &name, decision, span);
                        out.rules.push(Rule {
                            name,
                            prefix,
                            decision,
                            reason: None,
                        });
                    }
                }
                "on_unknown" => {
                    if v.get_ref().as_str() == Some("allow") {
                        self.error(v.span(), "`commands.on_unknown` cannot be \"allow\": what cannot be analysed is never allowed; use \"deny\" or \"approval_required\"".into());
                    } else if let Some(d) = self.enum_value(
                        v,
                        "commands.on_unknown",
                        &[
                            ("deny", Verdict::Deny),
                            ("approval_required", Verdict::ApprovalRequired),
                        ],
                    ) {
                        out.on_unknown = d;
                    }
                }
                "max_command_bytes" => {
                    if let Some(b) = self.size(v, "commands.max_command_bytes", 1, "1 byte") {
                        if b > MAX_MAX_COMMAND_BYTES {
                            self.error(
                                v.span(),
                                "`commands.max_command_bytes` must be at most 16MiB".into(),
                            );
                        } else {
                            out.max_command_bytes = b as usize;
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn note_prefix(
        &mut self,
        seen: &mut HashMap<String, PrefixSeen>,
        prefix: &[Vec<String>],
        name: &str,
        decision: Verdict,
        span: Range<usize>,
    ) {
        // Expand alternatives so that `["git", ["push","pull"]]` and "git push" collide.
        for key in expand_prefix(prefix) {
            self.note_key(seen, key, name, decision, &span);
        }
    }

    fn note_key(
        &mut self,
        seen: &mut HashMap<String, PrefixSeen>,
        key: String,
        name: &str,
        decision: Verdict,
        span: &Range<usize>,
    ) {
        // One hash per key, not a look-up and then an insert.
        match seen.entry(key) {
            Entry::Occupied(seen_at) => {
                let (key, prev) = (seen_at.key(), seen_at.get());
                if prev.decision != decision {
                    let prev_loc = self.location(prev.span.start);
                    let strictest = prev.decision.max(decision);
                    self.warn(
                        span.clone(),
                        format!(
                            "`{key}` is listed under two decisions: {} here ({name}) and {} at line {} ({}); the strictest, {}, wins",
                            decision.as_str(),
                            prev.decision.as_str(),
                            prev_loc.line,
                            prev.name,
                            strictest.as_str()
                        ),
                    );
                }
            }
            Entry::Vacant(slot) => {
                slot.insert(PrefixSeen {
                    name: name.to_string(),
                    decision,
                    span: span.clone(),
                });
            }
        }
    }

    fn limits(&mut self, t: &DeTable<'_>, out: &mut Limits) -> bool {
        let mut cpu_time_set = false;
        for (key, v) in self.entries(t, "limits", LIMITS_KEYS) {
            let what = format!("limits.{key}");
            match key {
                "timeout" => {
                    if let Some(d) = self.duration(v, &what) {
                        out.timeout = d;
                    }
                }
                "cpu_time" => {
                    if let Some(d) = self.duration(v, &what) {
                        out.cpu_time = d;
                        cpu_time_set = true;
                    }
                }
                "memory" => {
                    if let Some(b) = self.size(v, &what, 1 << 20, "1MiB") {
                        out.memory = b;
                    }
                }
                "output" => {
                    if let Some(b) = self.size(v, &what, 1, "1 byte") {
                        out.output = b;
                    }
                }
                "tmp" => {
                    if let Some(b) = self.size(v, &what, 4096, "4KiB") {
                        out.tmp = b;
                    }
                }
                "file_size" => {
                    if let Some(b) = self.size(v, &what, 1, "1 byte") {
                        out.file_size = b;
                    }
                }
                "pids" => {
                    if let Some(n) = self.integer(v, &what, 1, 4_194_304) {
                        out.pids = n as u32;
                    }
                }
                "open_files" => {
                    if let Some(n) = self.integer(v, &what, 16, 1_048_576) {
                        out.open_files = n as u32;
                    }
                }
                "enforcement" => {
                    if let Some(e) = self.enum_value(
                        v,
                        "limits.enforcement",
                        &[
                            ("cgroup", LimitEnforcement::Cgroup),
                            ("best_effort", LimitEnforcement::BestEffort),
                        ],
                    ) {
                        out.enforcement = e;
                    }
                }
                "cpus" => {
                    let n = match v.get_ref() {
                        DeValue::Float(f) => f.as_str().replace('_', "").parse::<f64>().ok(),
                        DeValue::Integer(i) => i.as_str().replace('_', "").parse::<f64>().ok(),
                        other => {
                            self.error(
                                v.span(),
                                format!(
                                    "`limits.cpus` must be a number such as 1.5, found {}",
                                    type_name(other)
                                ),
                            );
                            continue;
                        }
                    };
                    match n {
                        Some(c) if (0.01..=1024.0).contains(&c) => out.cpus = c,
                        _ => self.error(
                            v.span(),
                            "`limits.cpus` is impossible: it must be between 0.01 and 1024".into(),
                        ),
                    }
                }
                _ => {}
            }
        }
        cpu_time_set
    }

    fn env(&mut self, t: &DeTable<'_>, out: &mut EnvPolicy) {
        for (key, v) in self.entries(t, "env", ENV_KEYS) {
            match key {
                "pass" => {
                    for (p, span) in self.strings(v, "env.pass") {
                        if p.is_empty()
                            || !p
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '*' | '?'))
                        {
                            self.error(span, format!("`env.pass` entry \"{p}\" must be a variable name or a glob such as \"LC_*\""));
                        } else {
                            out.pass.push(p);
                        }
                    }
                }
                "set" => {
                    let Some(table) = self.table(v, "env.set") else {
                        continue;
                    };
                    for (k, val) in table.iter() {
                        let name: &str = k.get_ref();
                        if !is_env_name(name) {
                            self.error(
                                k.span(),
                                format!("`env.set` key \"{name}\" is not a valid variable name"),
                            );
                            continue;
                        }
                        if let Some(s) = self.string(val, &format!("env.set.{name}")) {
                            out.set.push((name.to_string(), s));
                        }
                    }
                }
                "git_config" => {
                    let Some(table) = self.table(v, "env.git_config") else {
                        continue;
                    };
                    for (k, val) in table.iter() {
                        let name: &str = k.get_ref();
                        if !is_git_config_key(name) {
                            self.error(
                                k.span(),
                                format!("`env.git_config` key \"{name}\" is not a git configuration key such as \"user.name\" or \"url.https://example.com/.insteadOf\" (section, optional subsection, name)"),
                            );
                            continue;
                        }
                        let Some(s) = self.string(val, &format!("env.git_config.\"{name}\""))
                        else {
                            continue;
                        };
                        if s.contains(['\n', '\r', '\0']) {
                            self.error(
                                val.span(),
                                format!("`env.git_config.\"{name}\"` must be one line (no newline or NUL)"),
                            );
                            continue;
                        }
                        out.git_config.push((name.to_string(), s));
                    }
                }
                _ => {}
            }
        }
    }

    fn toolchains(&mut self, t: &DeTable<'_>, out: &mut Vec<Toolchain>) {
        for (_, v) in self.entries(t, "toolchains", TOOLCHAINS_KEYS) {
            let names: Vec<&str> = Toolchain::ALL.iter().map(|t| t.as_str()).collect();
            for (name, span) in self.strings(v, "toolchains.use") {
                match Toolchain::ALL.iter().find(|t| t.as_str() == name) {
                    Some(t) if out.contains(t) => self.warn(
                        span,
                        format!("toolchain \"{name}\" is listed twice in `toolchains.use`"),
                    ),
                    Some(t) => out.push(*t),
                    None => {
                        let hint = match closest(&name, &names) {
                            Some(best) => format!("; did you mean \"{best}\"?"),
                            None => String::new(),
                        };
                        self.error(
                            span,
                            format!(
                                "`toolchains.use` entry \"{name}\" is not a known toolchain (one of {}){hint}",
                                names.join(", ")
                            ),
                        );
                    }
                }
            }
        }
    }

    fn filesystem(&mut self, t: &DeTable<'_>, out: &mut FilesystemPolicy) {
        for (key, v) in self.entries(t, "filesystem", FILESYSTEM_KEYS) {
            let what = format!("filesystem.{key}");
            let mut paths = Vec::new();
            for (p, span) in self.strings(v, &what) {
                let path = PathBuf::from(&p);
                if !self.clean_path(span.clone(), &what, &p) {
                } else if !path.is_absolute() {
                    self.error(
                        span,
                        format!("`{what}` entry \"{p}\" must be an absolute path"),
                    );
                } else if path == Path::new("/") && key != "hide" {
                    self.error(span, format!("`{what}` entry \"/\" would expose the whole host; name the directories needed"));
                } else {
                    paths.push(absolute_lexical(&path));
                }
            }
            match key {
                "read" => out.read = paths,
                "write" => out.write = paths,
                _ => out.hide = paths,
            }
        }
    }

    fn rules(
        &mut self,
        value: &SValue<'_>,
        out: &mut Vec<(Rule, Vec<Example>)>,
        seen: &mut HashMap<String, PrefixSeen>,
    ) {
        let DeValue::Array(items) = value.get_ref() else {
            self.error(
                value.span(),
                "`rule` must be an array of tables: write each rule as [[rule]]".into(),
            );
            return;
        };
        for (index, item) in items.iter().enumerate() {
            let Some(t) = self.table(item, "rule") else {
                continue;
            };
            let mut name = format!("rule[{index}]");
            let mut prefix = None;
            let mut decision = None;
            let mut reason = None;
            let mut examples = Vec::new();
            let mut prefix_span = item.span();
            for (key, v) in self.entries(t, "rule", RULE_KEYS) {
                match key {
                    "name" => {
                        if let Some(n) = self.string(v, "rule.name") {
                            if n.trim().is_empty() {
                                self.error(v.span(), "`rule.name` must not be empty".into());
                            } else {
                                name = n;
                            }
                        }
                    }
                    "prefix" => {
                        prefix_span = v.span();
                        prefix = self.rule_prefix(v);
                    }
                    "decision" => {
                        decision = self.enum_value(
                            v,
                            "rule.decision",
                            &[
                                ("allow", Verdict::Allow),
                                ("approval_required", Verdict::ApprovalRequired),
                                ("deny", Verdict::Deny),
                            ],
                        )
                    }
                    "reason" => reason = self.string(v, "rule.reason"),
                    "match" | "not_match" => {
                        for (text, span) in self.strings(v, &format!("rule.{key}")) {
                            examples.push(Example {
                                text,
                                span,
                                should_match: key == "match",
                            });
                        }
                    }
                    _ => {}
                }
            }
            let (Some(prefix), Some(decision)) = (prefix, decision) else {
                let missing: Vec<&str> = [
                    (!t.iter().any(|(k, _)| k.get_ref() == "prefix")).then_some("`prefix`"),
                    (!t.iter().any(|(k, _)| k.get_ref() == "decision")).then_some("`decision`"),
                ]
                .into_iter()
                .flatten()
                .collect();
                if !missing.is_empty() {
                    self.error(
                        item.span(),
                        format!("{name} is missing {}", missing.join(" and ")),
                    );
                }
                continue;
            };
            self.note_prefix(seen, &prefix, &name, decision, prefix_span);
            out.push((
                Rule {
                    name,
                    prefix,
                    decision,
                    reason,
                },
                examples,
            ));
        }
    }

    /// `prefix = "git push"` or `prefix = ["git", ["push", "pull"]]`.
    fn rule_prefix(&mut self, v: &SValue<'_>) -> Option<Vec<Vec<String>>> {
        let expected = "expected a string such as \"git push\" or an array such as [\"git\", [\"push\", \"pull\"]]";
        let prefix = match v.get_ref() {
            DeValue::String(s) => split_plain(s),
            DeValue::Array(items) => {
                let mut positions = Vec::new();
                for item in items.iter() {
                    match item.get_ref() {
                        DeValue::String(s)
                            if !s.trim().is_empty() && !s.contains(char::is_whitespace) =>
                        {
                            positions.push(vec![s.to_string()])
                        }
                        DeValue::Array(alts) if !alts.is_empty() => {
                            let mut position = Vec::new();
                            for alt in alts.iter() {
                                match alt.get_ref() {
                                    DeValue::String(s)
                                        if !s.trim().is_empty()
                                            && !s.contains(char::is_whitespace) =>
                                    {
                                        position.push(s.to_string())
                                    }
                                    _ => {
                                        self.error(alt.span(), format!("`rule.prefix` alternative must be one word; {expected}"));
                                        return None;
                                    }
                                }
                            }
                            positions.push(position);
                        }
                        _ => {
                            self.error(item.span(), format!("`rule.prefix` position must be one word or a list of alternative words; {expected}"));
                            return None;
                        }
                    }
                }
                positions
            }
            other => {
                self.error(
                    v.span(),
                    format!("`rule.prefix` is {}; {expected}", type_name(other)),
                );
                return None;
            }
        };
        if prefix.is_empty() {
            self.error(v.span(), format!("`rule.prefix` is empty; {expected}"));
            return None;
        }
        Some(prefix)
    }

    fn check_example(&mut self, rule: &Rule, ex: &Example) {
        let argvs = match crate::shell::example_argvs(&ex.text) {
            Ok(a) => a,
            Err(e) => {
                self.error(
                    ex.span.clone(),
                    format!(
                        "{}: example \"{}\" cannot be analysed: {e}",
                        rule.name, ex.text
                    ),
                );
                return;
            }
        };
        let matched = argvs.iter().any(|argv| {
            ArgvShape::new(argv)
                .map(|shape| crate::rules::prefix_matches(&rule.prefix, &shape))
                .unwrap_or(false)
        });
        if matched != ex.should_match {
            let (key, verb) = if ex.should_match {
                ("match", "does not match")
            } else {
                ("not_match", "matches")
            };
            self.error(
                ex.span.clone(),
                format!(
                    "{}: the `{key}` example \"{}\" {verb} the rule's prefix `{}`",
                    rule.name,
                    ex.text,
                    display_prefix(&rule.prefix)
                ),
            );
        }
    }
}

struct Example {
    text: String,
    span: Range<usize>,
    should_match: bool,
}

/// `["git", ["push", "pull"]]` shown as `git {push,pull}`.
pub fn display_prefix(prefix: &[Vec<String>]) -> String {
    prefix
        .iter()
        .map(|alts| {
            if alts.len() == 1 {
                alts[0].clone()
            } else {
                format!("{{{}}}", alts.join(","))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `what[i]`, the name of a rule from a command list. Written out by hand
/// because `format!` costs about a thousand instructions a call and the
/// built-in default names some two hundred rules this way on every cold start.
fn indexed_name(what: &str, i: usize) -> String {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = i;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut name = String::with_capacity(what.len() + 2 + digits.len() - at);
    name.push_str(what);
    name.push('[');
    for &d in &digits[at..] {
        name.push(char::from(d));
    }
    name.push(']');
    name
}

fn expand_prefix(prefix: &[Vec<String>]) -> Vec<String> {
    if prefix.iter().all(|alts| alts.len() == 1) {
        // A plain list entry, as nearly every rule is: its one key, the words
        // joined, made directly (this runs for each rule on every start).
        let mut key = String::with_capacity(prefix.iter().map(|alts| alts[0].len() + 1).sum());
        for alts in prefix {
            if !key.is_empty() {
                key.push(' ');
            }
            key.push_str(&alts[0]);
        }
        return vec![key];
    }
    let mut out = vec![String::new()];
    for alts in prefix {
        let mut next = Vec::new();
        for base in &out {
            for a in alts {
                next.push(if base.is_empty() {
                    a.clone()
                } else {
                    format!("{base} {a}")
                });
                if next.len() > 256 {
                    return next;
                }
            }
        }
        out = next;
    }
    out
}

fn type_name(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// `section.name` or `section.subsection.name` as git spells them: the section
/// of letters, digits and `-`; the name of letters, digits and `-`, starting
/// with a letter; the subsection anything on one line without `"` or `\`.
pub(crate) fn is_git_config_key(key: &str) -> bool {
    let (Some((section, rest)), Some((_, name))) = (key.split_once('.'), key.rsplit_once('.'))
    else {
        return false;
    };
    let subsection = rest.rsplit_once('.').map(|(s, _)| s);
    !section.is_empty()
        && section
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && subsection.is_none_or(|s| !s.contains(['"', '\\', '\n', '\r', '\0']))
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The valid key closest to a misspelt one, if any is close enough.
fn closest<'a>(key: &str, valid: &[&'a str]) -> Option<&'a str> {
    if key.len() >= 3 {
        if let Some(v) = valid.iter().find(|v| v.starts_with(key)) {
            return Some(v);
        }
    }
    valid
        .iter()
        .map(|v| (strsim::damerau_levenshtein(key, v), *v))
        .filter(|(d, v)| *d <= 2.max(v.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, v)| v)
}

/// A host pattern for `network.allow`/`network.deny`: `host`, `*.suffix`, each
/// optionally `:port`. Over-broad allow patterns are refused.
pub fn check_host_pattern(p: &str, is_allow: bool) -> Result<(), String> {
    let expected = "expected a host such as \"api.example.com\" or \"*.example.com\", optionally with \":443\"";
    if p.trim().is_empty() {
        return Err(format!("empty pattern; {expected}"));
    }
    if p.contains("://") {
        return Err(format!(
            "patterns name hosts, not URLs: drop the scheme; {expected}"
        ));
    }
    if p.contains('/') || p.contains(char::is_whitespace) || p.contains('@') {
        return Err(format!("not a host pattern; {expected}"));
    }
    let (host, port) = match p.rsplit_once(':') {
        Some((h, port)) => (h, Some(port)),
        None => (p, None),
    };
    if let Some(port) = port {
        match port.parse::<u16>() {
            Ok(n) if n > 0 => {}
            _ => return Err(format!("port `{port}` must be a number from 1 to 65535")),
        }
    }
    if host == "*" {
        return Err(if is_allow {
            "`*` allows every host; use network mode \"open\" if that is meant, or name the hosts (\"api.example.com\", \"*.example.com\")".to_string()
        } else {
            format!("`*` as a host; {expected}")
        });
    }
    let labels: Vec<&str> = host.split('.').collect();
    let wildcard = labels.first() == Some(&"*");
    let named = if wildcard { &labels[1..] } else { &labels[..] };
    if named.iter().any(|l| l.contains('*')) {
        return Err(format!(
            "`*` may only stand alone as the first label (\"*.example.com\"); {expected}"
        ));
    }
    for l in named {
        if l.is_empty()
            || l.len() > 63
            || !l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            || l.starts_with('-')
            || l.ends_with('-')
        {
            return Err(format!("`{host}` is not a valid host name; {expected}"));
        }
    }
    if wildcard && is_allow && named.len() < 2 {
        return Err(format!(
            "`{host}` is over-broad: it matches every host under a top-level domain; name a registered domain such as \"*.example.com\""
        ));
    }
    if wildcard && is_allow && named.len() == 2 && is_two_label_public_suffix(named) {
        return Err(format!(
            "`{host}` is over-broad: `{}` is a public suffix; name a registered domain under it",
            named.join(".")
        ));
    }
    Ok(())
}

fn is_two_label_public_suffix(labels: &[&str]) -> bool {
    const SECOND: &[&str] = &["co", "com", "net", "org", "gov", "ac", "edu"];
    labels.len() == 2 && labels[1].len() == 2 && SECOND.contains(&labels[0])
}

/// Make a path absolute and remove `.`/`..` lexically (no filesystem access).
pub fn absolute_lexical(p: &Path) -> PathBuf {
    // The gate calls this for every path it checks; most are already normal.
    if is_normal_absolute(p) {
        return p.to_path_buf();
    }
    absolute_lexical_walk(p)
}

/// Absolute, and no `.`, `..`, empty component or trailing slash: a path
/// that [`absolute_lexical`] would give back unchanged.
pub(crate) fn is_normal_absolute(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let b = p.as_os_str().as_bytes();
    match b {
        [b'/'] => true,
        [b'/', rest @ ..] => rest
            .split(|&c| c == b'/')
            .all(|part| !matches!(part, b"" | b"." | b"..")),
        _ => false,
    }
}

fn absolute_lexical_walk(p: &Path) -> PathBuf {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shortcut for normal paths must agree with the full walk.
    #[test]
    fn absolute_lexical_shortcut_agrees_with_the_walk() {
        let parts = ["", ".", "..", "a", "b.c", "..x", ".x", "x.", "/"];
        let mut checked = 0;
        for first in ["/", "", "./", "../"] {
            for a in parts {
                for b in parts {
                    for c in parts {
                        let text = format!("{first}{a}/{b}/{c}");
                        let p = Path::new(&text);
                        assert_eq!(absolute_lexical(p), absolute_lexical_walk(p), "{text:?}");
                        checked += usize::from(is_normal_absolute(p));
                    }
                }
            }
        }
        assert!(checked > 50, "the shortcut was taken only {checked} times");
        assert!(is_normal_absolute(Path::new("/")));
        assert!(!is_normal_absolute(Path::new("/a/")));
        assert!(!is_normal_absolute(Path::new("//a")));
        assert!(!is_normal_absolute(Path::new("a/b")));
    }

    #[test]
    fn indexed_name_is_what_format_writes() {
        for i in [0, 1, 9, 10, 99, 100, 12345, usize::MAX] {
            assert_eq!(
                indexed_name("commands.allow", i),
                format!("commands.allow[{i}]")
            );
        }
    }
}
