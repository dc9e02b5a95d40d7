//! The built-in knowledge base as it was when airlock was built.
//!
//! Parsing `programs.toml` through the policy loader costs about 1.4 ms, and
//! every airlock process (`airlock run`, `check`, `mcp`) pays it on its cold
//! path. So the loader's result is kept as static data in
//! `builtin_generated.rs` (written by the real loader and `generate.rs`, a
//! test module, never by hand): [`ProgramEntry`], [`Effect`], [`super::LongOption`]
//! and [`super::EnvEntry`] values whose lists and strings borrow the data
//! ([`super::List`], [`super::Text`]). [`knowledge`] copies nothing: what
//! remains is the name index (`cargo bench -p airlock-policy --bench gate --
//! 'load:'`). A cold process touches no heap for the entries, which at ~270
//! KB of small allocations was the largest part of `airlock run`'s heap.
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
//! The generated file is plain statics (quick to compile, no code to
//! optimise): `Cow::Borrowed` is written out, since a `const fn` call would
//! not give its temporaries a `'static` lifetime.

use super::builtin_generated::{CONFIG_FILES, ENV, PROGRAMS, SOURCE_HASH, VERSION};
use super::{Action, Effect, InnerCommand, Kind, Knowledge, ProgramEntry, Trigger, PROGRAMS_TOML};
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

/// The fields a generated program leaves out (`..PROGRAM`): the loader's
/// defaults, so that the file only says what programs.toml says.
pub const PROGRAM: ProgramEntry = ProgramEntry {
    names: Cow::Borrowed(&[]),
    subcommand: None,
    abbreviations: false,
    subcommands: false,
    globals_anywhere: false,
    options_first: false,
    old_style: false,
    short_values: Cow::Borrowed(&[]),
    short_optional: Cow::Borrowed(&[]),
    stop_after: Cow::Borrowed(&[]),
    synonyms: Cow::Borrowed(&[]),
    long: Cow::Borrowed(&[]),
    effects: Cow::Borrowed(&[]),
    about: Cow::Borrowed(""),
    origin: Cow::Borrowed(""),
};

/// The fields a generated effect leaves out (`..EFFECT`); the generator
/// always writes `trigger`, `kind` and `action`.
pub const EFFECT: Effect = Effect {
    trigger: Trigger::Always { min_args: 0 },
    when: Cow::Borrowed(&[]),
    requires: Cow::Borrowed(&[]),
    unless: Cow::Borrowed(&[]),
    kind: Kind::Exec,
    action: Action::Judge,
    path: None,
    inner: InnerCommand::None,
    script: None,
    reason: Cow::Borrowed(""),
};

/// The built-in knowledge base, from the data made when airlock was built:
/// its entries are borrowed as they are, only the name indexes are built.
pub fn knowledge() -> Knowledge {
    let mut kb = Knowledge::new(VERSION, Cow::Borrowed(PROGRAMS), Cow::Borrowed(ENV));
    kb.config_files = Cow::Borrowed(CONFIG_FILES);
    kb
}
