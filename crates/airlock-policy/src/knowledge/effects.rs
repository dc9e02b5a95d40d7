//! Finding a normalised argv's effects in the knowledge base, in one pass.

use super::scripts::{self, Hit};
use super::{
    Action, Effect, Finding, InnerCommand, Kind, Normalized, ProgramEntry, Text, Trigger, Word,
};
use crate::shell::Access;
use std::collections::HashSet;

/// A command an option makes the program run.
#[derive(Debug, Clone, PartialEq)]
pub enum InnerRun {
    /// Shell text (`tar --to-command='…'`).
    Shell { wrapper: Vec<String>, code: String },
    /// An argv (`python3 -m pip …` runs `pip …`).
    Argv {
        wrapper: Vec<String>,
        argv: Vec<String>,
    },
}

/// What the knowledge base found in one argv.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    pub findings: Vec<Finding>,
    /// Values to check as paths: (text, access, what names it).
    pub paths: Vec<(String, Access, String)>,
    pub inner: Vec<InnerRun>,
    /// argv indices that are scripts, not paths (sed's script, awk's program).
    pub data_args: Vec<usize>,
}

/// `-`, `/dev/stdin`, `/dev/fd/0`, `/proc/self/fd/0`: a program read from a pipe.
fn stdin_like(v: &str) -> bool {
    v == "-"
        || v == "/dev/stdin"
        || v.starts_with("/dev/fd/")
        || v.starts_with("/proc/self/fd/")
        || v.starts_with("/proc/thread-self/fd/")
}

fn value_matches(when: &[Text], value: Option<&str>) -> bool {
    if when.is_empty() {
        return true;
    }
    let Some(v) = value else { return false };
    when.iter().any(|w| match w.strip_suffix('*') {
        // `=text`: exactly `text`, stars included (`git restore '*'`).
        _ if w.starts_with('=') => v == &w[1..],
        // `*text*`: anywhere in the value.
        Some(p) if p.len() > 1 && p.starts_with('*') => v.contains(&p[1..]),
        Some(p) => v.starts_with(p),
        None => v == w,
    })
}

struct Ctx<'a, 'o> {
    argv: &'a [String],
    present: HashSet<String>,
    out: &'o mut Applied,
}

impl Ctx<'_, '_> {
    fn fire(
        &mut self,
        entry: &ProgramEntry,
        eff: &Effect,
        trigger: &str,
        value: Option<&str>,
        shown: String,
        next: usize,
    ) -> bool {
        if !value_matches(&eff.when, value)
            || !eff.requires.iter().all(|r| self.present.contains(&**r))
            || eff.unless.iter().any(|u| self.present.contains(&**u))
        {
            return false;
        }
        let title = entry.title();
        let entry_name = if trigger.is_empty() {
            title.clone()
        } else {
            format!("{title} {trigger}")
        };
        let finding = |action, kind, reason: String, shown: String| Finding {
            action,
            entry: entry_name.clone(),
            origin: entry.origin.to_string(),
            shown,
            kind,
            reason,
        };
        if let (Some(access), Some(v)) = (eff.path, value) {
            if matches!(eff.kind, Kind::Exec | Kind::Code) && stdin_like(v) {
                self.out.findings.push(finding(
                    Action::OnUnknown,
                    eff.kind,
                    "reads what it runs from standard input, which the gate cannot see".into(),
                    shown.clone(),
                ));
            } else if !v.is_empty() {
                self.out
                    .paths
                    .push((v.to_string(), access, format!("value of `{entry_name}`")));
            }
        }
        let argv = self.argv;
        let wrapper = || vec![argv[0].clone(), shown.clone()];
        match (eff.inner, value) {
            (InnerCommand::Shell, Some(v)) => self.out.inner.push(InnerRun::Shell {
                wrapper: wrapper(),
                code: v.to_string(),
            }),
            (InnerCommand::Words, Some(v)) => {
                let argv: Vec<String> = v.split_whitespace().map(String::from).collect();
                if !argv.is_empty() {
                    self.out.inner.push(InnerRun::Argv {
                        wrapper: wrapper(),
                        argv,
                    });
                }
            }
            (InnerCommand::ValueAndRest, Some(v)) => {
                let mut argv = vec![v.to_string()];
                argv.extend(self.argv[next.min(self.argv.len())..].iter().cloned());
                self.out.inner.push(InnerRun::Argv {
                    wrapper: wrapper(),
                    argv,
                });
            }
            _ => {}
        }
        if let Some(lang) = eff.script {
            let Some(text) = value else { return true };
            // One finding per script is enough for the verdict (and keeps the
            // work linear: a script of many `|` gives one, not many).
            let mut reported = false;
            for hit in scripts::scan(lang, text) {
                match hit {
                    Hit::Path(p, access) => {
                        self.out
                            .paths
                            .push((p, access, format!("file named in `{entry_name}`")));
                    }
                    Hit::Effect(kind, what) => {
                        if eff.action != Action::Judge && !reported {
                            reported = true;
                            self.out.findings.push(finding(
                                eff.action,
                                kind,
                                format!("{}: {what}", eff.reason),
                                shown.clone(),
                            ));
                        }
                    }
                }
            }
            return true;
        }
        if eff.action != Action::Judge {
            self.out
                .findings
                .push(finding(eff.action, eff.kind, eff.reason.to_string(), shown));
        }
        true
    }
}

