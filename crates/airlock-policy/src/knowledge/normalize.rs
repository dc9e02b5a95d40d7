//! Option normalisation: one pass over an argv, guided by the knowledge base.

use super::{Kb, ProgramEntry, Takes};

/// One word (or option) of a normalised argv.
#[derive(Debug, Clone, PartialEq)]
pub enum Word<'a> {
    /// A short option, after synonyms (`-R` of rm is `r`).
    Short {
        letter: char,
        value: Option<&'a str>,
        /// Index in the argv of the word it came from.
        at: usize,
        /// Index of the first argv word after it and its value.
        next: usize,
        owner: Option<&'a ProgramEntry>,
    },
    /// A long option under its full name (`--rec` becomes `--recursive`), or a
    /// single-dash whole-word option (`-delete`). `key` is `--name` or `-name`.
    Long {
        key: &'a str,
        /// The short letter it means, if any (`--force` is `-f`).
        short: Option<char>,
        value: Option<&'a str>,
        at: usize,
        next: usize,
        owner: Option<&'a ProgramEntry>,
    },
    /// A positional argument; `index` counts from 0 after the subcommand (for
    /// the subcommand's entry) or after the program.
    Arg {
        text: &'a str,
        at: usize,
        index: usize,
        owner: Option<&'a ProgramEntry>,
    },
    /// `--`.
    End { at: usize },
}

impl Word<'_> {
    /// `-r`, `--recursive` (a long option that means a letter is keyed by the letter).
    pub fn key(&self) -> Option<String> {
        match self {
            Word::Short { letter, .. } => Some(format!("-{letter}")),
            Word::Long { short: Some(c), .. } => Some(format!("-{c}")),
            Word::Long { key, .. } => Some((*key).to_string()),
            _ => None,
        }
    }

    /// Index in the argv of the word it came from.
    pub fn at(&self) -> usize {
        match self {
            Word::Short { at, .. } | Word::Long { at, .. } | Word::Arg { at, .. } => *at,
            Word::End { at } => *at,
        }
    }

    pub fn owner(&self) -> Option<&ProgramEntry> {
        match self {
            Word::Short { owner, .. } | Word::Long { owner, .. } | Word::Arg { owner, .. } => {
                *owner
            }
            Word::End { .. } => None,
        }
    }

    /// How the normalised form shows it.
    pub fn shown(&self) -> String {
        match self {
            Word::Short {
                letter,
                value: None,
                ..
            } => format!("-{letter}"),
            Word::Short {
                letter,
                value: Some(v),
                ..
            } => format!("-{letter} {v}"),
            Word::Long {
                key, value: None, ..
            } => (*key).to_string(),
            Word::Long {
                key,
                value: Some(v),
                ..
            } => format!("{key}={v}"),
            Word::Arg { text, .. } => (*text).to_string(),
            Word::End { .. } => "--".into(),
        }
    }
}

/// An argv in normalised form.
#[derive(Debug, Clone)]
pub struct Normalized<'a> {
    /// argv[0] up to its last `/`.
    pub program: &'a str,
    pub entry: Option<&'a ProgramEntry>,
    /// The subcommand's entry (`git rebase`), when there is one.
    pub sub_entry: Option<&'a ProgramEntry>,
    pub words: Vec<Word<'a>>,
    /// The argv positions (after the program, up to one past the last word)
    /// where a word that begins with `-` would have been read as an option,
    /// each with whose options: the subcommand's (`true`, with the
    /// program's too if it takes them anywhere) or the program's. A glob
    /// there may expand to one (see `glob_options`).
    pub option_positions: Vec<(usize, bool)>,
}

impl Normalized<'_> {
    /// The normalised argv, one element per option (with its value) or argument.
    pub fn shown(&self, argv0: &str) -> Vec<String> {
        std::iter::once(argv0.to_string())
            .chain(self.words.iter().map(Word::shown))
            .collect()
    }
}

/// Global options, before the subcommand, that take a separate value, for
/// programs the knowledge base has no entry for.
fn legacy_value_options(program: &str) -> &'static [&'static str] {
    match program {
        "docker" | "podman" => &[
            "-H",
            "--host",
            "--context",
            "-c",
            "--config",
            "--log-level",
            "-l",
        ],
        "apt" | "apt-get" => &[
            "-o",
            "-c",
            "-t",
            "--option",
            "--config-file",
            "--target-release",
        ],
        "go" => &["-C"],
        _ => &[],
    }
}

/// The programs rustup's proxies stand for: each reads a first argument
/// `+TOOLCHAIN` as the toolchain to run.
pub(crate) fn is_rustup_proxy(program: &str) -> bool {
    matches!(
        program,
        "cargo"
            | "rustc"
            | "rustdoc"
            | "rustfmt"
            | "cargo-fmt"
            | "cargo-clippy"
            | "clippy-driver"
            | "cargo-miri"
            | "rust-gdb"
            | "rust-gdbgui"
            | "rust-lldb"
            | "rls"
            | "rust-analyzer"
    )
}

