//! Wrappers: programs that run another program given in their arguments.
//! Each is unwrapped so that the inner command is what gets judged.

use super::Access;
use crate::knowledge::{self, Kb, Word};

/// What a wrapper runs.
#[derive(Debug, Clone)]
pub struct Inner {
    /// The wrapper's own words (`["timeout", "5"]`).
    pub wrapper: Vec<String>,
    /// The commands it runs (`find -exec` may run several; empty: none).
    pub inners: Vec<Vec<String>>,
    /// `env -C dir`: the directory the inner command starts in.
    pub chdir: Option<String>,
    /// `env NAME=VALUE`.
    pub env: Vec<(String, String)>,
    /// Paths the wrapper itself touches (`time -o FILE`, `xargs -a FILE`, find roots).
    pub paths: Vec<(String, Access)>,
}

#[derive(Debug, Clone)]
pub enum Unwrap {
    NotWrapper,
    Inner(Inner),
    /// `sh -c CODE`: shell code to analyse recursively.
    Code {
        wrapper: Vec<String>,
        code: String,
    },
    /// A wrapper whose inner command cannot be known.
    Unknown(String),
}

const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "posh", "yash",
];

fn inner(wrapper: &[String], rest: &[String]) -> Unwrap {
    Unwrap::Inner(Inner {
        wrapper: wrapper.to_vec(),
        inners: if rest.is_empty() {
            vec![]
        } else {
            vec![rest.to_vec()]
        },
        chdir: None,
        env: vec![],
        paths: vec![],
    })
}

/// Skip options; `with_value` lists options that take the next word as their
/// value. Returns the index of the first non-option word.
fn skip_options(argv: &[String], start: usize, with_value: &[&str]) -> usize {
    let mut i = start;
    while i < argv.len() {
        let a = argv[i].as_str();
        if a == "--" {
            return i + 1;
        }
        if !a.starts_with('-') || a == "-" {
            return i;
        }
        if with_value.contains(&a) {
            i += 2;
        } else {
            i += 1;
        }
    }
    // An option that wants a value may be the last word (`stdbuf -o`).
    i.min(argv.len())
}

pub fn unwrap(argv: &[String], kb: Kb<'_>) -> Unwrap {
    let Some(first) = argv.first() else {
        return Unwrap::NotWrapper;
    };
    let program = crate::rules::program_name(first);
    match program {
        "env" => unwrap_env(argv, kb),
        "command" => {
            let i = skip_options(argv, 1, &[]);
            if argv[1..i]
                .iter()
                .any(|a| a.contains('v') || a.contains('V'))
            {
                // `command -v x` only looks a name up.
                return inner(&argv[..i], &[]);
            }
            inner(&argv[..i], &argv[i..])
        }
        "builtin" | "nohup" | "setsid" => {
            let i = skip_options(argv, 1, &[]);
            inner(&argv[..i], &argv[i..])
        }
        "exec" => {
            let i = skip_options(argv, 1, &["-a"]);
            inner(&argv[..i], &argv[i..])
        }
        "nice" => {
            let i = skip_options(argv, 1, &["-n"]);
            inner(&argv[..i], &argv[i..])
        }
        "busybox" => inner(&argv[..1], &argv[1..]),
        "timeout" => {
            let i = skip_options(argv, 1, &["-s", "-k", "--signal", "--kill-after"]);
            // Then the duration, then the command.
            let i = (i + 1).min(argv.len());
            inner(&argv[..i], &argv[i..])
        }
        "time" => {
            let i = skip_options(argv, 1, &["-f", "-o", "--format", "--output"]);
            let mut u = inner(&argv[..i], &argv[i..]);
            if let Unwrap::Inner(ref mut inn) = u {
                for (k, a) in argv[..i].iter().enumerate() {
                    if a == "-o" || a == "--output" {
                        if let Some(f) = argv.get(k + 1) {
                            inn.paths.push((f.clone(), Access::Write));
                        }
                    } else if let Some(f) = a.strip_prefix("--output=") {
                        inn.paths.push((f.to_string(), Access::Write));
                    }
                }
            }
            u
        }
        "stdbuf" => {
            let i = skip_options(argv, 1, &["-i", "-o", "-e"]);
            inner(&argv[..i], &argv[i..])
        }
        "xargs" => unwrap_xargs(argv, kb),
        "find" => unwrap_find(argv),
        "flock" | "watch" | "ionice" | "chrt" | "taskset" | "prlimit" | "setpriv" | "strace" => {
            unwrap_by_entry(program, argv, kb)
        }
        "cmake" => unwrap_cmake(argv, kb),
        "unbuffer" => {
            let i = skip_options(argv, 1, &[]);
            inner(&argv[..i], &argv[i..])
        }
        "script" => {
            // `script -c CMD` is judged by its entry (the command as shell
            // text); without -c it runs an interactive shell.
            let norm = knowledge::normalize(argv, kb);
            if norm.words.iter().any(|w| w.key().as_deref() == Some("-c")) {
                Unwrap::NotWrapper
            } else {
                Unwrap::Unknown(
                    "`script` without `-c` runs a shell that reads commands the gate cannot see"
                        .into(),
                )
            }
        }
        p if SHELLS.contains(&p) => unwrap_shell(argv),
        _ => Unwrap::NotWrapper,
    }
}

