//! The built-in knowledge base as it was when airlock was built.
//!
//! Parsing `programs.toml` through the policy loader costs about 1.4 ms, and
//! every airlock process (`airlock run`, `check`, `mcp`) pays it on its cold
//! path. So the loader's result is kept as static data in
//! `builtin_generated.rs` (written by the real loader and `generate.rs`, a
//! test module, never by hand), and [`knowledge`] turns that data into a
//! [`Knowledge`] with no parsing: its strings are borrowed from the data
//! ([`super::Text`]), so what remains is its vectors and its index (30-40 µs
//! against 1.5 ms,
//! `cargo bench -p airlock-policy --bench gate -- 'load:'`).
//!
//! Two guards keep the data equal to what the loader makes of the text:
//! - at build time, the data records a hash of the `programs.toml` it was made
//!   from, and the crate does not compile when the text has changed since
//!   (the message names the command that regenerates the data);
//! - the tests `knowledge_generated_*` (`cargo nextest run -p airlock-policy`)
//!   compare the data with the loader's result, field by field and index by
//!   index, and the checked-in file with a fresh rendering, byte by byte, so a
//!   change of the loader's semantics (an origin's format, a default) is caught
//!   too.
//!
//! These types mirror [`ProgramEntry`], [`Effect`], [`LongOption`] and
//! [`EnvEntry`] with `&'static` data, so that the generated file is plain
//! statics (quick to compile, no code to optimise). Enums without data are
//! used as they are.

use super::builtin_generated::{CONFIG_FILES, ENV, PROGRAMS, SOURCE_HASH, VERSION};
use super::{
    Action, Effect, EnvEntry, InnerCommand, Kind, Knowledge, LongOption, ProgramEntry, Script,
    Takes, Text, Trigger, PROGRAMS_TOML,
};
use crate::shell::Access;
use std::borrow::Cow;

/// The command that rewrites `builtin_generated.rs` from `programs.toml` (a
/// macro, so that the compile-time check's message can include it).
macro_rules! regenerate_command {
    () => {
        "AIRLOCK_REGENERATE=1 cargo nextest run -p airlock-policy -E 'test(knowledge_generated)'"
    };
}
#[cfg(test)]
pub(super) use regenerate_command;

// A `programs.toml` edit without the data following does not build: the tests
// catch it too, but a build whose tests were not run would ship it.
// `option_env!` is tracked by cargo, so setting or unsetting the variable
// rebuilds the crate.
const _: () = assert!(
    option_env!("AIRLOCK_REGENERATE").is_some() || SOURCE_HASH == text_hash(PROGRAMS_TOML),
    "{}",
    concat!(
        "crates/airlock-policy/src/knowledge/programs.toml changed after builtin_generated.rs ",
        "was made from it; regenerate it with: ",
        regenerate_command!()
    )
);

/// FNV-1a (64 bits) of a text: a `const fn`, so the check above runs in the
/// compiler. It guards against forgetting, not against an adversary.
pub const fn text_hash(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

/// A [`ProgramEntry`] as static data.
pub struct StaticProgram {
    pub names: &'static [&'static str],
    pub subcommand: Option<&'static str>,
    pub abbreviations: bool,
    pub subcommands: bool,
    pub globals_anywhere: bool,
    pub options_first: bool,
    pub old_style: bool,
    pub short_values: &'static [char],
    pub short_optional: &'static [char],
    pub stop_after: &'static [&'static str],
    pub synonyms: &'static [(char, char)],
    pub long: &'static [StaticLong],
    pub effects: &'static [StaticEffect],
    pub about: &'static str,
    pub origin: &'static str,
}

/// The fields a generated program leaves out (`..PROGRAM`): the loader's
/// defaults, so that the file only says what programs.toml says.
pub const PROGRAM: StaticProgram = StaticProgram {
    names: &[],
    subcommand: None,
    abbreviations: false,
    subcommands: false,
    globals_anywhere: false,
    options_first: false,
    old_style: false,
    short_values: &[],
    short_optional: &[],
    stop_after: &[],
    synonyms: &[],
    long: &[],
    effects: &[],
    about: "",
    origin: "",
};

