//! The knowledge base's tables: the built-in `programs.toml` (top level) and a
//! policy's `[knowledge]` section read with the same code, so both get errors
//! with a line and column and a did-you-mean.

use super::{closest, type_name, SValue, Walker};
use crate::knowledge::{
    Action, Effect, EnvEntry, InnerCommand, Kind, Knowledge, List, LongOption, ProgramEntry,
    Script, Takes, Text, Trigger, FORMAT_VERSION,
};
use crate::shell::Access;
use std::ops::Range;
use toml::de::{DeTable, DeValue};

pub(super) const KNOWLEDGE_KEYS: &[&str] = &["version", "program", "env", "config_files"];
const PROGRAM_KEYS: &[&str] = &[
    "names",
    "subcommand",
    "about",
    "abbreviations",
    "subcommands",
    "globals_anywhere",
    "options_first",
    "old_style",
    "short_values",
    "short_optional",
    "stop_after",
    "synonyms",
    "long",
    "effect",
];
const EFFECT_KEYS: &[&str] = &[
    "option",
    "argument",
    "any_argument",
    "always",
    "min_args",
    "when",
    "requires",
    "unless",
    "kind",
    "action",
    "path",
    "inner",
    "script",
    "reason",
];
const ENV_ENTRY_KEYS: &[&str] = &["names", "kind", "action", "reason", "options_of"];
const ACCESS: [(&str, Access); 2] = [("read", Access::Read), ("write", Access::Write)];