/// `env`'s options are read as env reads them, by the knowledge base's
/// normaliser over its `env` entry (clusters such as `-iS'cmd'`,
/// abbreviations such as `--spl=cmd`), so that none hides the command; an
/// option the entry does not name makes the command unknown.
fn unwrap_env(argv: &[String], kb: Kb<'_>) -> Unwrap {
    let norm = knowledge::normalize(argv, kb);
    let Some(entry) = norm.entry else {
        return Unwrap::Unknown("`env` has no entry in the knowledge base".into());
    };
    let mut chdir = None;
    let mut env = Vec::new();
    let mut split: Option<(String, usize)> = None;
    // Where the command starts: past the options and NAME=VALUE words.
    let mut i = argv.len();
    for w in &norm.words {
        if let Some(u) = unknown_option("env", entry, argv, w) {
            return u;
        }
        match w {
            Word::End { at } => {
                i = at + 1;
                break;
            }
            // `-` alone is -i.
            Word::Arg { text: "-", .. } => {}
            Word::Arg { text, at, .. } => match text.split_once('=') {
                Some((name, value)) => env.push((name.to_string(), value.to_string())),
                None => {
                    i = *at;
                    break;
                }
            },
            Word::Short { value, next, .. } | Word::Long { value, next, .. } => {
                match w.key().as_deref() {
                    Some("-C") => chdir = value.map(str::to_string),
                    Some("-S") => {
                        split = Some((value.unwrap_or_default().to_string(), *next));
                        break;
                    }
                    _ => {}
                }
            }
        }
    }
    if let Some((text, next)) = split {
        // `env -S 'prog args'`: the string is split into the command.
        if text.contains(['\'', '"', '\\', '$', '`']) {
            return Unwrap::Unknown("`env -S` with quotes or expansions splits its string in ways the gate does not follow".into());
        }
        let next = next.min(argv.len());
        let mut inner_argv: Vec<String> = text.split_whitespace().map(String::from).collect();
        inner_argv.extend(argv[next..].iter().cloned());
        return Unwrap::Inner(Inner {
            wrapper: argv[..next].to_vec(),
            inners: if inner_argv.is_empty() {
                vec![]
            } else {
                vec![inner_argv]
            },
            chdir,
            env,
            paths: vec![],
        });
    }
    let i = i.min(argv.len());
    Unwrap::Inner(Inner {
        wrapper: argv[..i].to_vec(),
        inners: if i < argv.len() {
            vec![argv[i..].to_vec()]
        } else {
            vec![]
        },
        chdir,
        env,
        paths: vec![],
    })
}

/// Programs whose arguments can choose code or a program to run (wrappers,
/// interpreters, and programs with such options): behind `xargs`, whose
/// appended words the gate cannot see, they are not judged as written.
const XARGS_STEERED: &[&str] = &[
    "env", "command", "builtin", "exec", "nice", "nohup", "setsid", "timeout", "stdbuf", "time",
    "sudo", "doas", "busybox", "xargs", "parallel", "awk", "gawk", "mawk", "nawk", "sed", "gsed",
    "perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "tclsh", "git", "tar", "gtar",
    "bsdtar", "zip", "make", "gmake", "find", "rsync", "ssh", "scp", "vim", "vi", "nvim", "less",
    "more", "man", "npm", "npx", "pnpm", "yarn", "pip", "pip3", "cargo", "go", "gcc", "cc", "g++",
    "clang", "cmake", "jq", "curl", "wget", "flock", "watch", "ionice", "chrt", "taskset",
    "prlimit", "setpriv", "script", "unbuffer", "strace", "sqlite3", "rg",
];