/// A [`LongOption`] as static data.
pub struct StaticLong {
    pub name: &'static str,
    pub key: &'static str,
    pub takes: Takes,
    pub short: Option<char>,
}

/// A [`Trigger`] as static data.
pub enum StaticTrigger {
    Option(&'static str),
    Argument(usize),
    AnyArgument,
    Always { min_args: usize },
}

/// An [`Effect`] as static data.
pub struct StaticEffect {
    pub trigger: StaticTrigger,
    pub when: &'static [&'static str],
    pub requires: &'static [&'static str],
    pub unless: &'static [&'static str],
    pub kind: Kind,
    pub action: Action,
    pub path: Option<Access>,
    pub inner: InnerCommand,
    pub script: Option<Script>,
    pub reason: &'static str,
}

/// The fields a generated effect leaves out (`..EFFECT`); the generator
/// always writes `trigger`, `kind` and `action`.
pub const EFFECT: StaticEffect = StaticEffect {
    trigger: StaticTrigger::Always { min_args: 0 },
    when: &[],
    requires: &[],
    unless: &[],
    kind: Kind::Exec,
    action: Action::Judge,
    path: None,
    inner: InnerCommand::None,
    script: None,
    reason: "",
};

/// An [`EnvEntry`] as static data.
pub struct StaticEnv {
    pub names: &'static [&'static str],
    pub kind: Kind,
    pub action: Action,
    pub reason: &'static str,
    pub origin: &'static str,
    pub options_of: Option<&'static str>,
}

/// The built-in knowledge base, from the data made when airlock was built.
pub fn knowledge() -> Knowledge {
    let mut kb = Knowledge::new(
        VERSION,
        PROGRAMS.iter().map(program).collect(),
        ENV.iter().map(env).collect(),
    );
    kb.config_files = strings(CONFIG_FILES);
    kb
}

fn strings(s: &[&'static str]) -> Vec<Text> {
    s.iter().map(|x| Cow::Borrowed(*x)).collect()
}

fn program(p: &StaticProgram) -> ProgramEntry {
    ProgramEntry {
        names: strings(p.names),
        subcommand: p.subcommand.map(Cow::Borrowed),
        abbreviations: p.abbreviations,
        subcommands: p.subcommands,
        globals_anywhere: p.globals_anywhere,
        options_first: p.options_first,
        old_style: p.old_style,
        short_values: p.short_values.to_vec(),
        short_optional: p.short_optional.to_vec(),
        stop_after: strings(p.stop_after),
        synonyms: p.synonyms.to_vec(),
        long: p
            .long
            .iter()
            .map(|o| LongOption {
                name: Cow::Borrowed(o.name),
                key: Cow::Borrowed(o.key),
                takes: o.takes,
                short: o.short,
            })
            .collect(),
        effects: p.effects.iter().map(effect).collect(),
        about: Cow::Borrowed(p.about),
        origin: Cow::Borrowed(p.origin),
    }
}

fn effect(e: &StaticEffect) -> Effect {
    Effect {
        trigger: match e.trigger {
            StaticTrigger::Option(o) => Trigger::Option(Cow::Borrowed(o)),
            StaticTrigger::Argument(n) => Trigger::Argument(n),
            StaticTrigger::AnyArgument => Trigger::AnyArgument,
            StaticTrigger::Always { min_args } => Trigger::Always { min_args },
        },
        when: strings(e.when),
        requires: strings(e.requires),
        unless: strings(e.unless),
        kind: e.kind,
        action: e.action,
        path: e.path,
        inner: e.inner,
        script: e.script,
        reason: Cow::Borrowed(e.reason),
    }
}

fn env(e: &StaticEnv) -> EnvEntry {
    EnvEntry {
        names: strings(e.names),
        kind: e.kind,
        action: e.action,
        reason: Cow::Borrowed(e.reason),
        origin: Cow::Borrowed(e.origin),
        options_of: e.options_of.map(Cow::Borrowed),
    }
}
