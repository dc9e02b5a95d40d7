//! The program knowledge base and option normalisation never panic, whatever
//! the bytes: as a knowledge-base file (its loader), as an argv (normalised
//! against the built-in base and against the loaded one, its effects found),
//! and as sed and awk scripts. Normalisation accounts for every word once.
#![no_main]

use airlock_policy::knowledge::{self, Kb, Word};
use libfuzzer_sys::fuzz_target;

fn check_argv(argv: &[String], kb: Kb<'_>) {
    if argv.is_empty() {
        return;
    }
    let n = knowledge::normalize(argv, kb);
    // Every word points into the argv, in order, and none is read twice.
    let mut last = 0usize;
    for w in &n.words {
        let at = match w {
            Word::Short { at, next, .. } | Word::Long { at, next, .. } => {
                assert!(*next <= argv.len() && *next > *at, "{argv:?}");
                *at
            }
            Word::Arg { at, .. } | Word::End { at } => *at,
        };
        assert!(at >= 1 && at < argv.len() && at >= last, "{argv:?}");
        last = at;
    }
    let shown = n.shown(&argv[0]);
    // At most one element per letter of a cluster, per word otherwise: the
    // normalised form grows with the input's length, never faster.
    let letters: usize = argv.iter().map(|w| w.chars().count().max(1)).sum();
    assert!(shown.len() <= letters + 1, "{argv:?}");
    let applied = knowledge::apply(argv, &n);
    for f in &applied.findings {
        assert!(!f.reason.is_empty() && !f.entry.is_empty());
    }
    let _ = airlock_policy::rules::ArgvShape::from_normalized(&argv[0], &n);
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let builtin = Kb::builtin_only();
    // As an argv: words split at white space, the first a known program name.
    let mut words: Vec<String> = text.split_whitespace().map(String::from).collect();
    if let Some(first) = words.first_mut() {
        const PROGRAMS: &[&str] = &[
            "rm", "tar", "git", "sed", "awk", "find", "cargo", "python3", "sort", "zip", "make",
            "npm", "grep", "xargs", "ssh", "env", "rsync", "vim",
        ];
        let pick = first.len() % PROGRAMS.len();
        words.insert(0, PROGRAMS[pick].to_string());
    }
    check_argv(&words, builtin);
    let _ = knowledge::scripts::sed(text);
    let _ = knowledge::scripts::awk(text);
    // As a knowledge base of its own.
    if let Ok(kb) = airlock_policy::load::knowledge_from_str(text, "fuzz.toml") {
        let ext = Kb {
            extension: &kb,
            ..builtin
        };
        for p in kb.programs.iter().take(4) {
            let mut argv = vec![p.names.first().map(|n| n.to_string()).unwrap_or_default()];
            argv.extend(p.long.iter().take(8).map(|o| format!("{}=x", o.key)));
            argv.push("-abc".into());
            argv.push("value".into());
            if let Some(s) = &p.subcommand {
                argv.insert(1, s.to_string());
            }
            check_argv(&argv, ext);
        }
    }
});