/// Programs no option or operand of which writes, deletes, runs or reaches
/// anything: behind `xargs`, whatever words it appends, they only read.
const XARGS_READERS: &[&str] = &[
    "echo", "printf", "wc", "grep", "egrep", "fgrep", "basename", "dirname", "true",
];

/// git subcommands whose arguments name files, paths and revisions and never
/// a program or code: words xargs appends after one of them cannot choose
/// what runs (git reads its global options, `-c` among them, only before the
/// subcommand).
const GIT_INERT_SUBCOMMANDS: &[&str] = &[
    "add", "rm", "mv", "status", "ls-files", "log", "show", "diff", "blame", "restore", "checkout",
];

/// `xargs git add`, `xargs -I{} git rm {}`: the words xargs adds land after an
/// inert subcommand written out in full, never in it or before it.
fn git_inert_after_subcommand(inner: &[String], replace: Option<&str>, kb: Kb<'_>) -> bool {
    let n = knowledge::normalize(inner, kb);
    let Some((sub, at)) = n.words.iter().find_map(|w| match w {
        Word::Arg { text, at, .. } => Some((*text, *at)),
        _ => None,
    }) else {
        return false;
    };
    GIT_INERT_SUBCOMMANDS.contains(&sub)
        && replace.is_none_or(|r| inner[..=at].iter().all(|w| !w.contains(r)))
}

/// An option word the wrapper's entry does not name (a letter it lacks, a
/// long option it has not, or an ambiguous abbreviation): the command is
/// unknown, since the wrapper may read it as taking the next word.
fn unknown_option(
    program: &str,
    entry: &knowledge::ProgramEntry,
    argv: &[String],
    w: &Word<'_>,
) -> Option<Unwrap> {
    match w {
        Word::Short { letter, .. } if !knows_letter(entry, *letter) => {
            Some(Unwrap::Unknown(format!(
                "`{program} {}`: `-{letter}` is not an option of {program} that the gate knows",
                argv[w.at()]
            )))
        }
        Word::Long { owner: None, .. } => Some(Unwrap::Unknown(format!(
            "`{program} {}` is not an option of {program} that the gate knows (or an ambiguous abbreviation)",
            argv[w.at()]
        ))),
        _ => None,
    }
}

/// A short letter `entry` names (with or without a value, or as a long
/// option's letter).
fn knows_letter(entry: &knowledge::ProgramEntry, c: char) -> bool {
    entry.short_values.contains(&c)
        || entry.short_optional.contains(&c)
        || entry.long.iter().any(|o| o.short == Some(c))
}

/// `cmake -E env [NAME=VALUE…] CMD`, `cmake -E chdir DIR CMD`, `cmake -E
/// time CMD`: the command is judged (env's words as env's); other `-E`
/// commands and cmake itself are not wrappers.
fn unwrap_cmake(argv: &[String], kb: Kb<'_>) -> Unwrap {
    // `cmake --build DIR -- ARGS`: ARGS go to the native build tool, judged
    // as make's (`SHELL=`, `--eval`, `-f`).
    if argv.get(1).map(String::as_str) == Some("--build") {
        return match argv.iter().position(|a| a == "--") {
            Some(k) if k + 1 < argv.len() => {
                let mut make = vec!["make".to_string()];
                make.extend(argv[k + 1..].iter().cloned());
                Unwrap::Inner(Inner {
                    wrapper: argv[..=k].to_vec(),
                    inners: vec![make],
                    chdir: None,
                    env: vec![],
                    paths: vec![],
                })
            }
            _ => Unwrap::NotWrapper,
        };
    }
    if argv.get(1).map(String::as_str) != Some("-E") {
        return Unwrap::NotWrapper;
    }
    match argv.get(2).map(String::as_str) {
        Some("env") => {
            let env_argv: Vec<String> = std::iter::once("env".to_string())
                .chain(argv[3..].iter().cloned())
                .collect();
            match unwrap_env(&env_argv, kb) {
                Unwrap::Inner(mut inn) => {
                    let mut wrapper = argv[..3].to_vec();
                    wrapper.extend(inn.wrapper.into_iter().skip(1));
                    inn.wrapper = wrapper;
                    Unwrap::Inner(inn)
                }
                other => other,
            }
        }
        Some("chdir") => {
            let Some(dir) = argv.get(3) else {
                return Unwrap::Unknown("`cmake -E chdir` without a directory".into());
            };
            Unwrap::Inner(Inner {
                wrapper: argv[..4].to_vec(),
                inners: if argv.len() > 4 {
                    vec![argv[4..].to_vec()]
                } else {
                    vec![]
                },
                chdir: Some(dir.clone()),
                env: vec![],
                paths: vec![],
            })
        }
        Some("time") => inner(&argv[..3], &argv[3..]),
        _ => Unwrap::NotWrapper,
    }
}

