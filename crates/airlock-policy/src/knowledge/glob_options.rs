//! A glob where a program still reads options: the shell expands it to file
//! names before the program runs, and a name that begins with `-` is read as
//! an option. In a workspace holding files named `--checkpoint=1` and
//! `--checkpoint-action=exec=sh x.sh`, `tar cf a.tar *` runs `sh x.sh`
//! (the classic wildcard injection); `*.txt` spells
//! `--to-command=sh x.txt` as well. The gate judges the words it sees, so a
//! glob that could spell an option with an effect is not allowed; `./*` and
//! a `--` before the glob spell none.
//!
//! Only options the knowledge base gives an effect count, and of those, a
//! read of a path does not: a name a glob matches holds no `/`, so a path
//! spelled by it stays in the working directory.

use super::{Action, Effect, Kind, Normalized, ProgramEntry, Takes, Trigger};
use crate::shell::Access;

/// Why `argv` cannot be judged: a glob in it (`globs`, as the segment keeps
/// them) stands where `norm`'s program reads options and could expand to one
/// with an effect. `None` when there is none.
pub fn glob_option(argv: &[String], norm: &Normalized<'_>, globs: &[String]) -> Option<String> {
    if globs.is_empty() {
        return None;
    }
    // A glob's first name takes its word's place, and the others the places
    // after it: options are read at the glob if its place reads them, or
    // after it if the place after it does (`git -C * status`: the first
    // name is `-C`'s value, the next ones are read as git's options).
    let readable = |j: usize| norm.option_positions.iter().find(|(at, _)| *at == j);
    for (i, word) in argv.iter().enumerate().skip(1) {
        if word.starts_with('-') || !globs.iter().any(|g| g == word) {
            continue;
        }
        let Some(&(_, in_sub)) = readable(i).or_else(|| readable(i + 1)) else {
            continue;
        };
        // Whose options are read here (as normalize decides).
        let owners = match (in_sub, norm.sub_entry, norm.entry) {
            (false, _, entry) => [entry, None],
            (true, sub, Some(e)) if e.globals_anywhere => [sub, Some(e)],
            (true, sub, _) => [sub, None],
        };
        let pattern = Pattern::new(word);
        // `tar czf`: the first word is read as short options without a dash.
        let dashless = i == 1 && norm.entry.is_some_and(|e| e.old_style);
        // Options that run code first: they name the worst a name could do.
        let effects = || {
            owners.into_iter().flatten().flat_map(|entry| {
                entry
                    .effects
                    .iter()
                    .filter(|e| counts(e))
                    .map(move |e| (entry, e))
            })
        };
        let runs = |e: &Effect| matches!(e.kind, Kind::Exec | Kind::Code);
        let ordered = effects()
            .filter(|(_, e)| runs(e))
            .chain(effects().filter(|(_, e)| !runs(e)));
        for (entry, effect) in ordered {
            let spelling = match &effect.trigger {
                Trigger::Option(key) => spelled(&pattern, entry, key, dashless),
                // `make SHELL=x`: an operand that is a setting.
                Trigger::Argument(_) | Trigger::AnyArgument => effect.when.iter().find_map(|w| {
                    let (text, whole) = match w.strip_suffix('*') {
                        Some(prefix) => (prefix, false),
                        None => (&**w, true),
                    };
                    pattern.spells(text, whole).then(|| w.to_string())
                }),
                Trigger::Always { .. } => None,
            };
            let Some(spelling) = spelling else { continue };
            let what = if effect.reason.is_empty() {
                format!("an option with a {} effect", effect.kind.as_str())
            } else {
                effect.reason.to_string()
            };
            let program = norm.program;
            return Some(match &effect.trigger {
                Trigger::Option(key) => format!(
                    "the glob `{word}` stands where `{program}` reads options: a file name it matches, such as `{spelling}`, would be read as `{key}` ({what}); write `./{word}`, or put `--` before it, so that no file name is taken for an option"
                ),
                _ => format!(
                    "the glob `{word}` may match a file name that `{program}` reads as a setting, such as `{spelling}` ({what}); write `./{word}`, so that no file name is taken for one"
                ),
            });
        }
    }
    None
}

/// An effect a spelled option could bring that the gate would not allow as
/// it is: anything but the read of a path (which stays in the directory).
fn counts(e: &Effect) -> bool {
    !(e.action == Action::Judge
        && e.path == Some(Access::Read)
        && e.inner == super::InnerCommand::None
        && e.script.is_none())
}

/// A word `pattern` can expand to that `entry` reads as option `key`, if
/// any (shown in the refusal).
fn spelled(pattern: &Pattern, entry: &ProgramEntry, key: &str, dashless: bool) -> Option<String> {
    if key.len() == 2 && !key.starts_with("--") {
        // A short letter, alone or anywhere in a cluster (`-xvf`), and any
        // long option that means it: any name beginning with `-` may do
        // (and any name at all where a cluster needs no dash).
        return (dashless || pattern.spells("-", false)).then(|| format!("{key}…"));
    }
    if let Some(name) = key.strip_prefix("--") {
        let takes = entry.long_option(name).map_or(Takes::Required, |o| o.takes);
        // getopt_long takes unique prefixes (`--to-com=sh x`).
        let shortest = if entry.abbreviations { 1 } else { name.len() };
        for len in (shortest..=name.len()).rev() {
            let Some(prefix) = name.get(..len) else {
                continue;
            };
            let spelling = format!("--{prefix}");
            if pattern.spells(&spelling, true) {
                return Some(spelling);
            }
            if takes != Takes::No && pattern.spells(&format!("{spelling}="), false) {
                return Some(format!("{spelling}=…"));
            }
        }
        return None;
    }
    // A single-dash whole word (`find -delete`, `zip -TT`), with or without
    // an attached value.
    pattern.spells(key, false).then(|| key.to_string())
}