/// The effects of a normalised argv. Each word is looked at once; each option
/// is compared with the effects of its own entry only (a bounded list).
pub fn apply(argv: &[String], norm: &Normalized<'_>) -> Applied {
    let mut out = Applied::default();
    if let Some(f) = toolchain_path(norm) {
        out.findings.push(f);
    }
    if norm.entry.is_none() && norm.sub_entry.is_none() {
        return out;
    }
    let present: HashSet<String> = norm.words.iter().filter_map(Word::key).collect();
    let mut cx = Ctx {
        argv,
        present,
        out: &mut out,
    };
    let mut args_of = [0usize; 2];
    for w in &norm.words {
        let Some(owner) = w.owner() else { continue };
        let is_sub = norm.sub_entry.is_some_and(|s| std::ptr::eq(s, owner));
        match w {
            Word::Short { value, next, .. } | Word::Long { value, next, .. } => {
                let Some(key) = w.key() else { continue };
                for eff in owner.effects.iter() {
                    if matches!(&eff.trigger, Trigger::Option(k) if *k == key) {
                        let _ = cx.fire(owner, eff, &key, *value, w.shown(), *next);
                    }
                }
            }
            Word::Arg {
                text, index, at, ..
            } => {
                if *index == usize::MAX {
                    continue;
                }
                args_of[usize::from(is_sub)] = index + 1;
                for eff in owner.effects.iter() {
                    if matches!(&eff.trigger, Trigger::Argument(n) if n == index)
                        || eff.trigger == Trigger::AnyArgument
                    {
                        let trigger = format!("argument {}", index + 1);
                        if cx.fire(owner, eff, &trigger, Some(*text), w.shown(), at + 1)
                            && eff.script.is_some()
                        {
                            cx.out.data_args.push(*at);
                        }
                    }
                }
            }
            Word::End { .. } => {}
        }
    }
    // Effects of the program or subcommand itself.
    let whole = [(norm.entry, 0usize), (norm.sub_entry, 1usize)];
    for (entry, slot) in whole {
        let Some(entry) = entry else { continue };
        // The program entry's own positionals end where the subcommand begins.
        let args = if slot == 0 && norm.sub_entry.is_some() {
            1
        } else {
            args_of[slot]
        };
        for eff in entry.effects.iter() {
            if let Trigger::Always { min_args } = eff.trigger {
                if args >= min_args {
                    let shown = crate::shell::words::short(&argv.join(" "));
                    let _ = cx.fire(entry, eff, "", None, shown, argv.len());
                }
            }
        }
    }
    out
}

/// rustup's `+TOOLCHAIN` selector (`cargo +nightly build`) that names a
/// directory rather than an installed toolchain (`cargo +./tc build`): rustup
/// runs that directory's `bin/cargo` or `bin/rustc`, which the gate never
/// sees. A plain name (`+nightly`, `+1.80`) is left alone.
fn toolchain_path(norm: &Normalized<'_>) -> Option<Finding> {
    if !super::normalize::is_rustup_proxy(norm.program) {
        return None;
    }
    let word = norm.words.iter().find_map(|w| match w {
        Word::Arg {
            text,
            index: usize::MAX,
            ..
        } if text.starts_with('+') => Some(*text),
        _ => None,
    })?;
    let name = &word[1..];
    if !(name.contains('/') || name == "." || name == ".." || name.starts_with('~')) {
        return None;
    }
    Some(Finding {
        action: Action::ApprovalRequired,
        entry: format!("{} +TOOLCHAIN", norm.program),
        origin: super::BUILTIN_KNOWLEDGE_ORIGIN.to_string(),
        shown: word.to_string(),
        kind: Kind::Exec,
        reason: "names a directory as the toolchain, so rustup runs the programs under it (its `bin/cargo`, `bin/rustc`), which the gate never sees; name an installed toolchain (`+nightly`) or leave the selector out".into(),
    })
}