/// Wrappers whose options are read by their knowledge-base entry (flock,
/// watch, ionice, chrt, taskset, prlimit, setpriv, strace): an option the
/// entry does not name makes the command unknown; then the wrapper's own
/// positionals (chrt's priority, taskset's mask, flock's file), then the
/// command it runs, judged as a command. `watch` without `-x` and `flock … -c`
/// hand their words to `sh -c`.
fn unwrap_by_entry(program: &str, argv: &[String], kb: Kb<'_>) -> Unwrap {
    let norm = knowledge::normalize(argv, kb);
    let Some(entry) = norm.entry else {
        return Unwrap::Unknown(format!("`{program}` has no entry in the knowledge base"));
    };
    let mut keys: Vec<(String, Option<String>)> = Vec::new();
    let mut i = argv.len();
    for w in &norm.words {
        if let Some(u) = unknown_option(program, entry, argv, w) {
            return u;
        }
        match w {
            Word::End { at } => {
                i = at + 1;
                break;
            }
            Word::Arg { at, .. } => {
                i = *at;
                break;
            }
            Word::Short { value, .. } | Word::Long { value, .. } => {
                keys.push((w.key().unwrap_or_default(), value.map(str::to_string)));
            }
        }
    }
    let i = i.min(argv.len());
    let has = |k: &str| keys.iter().any(|(key, _)| key == k);
    let value = |k: &str| {
        keys.iter()
            .find(|(key, _)| key == k)
            .and_then(|(_, v)| v.clone())
    };
    let mut paths = Vec::new();
    let mut env = Vec::new();
    let none = |wrapper: &[String], paths| {
        Unwrap::Inner(Inner {
            wrapper: wrapper.to_vec(),
            inners: vec![],
            chdir: None,
            env: vec![],
            paths,
        })
    };
    // Where the wrapper's own words end, and the command it runs.
    let (own, command): (usize, Vec<String>) = match program {
        "flock" => {
            // `flock FILE CMD…`, `flock FILE -c CMD`, `flock -c CMD FILE`, `flock FD`.
            if let Some(f) = argv.get(i) {
                paths.push((f.clone(), Access::Write));
            }
            if let Some(code) = value("-c") {
                return Unwrap::Inner(Inner {
                    wrapper: argv[..i].to_vec(),
                    inners: vec![vec!["sh".into(), "-c".into(), code]],
                    chdir: None,
                    env,
                    paths,
                });
            }
            let rest = (i + 1).min(argv.len());
            match argv.get(rest).map(String::as_str) {
                Some("-c" | "--command") => match argv.get(rest + 1) {
                    Some(code) => (rest, vec!["sh".into(), "-c".into(), code.clone()]),
                    None => return Unwrap::Unknown("`flock -c` without a command".into()),
                },
                _ => (rest, argv[rest..].to_vec()),
            }
        }
        "watch" if has("-x") => (i, argv[i..].to_vec()),
        "watch" => {
            if i >= argv.len() {
                return none(argv, paths);
            }
            (i, vec!["sh".into(), "-c".into(), argv[i..].join(" ")])
        }
        "ionice" | "prlimit" if has("-p") || has("-P") || has("-u") && program == "ionice" => {
            return none(argv, paths)
        }
        "chrt" | "taskset" if has("-p") || has("-m") && program == "chrt" => {
            return none(argv, paths)
        }
        // The priority or the mask, then the command.
        "chrt" | "taskset" => {
            let rest = (i + 1).min(argv.len());
            (rest, argv[rest..].to_vec())
        }
        "setpriv" if has("-d") => return none(argv, paths),
        "strace" => {
            if let Some(out) = value("-o") {
                if !out.starts_with(['|', '!']) {
                    paths.push((out, Access::Write));
                }
            }
            for (k, v) in &keys {
                if k == "-E" {
                    if let Some((n, val)) = v.as_deref().and_then(|v| v.split_once('=')) {
                        env.push((n.to_string(), val.to_string()));
                    }
                }
            }
            if has("-p") {
                return none(argv, paths);
            }
            (i, argv[i..].to_vec())
        }
        _ => (i, argv[i..].to_vec()),
    };
    Unwrap::Inner(Inner {
        wrapper: argv[..own.min(argv.len())].to_vec(),
        inners: if command.is_empty() {
            vec![]
        } else {
            vec![command]
        },
        chdir: None,
        env,
        paths,
    })
}