/// A shell glob, read as bash reads one: `*`, `?`, `[...]`; anything
/// fancier (extglob, a backslash) is taken as matching every name.
struct Pattern(Vec<Tok>);

enum Tok {
    Char(char),
    Any,
    Star,
    Set {
        negated: bool,
        items: Vec<(char, char)>,
    },
    Anything,
}

/// Stars beyond which matching is not tried (every name is assumed).
const MAX_STARS: usize = 8;
/// A longer pattern is assumed to match every name: reading brackets is
/// quadratic in the worst case (`[[[[…` with no `]`).
const MAX_PATTERN_BYTES: usize = 1024;

impl Pattern {
    fn new(text: &str) -> Pattern {
        if text.len() > MAX_PATTERN_BYTES {
            return Pattern(vec![Tok::Anything]);
        }
        let chars: Vec<char> = text.chars().collect();
        let mut toks = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let extglob =
                matches!(c, '?' | '*' | '+' | '@' | '!') && chars.get(i + 1) == Some(&'(');
            if extglob || c == '\\' {
                return Pattern(vec![Tok::Anything]);
            }
            match c {
                '*' => toks.push(Tok::Star),
                '?' => toks.push(Tok::Any),
                '[' => match set(&chars[i + 1..]) {
                    Some((tok, used)) => {
                        toks.push(tok);
                        i += used;
                    }
                    None => toks.push(Tok::Char('[')),
                },
                c => toks.push(Tok::Char(c)),
            }
            i += 1;
        }
        if toks.iter().filter(|t| matches!(t, Tok::Star)).count() > MAX_STARS {
            return Pattern(vec![Tok::Anything]);
        }
        Pattern(toks)
    }

    /// Whether some name the pattern matches is `text` (`whole`) or begins
    /// with it.
    fn spells(&self, text: &str, whole: bool) -> bool {
        let s: Vec<char> = text.chars().collect();
        matches_from(&self.0, &s, whole)
    }
}

/// A bracket expression after its `[`: the token and how many characters it
/// took, `]` included; `None` when it is not closed (then `[` is literal).
fn set(rest: &[char]) -> Option<(Tok, usize)> {
    let mut i = 0;
    let negated = matches!(rest.first(), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut items = Vec::new();
    let mut first = true;
    while i < rest.len() {
        let c = rest[i];
        if c == ']' && !first {
            return Some((Tok::Set { negated, items }, i + 1));
        }
        first = false;
        if rest.get(i + 1) == Some(&'-') && rest.get(i + 2).is_some_and(|&e| e != ']') {
            items.push((c, rest[i + 2]));
            i += 3;
        } else {
            items.push((c, c));
            i += 1;
        }
    }
    None
}

fn matches_from(toks: &[Tok], s: &[char], whole: bool) -> bool {
    let Some((tok, rest)) = toks.split_first() else {
        return s.is_empty();
    };
    if s.is_empty() {
        // The text is used up: a prefix is spelled whatever follows; a whole
        // word only if the rest can match nothing.
        return !whole || toks.iter().all(|t| matches!(t, Tok::Star | Tok::Anything));
    }
    match tok {
        Tok::Anything => true,
        Tok::Star => matches_from(rest, s, whole) || matches_from(toks, &s[1..], whole),
        Tok::Any => matches_from(rest, &s[1..], whole),
        Tok::Char(c) => *c == s[0] && matches_from(rest, &s[1..], whole),
        Tok::Set { negated, items } => {
            let inside = items.iter().any(|&(a, b)| a <= s[0] && s[0] <= b);
            inside != *negated && matches_from(rest, &s[1..], whole)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    #[test]
    fn what_a_glob_can_spell() {
        let p = |t: &str| Pattern::new(t);
        assert!(p("*").spells("--to-command=", false));
        assert!(p("*.txt").spells("--to-command=", false));
        assert!(!p("*.txt").spells("--no-preserve-root", true));
        assert!(p("*root").spells("--no-preserve-root", true));
        assert!(p("?-*").spells("--x", true));
        assert!(!p("./*").spells("-", false));
        assert!(!p("src/*.py").spells("-", false));
        assert!(!p("a*").spells("-", false));
        assert!(p("[-a]*").spells("-", false));
        assert!(!p("[!-]*").spells("-", false));
        assert!(p("[a-z-]x").spells("-x", true));
        assert!(p("@(x|y)").spells("-", false));
        assert!(p("\\-*").spells("-", false));
        // An unclosed bracket is a literal `[`.
        assert!(!p("[abc").spells("-", false));
        // Too long to read: taken as matching every name.
        assert!(p(&"[a".repeat(1000)).spells("-", false));
    }
}