/// Normalise an argv. Linear in its length: each word is read once, and a long
/// option is looked up in its program's entry (a bounded list).
pub fn normalize<'a>(argv: &'a [String], kb: Kb<'a>) -> Normalized<'a> {
    let argv0 = argv.first().map_or("", String::as_str);
    let program = crate::rules::program_name(argv0);
    let entry = kb.program(program, None);
    let mut n = Normalized {
        program,
        entry,
        sub_entry: None,
        words: Vec::with_capacity(argv.len()),
        option_positions: Vec::new(),
    };
    let mut i = 1;
    let mut only_args = false;
    let mut positional = 0usize;
    let mut in_sub = false;
    while i < argv.len() {
        let w = argv[i].as_str();
        // Whose options are these?
        let owners: [Option<&'a ProgramEntry>; 2] = if in_sub {
            match (n.sub_entry, entry) {
                (Some(s), Some(e)) if e.globals_anywhere => [Some(s), Some(e)],
                (Some(s), _) => [Some(s), None],
                (None, Some(e)) if e.globals_anywhere => [Some(e), None],
                _ => [None, None],
            }
        } else {
            [entry, None]
        };
        let first_owner = owners[0];
        if !only_args {
            n.option_positions.push((i, in_sub));
        }
        if only_args || w == "-" || !w.starts_with('-') {
            let tar_style = !only_args
                && i == 1
                && entry.is_some_and(|e| e.old_style)
                && !w.is_empty()
                && !w.starts_with('-');
            if tar_style {
                i = short_cluster(argv, i, w, first_owner, &mut n.words, true);
                continue;
            }
            if !only_args
                && !in_sub
                && w.starts_with('+')
                && (program == "cargo" || (i == 1 && is_rustup_proxy(program)))
            {
                // `cargo +nightly build`, `rustc +nightly x.rs`: rustup's
                // toolchain selector, not an argument of the program.
                n.words.push(Word::Arg {
                    text: w,
                    at: i,
                    index: usize::MAX,
                    owner: None,
                });
                i += 1;
                continue;
            }
            n.words.push(Word::Arg {
                text: w,
                at: i,
                index: positional,
                owner: first_owner,
            });
            positional += 1;
            if !in_sub && !only_args && entry.is_some_and(|e| e.subcommands) {
                in_sub = true;
                n.sub_entry = kb.program(program, Some(w));
                positional = 0;
            } else if first_owner.is_some_and(|e| e.options_first) {
                only_args = true;
            }
            i += 1;
            continue;
        }
        if w == "--" {
            n.words.push(Word::End { at: i });
            only_args = true;
            i += 1;
            continue;
        }
        // A whole-word option of the owner (`find -delete`, `zip -TT`).
        let single = owners
            .iter()
            .flatten()
            .find_map(|&e| whole_word(e, w).map(|o| (e, o)));
        if let Some((owner, (key, takes, short, value))) = single {
            i = push_long(argv, i, key, takes, short, value, Some(owner), &mut n.words);
            if stops(owner, n.words.last()) {
                only_args = true;
            }
            continue;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (long, None),
            };
            let found = owners
                .iter()
                .flatten()
                .find_map(|&e| e.long_option(name).map(|o| (e, o)));
            match found {
                Some((owner, o)) => {
                    i = push_long(
                        argv,
                        i,
                        &o.key,
                        o.takes,
                        o.short,
                        value,
                        Some(owner),
                        &mut n.words,
                    );
                    if stops(owner, n.words.last()) {
                        only_args = true;
                    }
                }
                None => {
                    // Go's flag package reads `--name` as `-name` (`go build
                    // --toolexec=x`); for the others a `--` spelling of a
                    // whole-word option is refused or means the same.
                    let single = owners
                        .iter()
                        .flatten()
                        .find_map(|&e| whole_word(e, &w[1..]).map(|o| (e, o)));
                    if let Some((owner, (key, takes, short, value))) = single {
                        i = push_long(argv, i, key, takes, short, value, Some(owner), &mut n.words);
                        if stops(owner, n.words.last()) {
                            only_args = true;
                        }
                        continue;
                    }
                    let legacy = !in_sub
                        && value.is_none()
                        && first_owner.is_none()
                        && legacy_value_options(program).contains(&w);
                    let key = &w[..2 + name.len()];
                    let takes = if legacy { Takes::Required } else { Takes::No };
                    i = push_long(argv, i, key, takes, None, value, None, &mut n.words);
                }
            }
            continue;
        }
        if first_owner.is_none() && !in_sub && legacy_value_options(program).contains(&w) {
            let letter = w.chars().nth(1).unwrap_or('-');
            let value = argv.get(i + 1).map(String::as_str);
            n.words.push(Word::Short {
                letter,
                value,
                at: i,
                next: (i + 2).min(argv.len()),
                owner: None,
            });
            i = (i + 2).min(argv.len());
            continue;
        }
        i = short_cluster(argv, i, &w[1..], first_owner, &mut n.words, false);
        if let Some(owner) = first_owner {
            if stops(owner, n.words.last()) {
                only_args = true;
            }
        }
    }
    if !only_args {
        // Past the last word: where more words (a glob's) would be read.
        n.option_positions.push((argv.len(), in_sub));
    }
    n
}