/// xargs's options are read by the knowledge base's normaliser over its
/// `xargs` entry, as xargs reads them: which take a value (`--process-slot-var
/// NAME`), which take one only attached (`--eof`, `--replace`, `--max-lines`),
/// clusters (`-rI{}`) and abbreviations (`--repl=X`); an option the entry does
/// not name makes the command unknown.
fn unwrap_xargs(argv: &[String], kb: Kb<'_>) -> Unwrap {
    let norm = knowledge::normalize(argv, kb);
    let Some(entry) = norm.entry else {
        return Unwrap::Unknown("`xargs` has no entry in the knowledge base".into());
    };
    let mut paths = Vec::new();
    // The string xargs replaces in the command's words (-I, -i, --replace).
    let mut replace: Option<String> = None;
    let mut i = argv.len();
    for w in &norm.words {
        if let Some(u) = unknown_option("xargs", entry, argv, w) {
            return u;
        }
        match w {
            Word::End { at } => {
                i = at + 1;
                break;
            }
            Word::Arg { at, .. } => {
                i = *at;
                break;
            }
            Word::Short { value, .. } | Word::Long { value, .. } => match w.key().as_deref() {
                Some("-a") => paths.extend(value.map(|v| (v.to_string(), Access::Read))),
                Some("-I") => replace = value.map(str::to_string),
                Some("-i") => replace = Some(value.unwrap_or("{}").to_string()),
                _ => {}
            },
        }
    }
    let i = i.min(argv.len());
    let inner_argv = if i < argv.len() {
        argv[i..].to_vec()
    } else {
        vec!["echo".to_string()]
    };
    // xargs appends words read from stdin, which the gate never sees, and
    // they may be options as well as operands: for a program whose arguments
    // can name the program it runs, its code or its options that run one
    // (`echo touch x | xargs env`, `| xargs awk`, `| xargs tar` with
    // `--to-command=`), they decide what runs; for any other but a few pure
    // readers, what it deletes, writes or reaches (`printf '%s\n' -r -f /etc
    // | xargs rm`, `| xargs sort` with `--compress-program=`).
    let inner_program = crate::rules::program_name(&inner_argv[0]);
    let inert =
        inner_program == "git" && git_inert_after_subcommand(&inner_argv, replace.as_deref(), kb);
    if !inert
        && (XARGS_STEERED.contains(&inner_program)
            || SHELLS.contains(&inner_program)
            || inner_program.starts_with("python"))
    {
        return Unwrap::Unknown(format!(
            "`xargs {inner_program}` adds words from standard input to the command, and for `{inner_program}` they can choose what it runs"
        ));
    }
    if !inert && !XARGS_READERS.contains(&inner_program) {
        return Unwrap::Unknown(format!(
            "`xargs {inner_program}` gives {inner_program} arguments read from its input, which the gate cannot see, and {inner_program}'s options and operands decide what it deletes, writes, runs or reaches; run {inner_program} with the arguments spelled out"
        ));
    }
    Unwrap::Inner(Inner {
        wrapper: argv[..i].to_vec(),
        inners: vec![inner_argv],
        chdir: None,
        env: vec![],
        paths,
    })
}