impl Walker<'_> {
    /// A knowledge table (`programs.toml`'s top level, or `[knowledge]`).
    pub(super) fn knowledge(&mut self, t: &DeTable<'_>, section: &str) -> Knowledge {
        let mut version = FORMAT_VERSION;
        let mut programs = Vec::new();
        let mut env = Vec::new();
        let mut config_files = Vec::new();
        for (key, v) in self.entries(t, section, KNOWLEDGE_KEYS) {
            match key {
                "version" => {
                    if let Some(n) = self.integer(v, "version", 1, FORMAT_VERSION) {
                        version = n;
                    }
                }
                "program" => {
                    for (table, span) in self.tables(v, "program") {
                        if let Some(p) = self.program_entry(table, span) {
                            programs.push(p);
                        }
                    }
                }
                "env" => {
                    for (table, span) in self.tables(v, "env") {
                        if let Some(e) = self.env_entry(table, span) {
                            env.push(e);
                        }
                    }
                }
                "config_files" => {
                    for (f, sp) in self.strings(v, key) {
                        if f.is_empty() || f.starts_with('/') || f.ends_with('/') {
                            self.error(sp, format!("a config file is a file name or a path relative to a home directory (\".gitconfig\", \".config/git/config\"), found \"{f}\""));
                        } else {
                            config_files.push(f.into());
                        }
                    }
                }
                _ => {}
            }
        }
        let mut kb = Knowledge::new(version, programs.into(), env.into());
        kb.config_files = config_files.into();
        kb
    }

    fn tables<'a, 'i>(
        &mut self,
        v: &'a SValue<'i>,
        what: &str,
    ) -> Vec<(&'a DeTable<'i>, Range<usize>)> {
        let DeValue::Array(items) = v.get_ref() else {
            self.error(
                v.span(),
                format!("`{what}` must be an array of tables: write each as [[{what}]]"),
            );
            return vec![];
        };
        let mut out = Vec::new();
        for item in items.iter() {
            match item.get_ref() {
                DeValue::Table(t) => out.push((t, item.span())),
                other => self.error(
                    item.span(),
                    format!("each `{what}` must be a table, found {}", type_name(other)),
                ),
            }
        }
        out
    }

    fn boolean(&mut self, v: &SValue<'_>, what: &str) -> bool {
        match v.get_ref() {
            DeValue::Boolean(b) => *b,
            other => {
                self.error(
                    v.span(),
                    format!("`{what}` must be true or false, found {}", type_name(other)),
                );
                false
            }
        }
    }

    fn origin_at(&self, span: &Range<usize>) -> String {
        let l = self.location(span.start);
        format!("{}:{}", l.origin, l.line)
    }

    fn program_entry(&mut self, t: &DeTable<'_>, span: Range<usize>) -> Option<ProgramEntry> {
        let mut p = ProgramEntry {
            names: List::default(),
            subcommand: None,
            abbreviations: false,
            subcommands: false,
            globals_anywhere: false,
            options_first: false,
            old_style: false,
            short_values: List::default(),
            short_optional: List::default(),
            stop_after: List::default(),
            synonyms: List::default(),
            long: List::default(),
            effects: List::default(),
            about: Text::default(),
            origin: self.origin_at(&span).into(),
        };
        let mut effects: Vec<(&DeTable<'_>, Range<usize>)> = vec![];
        let mut stop_after = vec![];
        for (key, v) in self.entries(t, "program", PROGRAM_KEYS) {
            match key {
                "names" => {
                    p.names = self
                        .strings(v, "names")
                        .into_iter()
                        .map(|x| x.0.into())
                        .collect::<Vec<_>>()
                        .into()
                }
                "subcommand" => p.subcommand = self.string(v, "subcommand").map(Text::from),
                "about" => p.about = self.string(v, "about").unwrap_or_default().into(),
                "abbreviations" => p.abbreviations = self.boolean(v, key),
                "subcommands" => p.subcommands = self.boolean(v, key),
                "globals_anywhere" => p.globals_anywhere = self.boolean(v, key),
                "options_first" => p.options_first = self.boolean(v, key),
                "old_style" => p.old_style = self.boolean(v, key),
                "short_values" | "short_optional" => {
                    let letters: List<char> = self
                        .string(v, key)
                        .unwrap_or_default()
                        .chars()
                        .collect::<Vec<_>>()
                        .into();
                    if key == "short_values" {
                        p.short_values = letters;
                    } else {
                        p.short_optional = letters;
                    }
                }
                "stop_after" => stop_after = self.strings(v, key),
                "synonyms" => {
                    for (s, sp) in self.strings(v, key) {
                        let c: Vec<char> = s.chars().collect();
                        match c.as_slice() {
                            [from, '=', to] => p.synonyms.to_mut().push((*from, *to)),
                            _ => self.error(
                                sp,
                                format!("a synonym is written \"R=r\" (a letter, `=`, the letter it means), found \"{s}\""),
                            ),
                        }
                    }
                }
                "long" => {
                    for (s, sp) in self.strings(v, key) {
                        match parse_long(&s) {
                            Ok(o) => p.long.to_mut().push(o),
                            Err(why) => self.error(sp, why),
                        }
                    }
                }
                "effect" => effects = self.tables(v, "effect"),
                _ => {}
            }
        }
        if p.names.is_empty() {
            self.error(
                span,
                "a [[program]] needs `names`, the program's names (names = [\"tar\", \"gtar\"])"
                    .into(),
            );
            return None;
        }
        for (s, sp) in stop_after {
            if let Some(k) = self.option_key(&p, &s, sp) {
                p.stop_after.to_mut().push(k.into());
            }
        }
        for (t, sp) in effects {
            if let Some(e) = self.effect(&p, t, sp) {
                p.effects.to_mut().push(e);
            }
        }
        Some(p)
    }

    /// An option as an effect names it, to its canonical key (`--recursive` is
    /// `-r` when it means r; `-R` is `-r` when R means r).
    fn option_key(&mut self, p: &ProgramEntry, s: &str, span: Range<usize>) -> Option<String> {
        if let Some(name) = s.strip_prefix("--") {
            if let Some(o) = p.long.iter().find(|o| o.name == name) {
                return Some(match o.short {
                    Some(c) => format!("-{c}"),
                    None => o.key.to_string(),
                });
            }
        } else if let Some(o) = p.long.iter().find(|o| o.key == s) {
            return Some(o.key.to_string());
        } else if let Some(rest) = s.strip_prefix('-') {
            let mut cs = rest.chars();
            if let (Some(c), None) = (cs.next(), cs.next()) {
                return Some(format!("-{}", p.canonical_short(c)));
            }
        }
        let keys: Vec<&str> = p.long.iter().map(|o| &*o.key).collect();
        let hint = match closest(s, &keys) {
            Some(best) => format!("; did you mean `{best}`?"),
            None => String::new(),
        };
        self.error(
            span,
            format!(
                "`{s}` is not an option of `{}`: name a short option (\"-x\") or one listed in its `long`{hint}",
                p.title()
            ),
        );
        None
    }

    fn effect(&mut self, p: &ProgramEntry, t: &DeTable<'_>, span: Range<usize>) -> Option<Effect> {
        let mut trigger = None;
        let mut trigger_given = false;
        let (mut kind_given, mut action_given) = (false, false);
        let mut min_args = 0usize;
        let mut e = Effect {
            trigger: Trigger::Always { min_args: 0 },
            when: List::default(),
            requires: List::default(),
            unless: List::default(),
            kind: Kind::Exec,
            action: Action::Judge,
            path: None,
            inner: InnerCommand::None,
            script: None,
            reason: Text::default(),
        };
        let mut kind = None;
        let mut action = None;
        for (key, v) in self.entries(t, "effect", EFFECT_KEYS) {
            trigger_given |= matches!(key, "option" | "argument" | "any_argument" | "always");
            kind_given |= key == "kind";
            action_given |= key == "action";
            match key {
                "option" => {
                    if let Some(s) = self.string(v, key) {
                        trigger = self
                            .option_key(p, &s, v.span())
                            .map(|k| Trigger::Option(k.into()));
                    }
                }
                "argument" => {
                    if let Some(n) = self.integer(v, key, 1, 64) {
                        trigger = Some(Trigger::Argument(n as usize - 1));
                    }
                }
                "any_argument" => {
                    let any = self.boolean(v, key);
                    trigger = any.then_some(Trigger::AnyArgument).or(trigger);
                }
                "always" => {
                    let always = self.boolean(v, key);
                    trigger = always
                        .then_some(Trigger::Always { min_args: 0 })
                        .or(trigger);
                }
                "min_args" => min_args = self.integer(v, key, 0, 64).unwrap_or(0) as usize,
                "when" => {
                    e.when = self
                        .strings(v, key)
                        .into_iter()
                        .map(|x| x.0.into())
                        .collect::<Vec<_>>()
                        .into()
                }
                "requires" | "unless" => {
                    let mut keys = vec![];
                    for (s, sp) in self.strings(v, key) {
                        if let Some(k) = self.option_key(p, &s, sp) {
                            keys.push(k.into());
                        }
                    }
                    if key == "requires" {
                        e.requires = keys.into();
                    } else {
                        e.unless = keys.into();
                    }
                }
                "kind" => kind = self.enum_value(v, "effect.kind", &Kind::ALL),
                "action" => action = self.enum_value(v, "effect.action", &Action::ALL),
                "path" => e.path = self.enum_value(v, "effect.path", &ACCESS),
                "inner" => {
                    if let Some(i) = self.enum_value(v, "effect.inner", &InnerCommand::ALL) {
                        e.inner = i;
                    }
                }
                "script" => e.script = self.enum_value(v, "effect.script", &Script::ALL),
                "reason" => e.reason = self.string(v, key).unwrap_or_default().into(),
                _ => {}
            }
        }
        let Some(trigger) = trigger else {
            if trigger_given {
                return None;
            }
            self.error(
                span,
                format!(
                    "an effect of `{}` needs `option`, `argument`, `any_argument = true` or `always = true`",
                    p.title()
                ),
            );
            return None;
        };
        e.trigger = match trigger {
            Trigger::Always { .. } => Trigger::Always { min_args },
            t => t,
        };
        let (Some(kind), Some(action)) = (kind, action) else {
            if kind_given && action_given {
                return None; // already reported
            }
            self.error(
                span,
                format!("an effect of `{}` needs `kind` (exec, delete, write, read, network, config, code) and `action` (judge, approval_required, deny, on_unknown)", p.title()),
            );
            return None;
        };
        e.kind = kind;
        e.action = action;
        if e.action != Action::Judge && e.reason.trim().is_empty() {
            self.error(
                span,
                format!("an effect of `{}` that is not `judge` needs a `reason`, written for a model to read", p.title()),
            );
            return None;
        }
        Some(e)
    }

    fn env_entry(&mut self, t: &DeTable<'_>, span: Range<usize>) -> Option<EnvEntry> {
        let mut names = vec![];
        let mut names_given = false;
        let mut kinds_given = 0;
        let mut kind = None;
        let mut action = None;
        let mut reason = String::new();
        let mut options_of = None;
        for (key, v) in self.entries(t, "env", ENV_ENTRY_KEYS) {
            match key {
                "names" => {
                    names_given = true;
                    for (n, sp) in self.strings(v, key) {
                        let bare = n.strip_suffix('*').unwrap_or(&n);
                        let ok = !bare.is_empty()
                            && bare.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                            && !bare.starts_with(|c: char| c.is_ascii_digit());
                        if ok {
                            names.push(n.into());
                        } else {
                            self.error(
                                sp,
                                format!("`{n}` is not a variable name (or a prefix ending in `*`)"),
                            );
                        }
                    }
                }
                "kind" => {
                    kinds_given += 1;
                    kind = self.enum_value(v, "env.kind", &Kind::ALL)
                }
                "action" => {
                    kinds_given += 1;
                    action = self.enum_value(v, "env.action", &Action::ALL)
                }
                "reason" => reason = self.string(v, key).unwrap_or_default(),
                "options_of" => options_of = self.string(v, key).map(Into::into),
                _ => {}
            }
        }
        let (Some(kind), Some(action)) = (kind, action) else {
            if kinds_given == 2 {
                return None; // already reported
            }
            self.error(span, "an [[env]] entry needs `kind` and `action`".into());
            return None;
        };
        if names.is_empty() {
            if !names_given {
                self.error(span, "an [[env]] entry needs `names`".into());
            }
            return None;
        }
        if action != Action::Judge && reason.trim().is_empty() {
            self.error(
                span,
                "an [[env]] entry that is not `judge` needs a `reason`".into(),
            );
            return None;
        }
        Some(EnvEntry {
            names: names.into(),
            kind,
            action,
            reason: reason.into(),
            origin: self.origin_at(&span).into(),
            options_of,
        })
    }
}

