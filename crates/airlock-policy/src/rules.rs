//! Argv-prefix matching, shared by the command rules and the network list.
//!
//! A prefix is a list of positions, each listing alternatives: `git status` is
//! `[["git"], ["status"]]`, `["git", ["push", "pull"]]` is `[["git"], ["push", "pull"]]`.
//! Positions whose alternatives are all options (`-rf`, `--hard`) are matched
//! against the options present anywhere in the command, however they are spelled
//! (`rm -r -f`, `rm -fr`, `rm --recursive --force`); the other positions are
//! matched, in order, against the command's positional words. Both sides are
//! normalised with the program knowledge base first (`-R` of rm is `-r`,
//! `--rec` is `--recursive`, `-f/etc/x` is `-f` with a value). The program
//! (position 0) is compared by name: `/usr/bin/git` is `git`.
//!
//! Known programs whose global options take a value before the subcommand
//! (`git -C dir push`, `cargo +nightly install`) have those values skipped, so
//! that `git push` cannot be dodged by `git -C . push`.

use crate::knowledge::{normalize, Kb, Normalized, ProgramEntry, Word};

/// A command's argv, split into what prefix matching needs, from its
/// normalised form ([`crate::knowledge::normalize`]).
#[derive(Debug, Clone)]
pub struct ArgvShape<'a> {
    /// The program's name: argv[0] up to its last `/`.
    pub program: &'a str,
    /// argv[0] exactly as written.
    pub program_as_written: &'a str,
    /// Words that are not options nor option values, in order (argv[0] excluded).
    pub positionals: Vec<&'a str>,
    /// Every short option's letter, after synonyms (`-Rf` of rm gives r and f),
    /// and the letter a long option means (`--recursive` gives r).
    pub short_letters: Vec<char>,
    /// Long options under their full names (`--har` of git reset is `--hard`),
    /// without their values.
    pub long_options: Vec<&'a str>,
    /// The knowledge base's entries for the program and its subcommand.
    pub entry: Option<&'a ProgramEntry>,
    pub sub_entry: Option<&'a ProgramEntry>,
}

/// The name of a program given as a path (`/usr/bin/curl` → `curl`).
pub fn program_name(word: &str) -> &str {
    match word.rfind('/') {
        Some(i) => &word[i + 1..],
        None => word,
    }
}

impl<'a> ArgvShape<'a> {
    /// With the built-in knowledge base only.
    pub fn new(argv: &'a [String]) -> Option<Self> {
        Self::with(argv, Kb::builtin_only())
    }

    pub fn with(argv: &'a [String], kb: Kb<'a>) -> Option<Self> {
        let first = argv.first()?;
        Some(Self::from_normalized(first, &normalize(argv, kb)))
    }

    pub fn from_normalized(first: &'a str, n: &Normalized<'a>) -> Self {
        let mut shape = ArgvShape {
            program: n.program,
            program_as_written: first,
            positionals: Vec::new(),
            short_letters: Vec::new(),
            long_options: Vec::new(),
            entry: n.entry,
            sub_entry: n.sub_entry,
        };
        for w in &n.words {
            match w {
                Word::Short { letter, .. } => shape.short_letters.push(*letter),
                Word::Long { key, short, .. } => {
                    if let Some(c) = short {
                        shape.short_letters.push(*c);
                    }
                    shape.long_options.push(*key);
                }
                Word::Arg { text, index, .. } if *index != usize::MAX => {
                    shape.positionals.push(*text)
                }
                _ => {}
            }
        }
        shape
    }
}

/// Does `prefix` match this command?
pub fn prefix_matches(prefix: &[Vec<String>], shape: &ArgvShape<'_>) -> bool {
    let Some((program_alts, rest)) = prefix.split_first() else {
        return false;
    };
    if !program_alts.iter().any(|p| program_matches(p, shape)) {
        return false;
    }
    let mut next_positional = 0;
    for alts in rest {
        if alts.iter().all(|a| is_option(a)) {
            if !alts.iter().any(|a| option_present(a, shape)) {
                return false;
            }
        } else {
            let Some(word) = shape.positionals.get(next_positional) else {
                return false;
            };
            if !alts.iter().any(|a| a == word) {
                return false;
            }
            next_positional += 1;
        }
    }
    true
}

fn is_option(word: &str) -> bool {
    word.len() > 1 && word.starts_with('-')
}

/// A rule naming a path matches that path only, as written; any other rule
/// matches the program's name. `shape.program` holds no `/`, so a rule that
/// does can only equal the path as written, and one that does not can only
/// equal the path as written when that is the name itself.
fn program_matches(rule_program: &str, shape: &ArgvShape<'_>) -> bool {
    rule_program == shape.program || rule_program == shape.program_as_written
}

fn option_present(option: &str, shape: &ArgvShape<'_>) -> bool {
    let entries = [shape.sub_entry, shape.entry];
    if let Some(name) = option.strip_prefix("--") {
        // A rule's long option means what the command's does: `--recursive`
        // of rm is `-r`, and an abbreviation in a rule is expanded too.
        for e in entries.iter().flatten() {
            if let Some(o) = e.long_option(name) {
                return match o.short {
                    Some(c) => shape.short_letters.contains(&c),
                    None => shape.long_options.contains(&&*o.key),
                };
            }
        }
        return shape.long_options.contains(&option);
    }
    if shape.long_options.contains(&option) {
        // A single-dash word (`find -delete`).
        return true;
    }
    let canonical = |c: char| {
        entries
            .iter()
            .flatten()
            .map(|e| e.canonical_short(c))
            .find(|&k| k != c)
            .unwrap_or(c)
    };
    option[1..]
        .chars()
        .all(|c| shape.short_letters.contains(&canonical(c)))
}