/// Whether option processing stops after this word (`python -c CODE`, `-m MOD`).
fn stops(owner: &ProgramEntry, last: Option<&Word<'_>>) -> bool {
    if owner.stop_after.is_empty() {
        return false;
    }
    last.and_then(Word::key)
        .is_some_and(|k| owner.stop_after.iter().any(|s| *s == k))
}

/// A single-dash whole-word option of this entry: (key, takes, short, attached
/// value). One that takes a value may also carry it attached, as `-key=VALUE`
/// (go's flags, gcc's `-fplugin=`) or glued as `-keyVALUE` (zip's `-TTcmd`);
/// an exact name wins, then the longest key.
fn whole_word<'e, 'w>(
    e: &'e ProgramEntry,
    w: &'w str,
) -> Option<(&'e str, Takes, Option<char>, Option<&'w str>)> {
    if w.starts_with("--") {
        return None;
    }
    let whole = |o: &&crate::knowledge::LongOption| o.name.starts_with('-');
    if let Some(o) = e.long.iter().filter(whole).find(|o| o.key == w) {
        return Some((&o.key, o.takes, o.short, None));
    }
    let o = e
        .long
        .iter()
        .filter(whole)
        .filter(|o| o.takes == Takes::Required && o.key.len() >= 3 && w.starts_with(&*o.key))
        .max_by_key(|o| o.key.len())?;
    let rest = &w[o.key.len()..];
    Some((
        &o.key,
        o.takes,
        o.short,
        Some(rest.strip_prefix('=').unwrap_or(rest)),
    ))
}

#[allow(clippy::too_many_arguments)]
fn push_long<'a>(
    argv: &'a [String],
    i: usize,
    key: &'a str,
    takes: Takes,
    short: Option<char>,
    value: Option<&'a str>,
    owner: Option<&'a ProgramEntry>,
    words: &mut Vec<Word<'a>>,
) -> usize {
    let (value, next) = match (takes, value) {
        (_, Some(v)) => (Some(v), i + 1),
        (Takes::Required, None) => match argv.get(i + 1) {
            Some(v) => (Some(v.as_str()), i + 2),
            None => (None, i + 1),
        },
        (Takes::Command, None) => {
            // `find -exec cmd args ;`: the command is judged by the unwrapper.
            let mut j = i + 1;
            while j < argv.len() && argv[j] != ";" && argv[j] != "+" {
                j += 1;
            }
            (None, (j + 1).min(argv.len()))
        }
        _ => (None, i + 1),
    };
    words.push(Word::Long {
        key,
        short,
        value,
        at: i,
        next,
        owner,
    });
    next
}

/// Split a cluster of short options (`Rf`, `f/etc/shadow`, `Im`). `old_style`:
/// `tar czf a.tgz src`, where each letter that takes a value takes the next
/// unused word.
fn short_cluster<'a>(
    argv: &'a [String],
    i: usize,
    letters: &'a str,
    owner: Option<&'a ProgramEntry>,
    words: &mut Vec<Word<'a>>,
    old_style: bool,
) -> usize {
    let mut next = i + 1;
    for (k, c) in letters.char_indices() {
        let letter = owner.map_or(c, |e| e.canonical_short(c));
        let takes = owner.map_or(Takes::No, |e| {
            if e.short_values.contains(&c) {
                Takes::Required
            } else if e.short_optional.contains(&c) {
                Takes::Optional
            } else {
                Takes::No
            }
        });
        let rest = &letters[k + c.len_utf8()..];
        match takes {
            Takes::Required if old_style => {
                let value = argv.get(next).map(String::as_str);
                let at_next = (next + 1).min(argv.len());
                words.push(Word::Short {
                    letter,
                    value,
                    at: i,
                    next: at_next,
                    owner,
                });
                next = at_next;
            }
            Takes::Required => {
                let (value, after) = if rest.is_empty() {
                    match argv.get(i + 1) {
                        Some(v) => (Some(v.as_str()), i + 2),
                        None => (None, i + 1),
                    }
                } else {
                    (Some(rest), i + 1)
                };
                words.push(Word::Short {
                    letter,
                    value,
                    at: i,
                    next: after,
                    owner,
                });
                return after;
            }
            Takes::Optional => {
                let value = (!rest.is_empty()).then_some(rest);
                words.push(Word::Short {
                    letter,
                    value,
                    at: i,
                    next: i + 1,
                    owner,
                });
                return i + 1;
            }
            _ => words.push(Word::Short {
                letter,
                value: None,
                at: i,
                next: i + 1,
                owner,
            }),
        }
    }
    next
}