/// `name`, `name=` (takes a value), `name[=]` (an optional, attached value),
/// `name...` (a command up to `;` or `+`), each optionally `/x` (means -x).
/// A name starting with `-` is a single-dash whole word (`-exec...`).
fn parse_long(s: &str) -> Result<LongOption, String> {
    let (spec, short) = match s.rsplit_once('/') {
        Some((spec, letter)) if letter.chars().count() == 1 => (spec, letter.chars().next()),
        _ => (s, None),
    };
    let (name, takes) = if let Some(n) = spec.strip_suffix("[=]") {
        (n, Takes::Optional)
    } else if let Some(n) = spec.strip_suffix("...") {
        (n, Takes::Command)
    } else if let Some(n) = spec.strip_suffix('=') {
        (n, Takes::Required)
    } else {
        (spec, Takes::No)
    };
    let bare = name.strip_prefix('-').unwrap_or(name);
    if bare.is_empty()
        || name.starts_with("--")
        || !bare
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        return Err(format!(
            "a long option is written \"name\", \"name=\", \"name[=]\" or \"name...\", optionally with \"/x\" for the short letter it means (a leading `-` for a single-dash word such as \"-exec...\"); found \"{s}\""
        ));
    }
    let key = if name.starts_with('-') {
        name.to_string()
    } else {
        format!("--{name}")
    };
    Ok(LongOption {
        name: name.to_string().into(),
        key: key.into(),
        takes,
        short,
    })
}