/// The rules whose program position can match a program, looked up by name
/// instead of scanning every rule (a request with many segments asks often).
pub struct RuleIndex<'p> {
    /// (a program word of a rule's prefix, the rule's index), sorted.
    by_program: Vec<(&'p str, usize)>,
}

impl<'p> RuleIndex<'p> {
    pub fn new(rules: &'p [crate::Rule]) -> Self {
        let mut by_program: Vec<(&str, usize)> = rules
            .iter()
            .enumerate()
            .flat_map(|(i, rule)| {
                rule.prefix
                    .first()
                    .into_iter()
                    .flatten()
                    .map(move |alt| (alt.as_str(), i))
            })
            .collect();
        by_program.sort_unstable();
        RuleIndex { by_program }
    }

    fn rules_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = usize> + 'a {
        let start = self.by_program.partition_point(|(p, _)| *p < name);
        self.by_program[start..]
            .iter()
            .take_while(move |(p, _)| *p == name)
            .map(|(_, i)| *i)
    }

    /// Indices, in policy order, of every rule that [`prefix_matches`] could
    /// accept for `shape`: a rule's program matches by name, or as written
    /// when it names a path, so no other rule can.
    pub fn candidates(&self, shape: &ArgvShape<'_>) -> Vec<usize> {
        let mut out: Vec<usize> = self.rules_named(shape.program).collect();
        if shape.program_as_written != shape.program {
            out.extend(self.rules_named(shape.program_as_written));
            out.sort_unstable();
            out.dedup();
        }
        out
    }
}

/// Split a plain prefix string (`"git status"`) into positions.
pub fn split_plain(text: &str) -> Vec<Vec<String>> {
    text.split_whitespace()
        .map(|w| vec![w.to_string()])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn m(prefix: &str, cmd: &str) -> bool {
        let a = argv(cmd);
        prefix_matches(&split_plain(prefix), &ArgvShape::new(&a).unwrap())
    }

    #[test]
    fn plain_prefixes() {
        assert!(m("git status", "git status --short"));
        assert!(m("git status", "/usr/bin/git status"));
        assert!(!m("git status", "git stash"));
        assert!(m("git push", "git -C sub push origin"));
        assert!(m("git push", "git --git-dir=.git push"));
        assert!(!m("git push", "git log --grep push"));
        assert!(m("cargo install", "cargo +nightly install ripgrep"));
        assert!(m("ls", "ls -la /tmp"));
    }

    #[test]
    fn options_in_any_spelling() {
        assert!(m("rm -rf", "rm -rf build"));
        assert!(m("rm -rf", "rm -r -f build"));
        assert!(m("rm -rf", "rm -fr build"));
        assert!(m("rm -rf", "rm build --recursive --force"));
        assert!(!m("rm -rf", "rm -r build"));
        assert!(m("git reset --hard", "git reset --hard HEAD~1"));
        assert!(!m("git reset --hard", "git reset --soft HEAD~1"));
    }

    #[test]
    fn alternatives_and_paths() {
        let p = vec![vec!["git".to_string()], vec!["push".into(), "pull".into()]];
        let a = argv("git pull --rebase");
        assert!(prefix_matches(&p, &ArgvShape::new(&a).unwrap()));
        assert!(m("./scripts/test.sh", "./scripts/test.sh --fast"));
        assert!(!m("./scripts/test.sh", "test.sh"));
    }

    /// Every rule that matches is among the index's candidates.
    #[test]
    fn the_index_never_misses_a_matching_rule() {
        let mut policy = crate::load::builtin_default(std::path::Path::new("/w"));
        let extra = [
            vec![vec!["./scripts/test.sh".to_string()]],
            vec![
                vec!["/usr/bin/git".to_string(), "git".into()],
                vec!["push".into()],
            ],
            vec![vec!["rm".to_string()], vec!["-rf".into()]],
        ];
        for prefix in extra {
            policy.commands.rules.push(crate::Rule {
                name: "extra".into(),
                prefix,
                decision: crate::Verdict::Deny,
                reason: None,
            });
        }
        let rules = &policy.commands.rules;
        let index = RuleIndex::new(rules);
        let mut matched = 0;
        for cmd in [
            "ls -la",
            "git status",
            "git -C x push",
            "/usr/bin/git push",
            "/bin/git push",
            "./scripts/test.sh --fast",
            "scripts/test.sh",
            "test.sh",
            "rm -r -f x",
            "/bin/rm --recursive --force x",
            "python3 -m pytest",
            "cat x",
            "curl h",
            "pip install x",
            "sudo ls",
            "cargo +nightly install x",
            "npm install",
            "unknown-tool run",
        ] {
            let a = argv(cmd);
            let shape = ArgvShape::new(&a).unwrap();
            let candidates = index.candidates(&shape);
            assert!(candidates.windows(2).all(|w| w[0] < w[1]), "{cmd}");
            for (i, rule) in rules.iter().enumerate() {
                if prefix_matches(&rule.prefix, &shape) {
                    matched += 1;
                    assert!(candidates.contains(&i), "{cmd}: rule {} missed", rule.name);
                }
            }
        }
        assert!(
            matched > 15,
            "only {matched} matches: the test checks little"
        );
    }
}