fn unwrap_find(argv: &[String]) -> Unwrap {
    let mut i = 1;
    // Leading options -H -L -P -D debugopts -Olevel.
    while i < argv.len() {
        let a = argv[i].as_str();
        if a == "-H" || a == "-L" || a == "-P" || a.starts_with("-O") {
            i += 1;
        } else if a == "-D" {
            i += 2;
        } else {
            break;
        }
    }
    let mut roots = Vec::new();
    while i < argv.len() {
        let a = argv[i].as_str();
        if a.starts_with('-') || a == "(" || a == "!" || a == "," {
            break;
        }
        roots.push(a.to_string());
        i += 1;
    }
    if roots.is_empty() {
        roots.push(".".into());
    }
    let deletes = argv[i.min(argv.len())..].iter().any(|a| a == "-delete");
    let mut paths: Vec<(String, Access)> = roots
        .iter()
        .map(|r| {
            (
                r.clone(),
                if deletes { Access::Write } else { Access::Read },
            )
        })
        .collect();
    let mut wrapper: Vec<String> = argv[..i.min(argv.len())].to_vec();
    let mut inners = Vec::new();
    while i < argv.len() {
        let a = argv[i].as_str();
        match a {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let mut cmd = Vec::new();
                let mut j = i + 1;
                while j < argv.len() && argv[j] != ";" && argv[j] != "+" {
                    // `{}` is a found path: somewhere under the roots.
                    let w = if argv[j] == "{}" {
                        roots[0].clone()
                    } else {
                        argv[j].clone()
                    };
                    cmd.push(w);
                    j += 1;
                }
                if cmd.is_empty() {
                    return Unwrap::Unknown(format!("`find {a}` without a command"));
                }
                inners.push(cmd);
                i = j + 1;
            }
            "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                if let Some(f) = argv.get(i + 1) {
                    paths.push((f.clone(), Access::Write));
                }
                wrapper.extend(argv[i..(i + 2).min(argv.len())].iter().cloned());
                i += 2;
            }
            _ => {
                wrapper.push(a.to_string());
                i += 1;
            }
        }
    }
    if inners.is_empty() {
        return Unwrap::NotWrapper;
    }
    Unwrap::Inner(Inner {
        wrapper,
        inners,
        chdir: None,
        env: vec![],
        paths,
    })
}

const KEYWORD_SHELL: &str = "the shell is started in keyword mode (`-k`, `-o keyword`): it passes every `NAME=value` word, wherever it stands, to its command as an environment variable, which the gate does not follow; start it without keyword mode";

fn unwrap_shell(argv: &[String]) -> Unwrap {
    let mut i = 1;
    let mut has_c = false;
    let mut reads_stdin = false;
    while i < argv.len() {
        let a = argv[i].as_str();
        if a == "--" || a == "-" {
            i += 1;
            break;
        }
        if a == "-o" && argv.get(i + 1).is_some_and(|o| o == "keyword") {
            return Unwrap::Unknown(KEYWORD_SHELL.into());
        }
        if a == "-o" || a == "+o" || a == "-O" || a == "+O" {
            i += 2;
            continue;
        }
        if a == "--rcfile" || a == "--init-file" {
            return Unwrap::Unknown(format!(
                "`{a}` makes the shell run a file the gate cannot see"
            ));
        }
        if let Some(long) = a.strip_prefix("--") {
            let _ = long;
            i += 1;
            continue;
        }
        if a.starts_with('-') || a.starts_with('+') {
            let letters = &a[1..];
            if letters.contains('c') {
                has_c = true;
            }
            if a.starts_with('-') && letters.contains('k') {
                return Unwrap::Unknown(KEYWORD_SHELL.into());
            }
            if letters.contains('s') || letters.contains('i') {
                reads_stdin = true;
            }
            i += 1;
            continue;
        }
        break;
    }
    let wrapper = argv[..i.min(argv.len())].to_vec();
    if has_c {
        return match argv.get(i) {
            Some(code) => Unwrap::Code {
                wrapper,
                code: code.clone(),
            },
            None => Unwrap::Unknown("`-c` without a command string".into()),
        };
    }
    if reads_stdin || i >= argv.len() {
        return Unwrap::Unknown(format!(
            "`{}` reads its program from standard input (a pipe, here-document or file), which the gate cannot see",
            argv[0]
        ));
    }
    // `bash script.sh`: runs a file; judged as the shell itself.
    Unwrap::NotWrapper
}
