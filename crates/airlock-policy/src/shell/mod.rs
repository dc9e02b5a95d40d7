//! Shell analysis: bash text to the simple commands it would run.
//!
//! The whole string is parsed by brush-parser (a real bash parser), except a
//! plain line of words, simple quotes and `&&`/`||`/`;`/`|`, which
//! [`plain`] reads into the same tree much faster. The tree is walked in
//! execution order; every simple command becomes a [`Segment`] with
//! its argv after quote removal, the wrappers it was found inside, the working
//! directories it may run in, and the paths it names. Whatever cannot be known
//! before running is recorded as `unknown` and never guessed.

pub mod hazards;
mod plain;
pub(crate) use plain::literal_word;
mod unwrap;
pub mod words;

use crate::knowledge::{self, Finding, InnerRun, Kb, Knowledge};
use brush_parser::ast;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use words::{expand, short, Assigned, Expansion, Vars};

/// Deepest nesting of shells-in-shells (`sh -c`) and function calls analysed.
pub const MAX_SHELL_DEPTH: usize = 8;
/// Deepest syntactic nesting accepted (brackets, keywords) before parsing.
pub const MAX_NESTING: usize = 64;
/// At most this many segments per request; more is "too complex".
pub const MAX_SEGMENTS: usize = 4096;
/// At most this many passes over the bodies of loops nested in one
/// outermost loop. Each loop is judged until its values settle (up to four
/// passes), so nested loops multiply: ten of them cost 4^10 passes, bounded
/// before by MAX_SEGMENTS alone (25 ms for a line). A three-deep nest takes
/// at most 4 + 16 + 64; loops one after another are not counted together.
pub const MAX_NESTED_LOOP_PASSES: usize = 256;
/// At most this many words in all segments of a request, after brace expansion
/// and unwrapping; more is "too complex". Brace expansion multiplies words, and
/// function bodies are judged at every call, so a short string could otherwise
/// make the gate judge millions (found by fuzzing: 700 bytes took 0.4 s).
pub const MAX_WORDS: usize = 16384;

/// The parser's work bound for one request: a base plus this much per byte.
/// brush-parser backtracks without memoization, so a few hundred hostile bytes
/// could take minutes (found by fuzzing, again and again, in new shapes); with
/// the bound the parser gives up, and the request is unknown, within a few
/// milliseconds for a line and 0.14 s for 64 KiB of the worst shape known
/// (release build). Everyday text takes 2–7 steps a byte (a
/// 64 KiB script of `if`/`case`/`[[`/subshells: 6.3), so the bound is an order
/// of magnitude above anything an agent sends.
pub const PARSE_STEPS_BASE: u64 = 50_000;
pub const PARSE_STEPS_PER_BYTE: u64 = 64;

/// The parser's steps for a request of `bytes` bytes.
pub fn parse_steps(bytes: usize) -> u64 {
    PARSE_STEPS_BASE.saturating_add(PARSE_STEPS_PER_BYTE.saturating_mul(bytes as u64))
}

/// At most this many commands run by one program's options (`tar -I a -I b …`)
/// are judged; more is unknown (each is a segment of its own).
pub const MAX_INNER_RUNS: usize = 16;

/// How a path is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
        }
    }
}

/// A path named by a segment (argument, redirection target, `cd` target).
#[derive(Debug, Clone, PartialEq)]
pub struct PathUse {
    pub text: String,
    pub access: Access,
    /// "argument", "redirection", "working directory", "program".
    pub role: &'static str,
}

/// The working directories a segment may run in.
#[derive(Debug, Clone, PartialEq)]
pub enum Cwd {
    /// One of these absolute, lexically normalised directories.
    Known(Vec<PathBuf>),
    /// Not knowable (e.g. after `cd` in a loop).
    Unknown(String),
}

impl Cwd {
    fn merge(&mut self, other: &Cwd) {
        match (&mut *self, other) {
            (Cwd::Known(a), Cwd::Known(b)) => {
                for p in b {
                    if !a.contains(p) {
                        a.push(p.clone());
                    }
                }
                if a.len() > 8 {
                    *self =
                        Cwd::Unknown("the working directory depends on too many branches".into());
                }
            }
            (Cwd::Unknown(_), _) => {}
            (_, Cwd::Unknown(why)) => *self = Cwd::Unknown(why.clone()),
        }
    }
}

/// One simple command, as it would run.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// The argv judged: after quote removal and unwrapping. Empty for a command
    /// that only redirects or assigns.
    pub argv: Vec<String>,
    /// The wrappers it was found inside, outermost first, each with its own argv
    /// (`["timeout", "5"]`, `["sh", "-c"]`).
    pub wrappers: Vec<Vec<String>>,
    pub cwd: Cwd,
    pub paths: Vec<PathUse>,
    /// Arguments whose value is only known at run time: (as written, why).
    pub unknown_args: Vec<(String, String)>,
    /// Why this segment's effect cannot be known (→ `on_unknown`).
    pub unknown: Option<String>,
    /// `/dev/tcp/…` and `/dev/udp/…` redirections.
    pub net_redirects: Vec<String>,
    /// Calls a function defined in the same script (its body is judged on its own).
    pub function_call: bool,
    /// The words after the program are data, not paths (`echo`, `printf`, `test`…).
    pub data_only: bool,
    /// What the program knowledge base says about its options, arguments and
    /// environment assignments.
    pub findings: Vec<Finding>,
    /// The argv in normalised form (options split, abbreviations expanded).
    pub normalized: Vec<String>,
    /// argv indices the knowledge base says are scripts, not paths (`sed 's/a/b/'`).
    pub data_args: Vec<usize>,
    /// Argument values from words with an unquoted `*`, `?` or `[...]`: the
    /// shell replaces them with the names they match. (Values, not indices:
    /// unwrapping `env` or `xargs` moves the arguments.)
    pub glob_args: Vec<String>,
}

impl Segment {
    fn new(cwd: &Cwd) -> Self {
        Segment {
            argv: Vec::new(),
            wrappers: Vec::new(),
            cwd: cwd.clone(),
            paths: Vec::new(),
            unknown_args: Vec::new(),
            unknown: None,
            net_redirects: Vec::new(),
            function_call: false,
            data_only: false,
            findings: Vec::new(),
            normalized: Vec::new(),
            data_args: Vec::new(),
            glob_args: Vec::new(),
        }
    }
}

/// The result of analysing one shell string.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    pub segments: Vec<Segment>,
    /// Set when the string as a whole cannot be analysed (parse error, too deep).
    pub unknown: Option<String>,
}

/// What the analysis needs to know about where it runs.
#[derive(Debug, Clone)]
pub struct Context {
    pub cwd: PathBuf,
    /// What `~` and `$HOME` mean inside the sandbox.
    pub home: String,
    /// The policy's additions to the program knowledge base (empty: the built-in one alone).
    pub knowledge: Arc<Knowledge>,
}

impl Context {
    pub fn new(cwd: PathBuf, home: String) -> Self {
        Context {
            cwd,
            home,
            knowledge: Arc::default(),
        }
    }
}

/// Analyse a bash string.
pub fn analyze(text: &str, ctx: &Context) -> Analysis {
    guarded(text.len(), || analyze_inner(text, ctx))
}

/// The parser is a dependency: should it ever panic on some input, or take
/// more than its work bound ([`PARSE_STEPS_PER_BYTE`]) on it, that input is
/// unknown (→ `on_unknown`), never a crash, a hang or an allow.
fn guarded(bytes: usize, f: impl FnOnce() -> Analysis) -> Analysis {
    let steps = parse_steps(bytes);
    let run = std::panic::AssertUnwindSafe(|| brush_parser::budget::with_budget(steps, f));
    match std::panic::catch_unwind(run) {
        Ok(Ok(analysis)) => analysis,
        Ok(Err(brush_parser::budget::Exhausted)) => Analysis {
            segments: Vec::new(),
            unknown: Some(format!(
                "the shell text is too intricate to analyse: parsing it took more than {steps} steps; send simpler commands, one at a time"
            )),
        },
        Err(_) => Analysis {
            segments: Vec::new(),
            unknown: Some("the shell parser failed on this text".into()),
        },
    }
}

fn analyze_inner(text: &str, ctx: &Context) -> Analysis {
    analyze_with(text, ctx, true)
}

fn analyze_with(text: &str, ctx: &Context, plain_fast_path: bool) -> Analysis {
    with_line_facts(|assumed| {
        let mut a = Analyzer::new(ctx, plain_fast_path, assumed);
        let cwd = Cwd::Known(vec![crate::load::absolute_lexical(&ctx.cwd)]);
        let mut state = State {
            cwd,
            vars: Vars::default(),
            oldpwd: None,
            cd_fallback: None,
        };
        let unknown = a.shell_text(text, &mut state, 0);
        let unknown = unknown.or(a.too_complex.take());
        let mut segments = a.segments;
        dotdot_after_links(&mut segments);
        (Analysis { segments, unknown }, a.seen)
    })
}

/// Facts about the whole line that change how assignments anywhere in it
/// behave: `set -a` exports every later assignment, `declare -i` makes `+=`
/// arithmetic and `declare -l`/`-u` rewrite values. Loops, functions and
/// traps run commands in another order than they are written, so what one
/// pass finds is assumed from the start of the next, until nothing new is
/// found.
#[derive(Debug, Clone, Default, PartialEq)]
struct LineFacts {
    /// Plain assignments may be exported (`set -a`, `set -o allexport`).
    allexport: bool,
    /// Names given attributes that change what an assignment stores.
    attributed: std::collections::BTreeSet<String>,
    /// Attributes were given to names only known at run time.
    any_attributed: bool,
    /// Names given the integer attribute (`declare -i`): bash evaluates
    /// what is stored in them as arithmetic, where an array subscript runs
    /// a command.
    integers: std::collections::BTreeSet<String>,
    /// The integer attribute was given to names only known at run time.
    any_integer: bool,
}

impl LineFacts {
    fn covers(&self, other: &LineFacts) -> bool {
        (self.allexport || !other.allexport)
            && (self.any_attributed || !other.any_attributed)
            && other.attributed.is_subset(&self.attributed)
            && (self.any_integer || !other.any_integer)
            && other.integers.is_subset(&self.integers)
    }
    fn join(&mut self, other: &LineFacts) {
        self.allexport |= other.allexport;
        self.any_attributed |= other.any_attributed;
        self.attributed.extend(other.attributed.iter().cloned());
        self.any_integer |= other.any_integer;
        self.integers.extend(other.integers.iter().cloned());
    }
    fn attributed(&self, name: &str) -> bool {
        self.any_attributed || self.attributed.contains(name)
    }
    /// Whether storing in `name` evaluates the value as arithmetic: a name
    /// given the integer attribute, or one of bash's own that has it.
    fn integer(&self, name: &str) -> bool {
        self.any_integer || self.integers.contains(name) || INTEGER_SPECIALS.contains(&name)
    }
}

/// bash's own variables that evaluate what is stored in them as arithmetic
/// (bash 5.2: `read OPTIND < f` runs `a[$(cmd)]` in `f`).
const INTEGER_SPECIALS: &[&str] = &["RANDOM", "SRANDOM", "OPTIND", "HISTCMD"];

/// Why storing a value the gate cannot see in `name` is unknown.
fn integer_why(how: &str, name: &str) -> String {
    format!(
        "{how} stores a value the gate cannot see in `{name}`, which has the integer attribute: bash evaluates it as arithmetic, where an array subscript runs a command; store it in a name without the attribute and check it first (`case $x in *[!0-9]*) exit 1;; esac`)"
    )
}

/// Run an analysis until the facts it finds are all assumed (at most three
/// passes: the facts only grow, and a third pass that still finds new ones
/// is refused).
fn with_line_facts(mut pass: impl FnMut(&LineFacts) -> (Analysis, LineFacts)) -> Analysis {
    let mut assumed = LineFacts::default();
    for _ in 0..3 {
        let (analysis, seen) = pass(&assumed);
        if assumed.covers(&seen) {
            return analysis;
        }
        assumed.join(&seen);
    }
    Analysis {
        segments: Vec::new(),
        unknown: Some(
            "the shell options and variable attributes the command sets do not settle".into(),
        ),
    }
}

/// A command that makes symbolic links can make a `..` in a later path lead
/// anywhere (`ln -s . d/x && cat d/x/x/../../../etc/f`): the boundary is
/// checked on the filesystem as it is before the command runs, where the
/// links do not exist yet. Every other segment using such a path is unknown.
fn dotdot_after_links(segments: &mut [Segment]) {
    let makes_link = |seg: &Segment| {
        let program = crate::rules::program_name(seg.argv.first().map_or("", String::as_str));
        let symbolic = |a: &String| {
            a == "--symbolic"
                || a == "--symbolic-link"
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('s'))
        };
        matches!(program, "ln" | "cp") && seg.argv.iter().skip(1).any(symbolic)
    };
    if !segments.iter().any(makes_link) {
        return;
    }
    for seg in segments.iter_mut().filter(|s| !makes_link(s)) {
        let word = seg
            .paths
            .iter()
            .map(|p| p.text.as_str())
            .chain(seg.argv.iter().skip(1).map(String::as_str))
            .find(|t| climbs(t))
            .map(str::to_string);
        if let Some(w) = word {
            seg.unknown.get_or_insert(format!(
                "the command makes symbolic links, so `..` in `{w}` may lead anywhere once they exist"
            ));
        }
    }
}

/// Whether [`analyze`] reads `text` without brush-parser ([`plain`]).
#[doc(hidden)]
pub fn reads_plain(text: &str) -> bool {
    plain::words(text).is_some() || plain::program(text).is_some()
}

/// [`analyze`] with brush-parser reading every line, for the fuzz target that
/// holds the plain reader equal to the parser.
#[doc(hidden)]
pub fn analyze_with_parser_only(text: &str, ctx: &Context) -> Analysis {
    guarded(text.len(), || analyze_with(text, ctx, false))
}

/// Analyse an argv run without a shell: no expansion, but wrappers unwrap.
pub fn analyze_argv(argv: &[String], ctx: &Context) -> Analysis {
    guarded(argv.iter().map(|a| a.len() + 1).sum(), || {
        analyze_argv_inner(argv, ctx)
    })
}

fn analyze_argv_inner(argv: &[String], ctx: &Context) -> Analysis {
    with_line_facts(|assumed| {
        let mut a = Analyzer::new(ctx, true, assumed);
        let mut state = State {
            cwd: Cwd::Known(vec![crate::load::absolute_lexical(&ctx.cwd)]),
            vars: Vars::default(),
            oldpwd: None,
            cd_fallback: None,
        };
        let mut seg = Segment::new(&state.cwd);
        seg.argv = argv.to_vec();
        a.invocation(seg, &mut state, 0, 0, 0);
        let analysis = Analysis {
            segments: a.segments,
            unknown: a.too_complex.take(),
        };
        (analysis, a.seen)
    })
}

/// The argvs of the simple commands in an example string (rule examples).
pub fn example_argvs(text: &str) -> Result<Vec<Vec<String>>, String> {
    let ctx = Context::new(PathBuf::from("/"), "/".into());
    let analysis = analyze(text, &ctx);
    if let Some(why) = analysis.unknown {
        return Err(why);
    }
    let argvs: Vec<Vec<String>> = analysis
        .segments
        .into_iter()
        .filter(|s| !s.argv.is_empty())
        .map(|s| s.argv)
        .collect();
    if argvs.is_empty() {
        return Err("the example has no command".into());
    }
    Ok(argvs)
}

#[derive(Debug, Clone)]
struct State {
    cwd: Cwd,
    vars: Vars,
    oldpwd: Option<Cwd>,
    /// Where the shell stays if the last `cd` failed (a directory the gate
    /// does not see on disk nor made earlier in the line): after `;` the
    /// line goes on there too.
    cd_fallback: Option<Cwd>,
}

impl State {
    /// Before a command's words are expanded: a known value the expansion
    /// itself replaces (`cat $((x=1)) $x`) is no longer known. A name the
    /// gate cannot see stays unseen until the expansion that reads it is
    /// judged.
    fn forget_before(&mut self, a: &Assigned) {
        if a.any {
            self.vars.known.clear();
        }
        for name in a.integers.iter().chain(&a.defaults) {
            self.vars.known.remove(name);
        }
    }

    /// After the command: arithmetic left an integer in each name it
    /// assigned (harmless where arithmetic reads it, as after
    /// `x=$((…))`), and `${x:=word}` a value the gate does not follow.
    fn forget_after(&mut self, a: &Assigned) {
        if a.any {
            self.vars.known.clear();
        }
        for name in &a.integers {
            self.vars.unset(name);
        }
        for name in &a.defaults {
            self.vars.set_unseen(name);
        }
    }

    /// After code that runs at times the gate does not follow (a trap's
    /// handler, which a DEBUG trap runs before every later command): every
    /// value it may change, and its working directory, are no longer known.
    fn forget_changed_by(&mut self, other: &State, what: &str) {
        let changed: Vec<String> = (self.vars.known.iter())
            .filter(|(name, values)| other.vars.known.get(*name) != Some(*values))
            .map(|(name, _)| name.clone())
            .collect();
        for name in changed.iter().chain(&other.vars.unseen) {
            self.vars.set_unseen(name);
        }
        if other.cwd != self.cwd {
            self.cwd = Cwd::Unknown(format!("{what} changes the working directory"));
        }
    }

    /// After a branch that may or may not have run: either state is possible.
    fn merge(&mut self, other: &State) {
        self.cwd.merge(&other.cwd);
        let names: Vec<String> = self.vars.known.keys().cloned().collect();
        for name in names {
            match other.vars.known.get(&name) {
                Some(vals) => {
                    let mine = self.vars.known.get_mut(&name).expect("key listed above");
                    for v in vals {
                        if !mine.contains(v) {
                            mine.push(v.clone());
                        }
                    }
                    if mine.len() > words::MAX_ALTERNATIVES {
                        self.vars.known.remove(&name);
                    }
                }
                None => {
                    self.vars.known.remove(&name);
                }
            }
        }
        self.vars.unseen.extend(other.vars.unseen.iter().cloned());
        for name in &other.vars.unseen {
            self.vars.known.remove(name);
        }
    }
}

struct Analyzer {
    kb: Arc<Knowledge>,
    home: String,
    /// Read plain lines (see [`plain`]) without brush-parser.
    /// Only the differential test turns it off, to compare the two paths.
    plain_fast_path: bool,
    segments: Vec<Segment>,
    functions: HashMap<String, ast::FunctionBody>,
    call_stack: Vec<String>,
    too_complex: Option<String>,
    /// Words in the segments pushed so far (bounded by [`MAX_WORDS`]).
    words: usize,
    /// What an earlier pass found about the line ([`LineFacts`]).
    assumed: LineFacts,
    /// What this pass finds.
    seen: LineFacts,
    /// Loops being judged around the current command.
    loop_depth: usize,
    /// Passes over loop bodies inside the current outermost loop
    /// (bounded by [`MAX_NESTED_LOOP_PASSES`]).
    nested_loop_passes: usize,
    /// Directories `mkdir` makes earlier in the line (absolute, lexical):
    /// a `cd` into one succeeds.
    made_dirs: Vec<PathBuf>,
}

/// Programs whose arguments are data, not paths.
const DATA_ONLY: &[&str] = &[
    "echo", "printf", "true", "false", "test", "[", ":", "set", "shift", "exit", "return", "wait",
    "sleep", "seq", "yes", "expr", "type", "which", "umask", "ulimit", "unset", "getopts", "break",
    "continue", "kill", "date", "id", "whoami", "uname", "hostname", "pwd", "printenv", "export",
    "declare", "typeset", "local", "readonly", "let", "shopt", "trap",
];

/// Builtins that take variable names (or arithmetic) as arguments and so
/// evaluate an array subscript in them.
const NAME_EVALUATING: &[&str] = &[
    "test",
    "[",
    "[[",
    "((",
    "let",
    "read",
    "printf",
    "unset",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "mapfile",
    "readarray",
    "getopts",
    "wait",
    "shift",
    "return",
    "exit",
    "for",
];

/// Builtins whose effect cannot be known before running.
fn never_known(program: &str, argv: &[String]) -> Option<String> {
    let why = match program {
        "eval" => "`eval` runs text built at run time".to_string(),
        "source" | "." if venv_activation(argv) => return None,
        "source" | "." => format!("`{program}` runs the commands of a file the gate cannot see"),
        "alias" if argv.len() > 1 => "`alias` changes what later command names mean".into(),
        "enable" => "`enable` can load or swap shell builtins".into(),
        "hash" if argv.iter().any(|a| a.starts_with("-p")) => {
            "`hash -p` changes which program a name runs".into()
        }
        "fc" => "`fc` re-runs commands from history".into(),
        "mapfile" | "readarray" if argv.iter().any(|a| a.starts_with("-C")) => {
            format!("`{program} -C` runs a callback")
        }
        "coproc" => "`coproc` runs a command the gate cannot see".into(),
        p if response_file(argv).is_some() && reads_response_files(p) => format!(
            "`{program}` reads more options from the file `{}` (a response file), which the gate does not see; write them out instead",
            response_file(argv).unwrap_or_default()
        ),
        "git" if git_config_injection(argv) => {
            "`git -c`/`--config-env`/`--exec-path` can make git run arbitrary programs (core.pager, alias.*, core.sshCommand)".into()
        }
        _ => return None,
    };
    Some(why)
}

/// The shell options a `set` or `shopt -o` command line turns on (`-ek`,
/// `-o keyword`, `shopt -so allexport`), as `set -o` names them; `Err` when an
/// option word is only known at run time.
fn enabled_shell_options(
    program: &str,
    argv: &[String],
    unknown: &[String],
) -> Result<Vec<String>, String> {
    let letter_name = |c: char| match c {
        'k' => Some("keyword"),
        'a' => Some("allexport"),
        _ => None,
    };
    let mut on = Vec::new();
    let shopt_o = program == "shopt"
        && argv
            .iter()
            .skip(1)
            .take_while(|a| a.starts_with('-') && a.as_str() != "--")
            .any(|a| a.contains('o'));
    if program == "shopt" {
        if shopt_o {
            for a in argv.iter().skip(1).filter(|a| !a.starts_with('-')) {
                if unknown.contains(a) {
                    return Err(a.clone());
                }
                on.push(a.clone());
            }
        }
        return Ok(on);
    }
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].as_str();
        if unknown.iter().any(|u| u == a) {
            return Err(a.to_string());
        }
        if a == "--" || a == "-" || !(a.starts_with('-') || a.starts_with('+')) || a.len() < 2 {
            // The rest are positional parameters.
            break;
        }
        let enabling = a.starts_with('-');
        for c in a[1..].chars() {
            if c == 'o' {
                i += 1;
                match argv.get(i) {
                    Some(name) if unknown.contains(name) => return Err(name.clone()),
                    Some(name) if enabling => on.push(name.clone()),
                    _ => {}
                }
            } else if enabling {
                on.extend(letter_name(c).map(String::from));
            }
        }
        i += 1;
    }
    Ok(on)
}

/// A shell started with allexport on (`bash -a -c …`, `-o allexport`).
fn shell_allexport(wrapper: &[String]) -> bool {
    wrapper.iter().enumerate().skip(1).any(|(i, a)| {
        (a.starts_with('-') && !a.starts_with("--") && a.contains('a'))
            || (a == "-o" && wrapper.get(i + 1).is_some_and(|o| o == "allexport"))
    })
}

/// Why a shell option makes the rest of the line impossible to judge.
fn unfollowed_shell_option(how: &str, option: &str) -> Option<String> {
    (option == "keyword").then(|| format!(
        "`{how}` turns on keyword mode: bash then passes every later `NAME=value` word, wherever it stands, to its command as an environment variable, which the gate does not follow; leave keyword mode off and write assignments before the command (`NAME=value cmd`)"
    ))
}

/// An assigned value that names a path the boundary must see: absolute,
/// under `~`, or climbing with `..` (`TMPDIR=./../out`).
fn path_like_value(v: &str) -> bool {
    v.starts_with('/') || v.starts_with('~') || climbs(v)
}

/// A path with a `..` component.
fn climbs(path: &str) -> bool {
    path.split('/').any(|c| c == "..")
}

/// What a compiler driver passes on to the linker, assembler or preprocessor
/// (`-Wl,a,b`, `-Wa,…`, `-Wp,…`, `-Xlinker a`): each list, by tool.
pub(crate) fn passed_lists(argv: &[String]) -> Vec<(Tool, Vec<String>)> {
    let mut out = Vec::new();
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].as_str();
        let tool = |t: &str| match t {
            "l" | "linker" => Some(Tool::Linker),
            "a" | "assembler" => Some(Tool::Assembler),
            "p" | "preprocessor" => Some(Tool::Preprocessor),
            _ => None,
        };
        if let Some((t, list)) = a.strip_prefix("-W").and_then(|r| r.split_once(',')) {
            if let Some(t) = tool(t) {
                out.push((t, list.split(',').map(String::from).collect()));
            }
        } else if let Some(t) = a.strip_prefix("-X").and_then(tool) {
            if let Some(v) = argv.get(i + 1) {
                out.push((t, vec![v.clone()]));
                i += 1;
            }
        }
        i += 1;
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Tool {
    Linker,
    Assembler,
    Preprocessor,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Linker => "linker",
            Tool::Assembler => "assembler",
            Tool::Preprocessor => "preprocessor",
        }
    }
}

/// What one list passed to a tool does: the files it writes, whether it names
/// a response file (`@opts`, options the gate does not see), whether it loads
/// a linker plugin.
#[derive(Debug, Default)]
pub(crate) struct ListEffects {
    pub writes: Vec<String>,
    pub response_file: Option<String>,
    pub plugin: bool,
}

pub(crate) fn list_effects(tool: Tool, items: &[String]) -> ListEffects {
    let mut fx = ListEffects::default();
    let mut k = 0;
    while k < items.len() {
        let item = items[k].as_str();
        let next = || items.get(k + 1).cloned();
        let mut took_next = false;
        let mut out: Option<String> = None;
        if item.len() > 1 && item.starts_with('@') {
            fx.response_file.get_or_insert(item.to_string());
        } else if tool == Tool::Linker
            && (item.starts_with("-plugin") || item.starts_with("--plugin"))
        {
            fx.plugin = true;
        } else if item == "-o" {
            out = next();
            took_next = true;
        } else if let Some(v) = item.strip_prefix("-o").filter(|_| !item.starts_with("--")) {
            out = Some(v.to_string());
        } else if let Some(body) = item.strip_prefix('-') {
            // ld and as take long options with one dash or two, and
            // unique abbreviations (`--out` is --output).
            let body = body.strip_prefix('-').unwrap_or(body);
            let (name, value) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            let abbreviates = |full: &str| name.len() >= 2 && full.starts_with(name);
            let writes = match tool {
                Tool::Linker => {
                    abbreviates("output")
                        || abbreviates("out-implib")
                        || name == "Map"
                        || abbreviates("dependency-file")
                }
                Tool::Preprocessor => matches!(name, "MD" | "MMD" | "MF"),
                Tool::Assembler => {
                    abbreviates("MD") && name == "MD"
                        || (name.starts_with('a') && value.is_some())
                        || abbreviates("listing-lhs")
                }
            };
            if tool == Tool::Preprocessor && name.len() > 2 && name.starts_with("MF") {
                out = Some(name[2..].to_string());
            } else if writes {
                match value {
                    Some(v) => out = Some(v),
                    None => {
                        out = next();
                        took_next = true;
                    }
                }
            }
        }
        if let Some(p) = out.filter(|p| !p.is_empty()) {
            fx.writes.push(p);
        }
        k += if took_next { 2 } else { 1 };
    }
    fx
}

/// A compiler driver's `-Wl,a,b,c` passes `a b c` to the linker (and `-Wa,`
/// to the assembler, `-Wp,` to the preprocessor): a plugin there loads code
/// (approval), `@FILE` holds options the gate does not see (unknown, as the
/// driver's own `@FILE`), and the files they write (`-o`, `--out`, `-Map`,
/// `-MD`, `-MF`, `-a=`) are checked as writes.
fn linker_lists(program: &str, seg: &mut Segment) {
    if !reads_response_files(program)
        || !seg
            .argv
            .iter()
            .any(|a| a.starts_with("-W") || a.starts_with("-X"))
    {
        return;
    }
    for (tool, items) in passed_lists(&seg.argv) {
        let fx = list_effects(tool, &items);
        let shown = items.join(",");
        if let Some(f) = fx.response_file {
            seg.unknown.get_or_insert(format!(
                "`{program}` passes the {} the response file `{f}`, whose options the gate does not see; write them out instead",
                tool.name()
            ));
        }
        if fx.plugin {
            seg.findings.push(knowledge::Finding {
                action: knowledge::Action::ApprovalRequired,
                entry: format!("{program} -Wl"),
                origin: knowledge::BUILTIN_KNOWLEDGE_ORIGIN.into(),
                shown: format!("-Wl,{shown}"),
                kind: knowledge::Kind::Exec,
                reason: "passes the linker a plugin to load, code of the caller's choice".into(),
            });
        }
        for path in fx.writes {
            seg.paths.push(PathUse {
                text: path,
                access: Access::Write,
                role: match tool {
                    Tool::Linker => "linker output",
                    Tool::Assembler => "assembler output",
                    Tool::Preprocessor => "preprocessor output",
                },
            });
        }
    }
}

/// ssh's, scp's and sftp's options, as they read them: ssh reads more options
/// after the host (`ssh h -o …`), and an `-o` keyword is matched in any case
/// and may be followed by `=` or blanks (`-o 'proxycommand x'`, `-o ' Match=…'`).
fn ssh_options(program: &str, seg: &mut Segment) {
    let values: &str = match program {
        "ssh" => "oFSiJLRDWBbceEIlmOpPQw",
        "scp" => "cFiJloPSDX",
        "sftp" => "BbcDFiJloPRSX",
        _ => return,
    };
    let argv = &seg.argv;
    let mut options: Vec<(char, String)> = Vec::new();
    let mut positionals = 0;
    let mut i = 1;
    'words: while i < argv.len() {
        let a = argv[i].as_str();
        if a == "--" {
            break;
        }
        if a.len() > 1 && a.starts_with('-') {
            for (k, c) in a[1..].char_indices() {
                if values.contains(c) {
                    let rest = &a[1 + k + c.len_utf8()..];
                    let v = if rest.is_empty() {
                        i += 1;
                        argv.get(i).cloned().unwrap_or_default()
                    } else {
                        rest.to_string()
                    };
                    options.push((c, v));
                    i += 1;
                    continue 'words;
                }
                options.push((c, String::new()));
            }
        } else {
            positionals += 1;
            // ssh goes on reading options after its host, up to the command.
            if program != "ssh" || positionals > 1 {
                break;
            }
        }
        i += 1;
    }
    let mut findings = Vec::new();
    let mut reads = Vec::new();
    for (c, v) in options {
        let shown = format!("-{c} {v}");
        let found = match c {
            'o' => ssh_keyword(&v),
            'F' => {
                reads.push(v);
                Some((knowledge::Action::OnUnknown, knowledge::Kind::Config, "reads ssh configuration from a file the gate does not see (ProxyCommand, LocalCommand, Match exec run commands)"))
            }
            'S' => Some((knowledge::Action::ApprovalRequired, knowledge::Kind::Config, "uses another control socket (a connection someone else opened)")),
            'I' => Some((knowledge::Action::Deny, knowledge::Kind::Exec, "loads a PKCS#11 library, code of the caller's choice")),
            'J' => Some((knowledge::Action::ApprovalRequired, knowledge::Kind::Network, "connects through another host (a jump host), which the network policy does not see")),
            'i' => {
                reads.push(v);
                None
            }
            _ => None,
        };
        if let Some((action, kind, reason)) = found {
            findings.push(knowledge::Finding {
                action,
                entry: format!("{program} -{c}"),
                origin: knowledge::BUILTIN_KNOWLEDGE_ORIGIN.into(),
                shown,
                kind,
                reason: reason.into(),
            });
        }
    }
    seg.findings.extend(findings);
    for text in reads.into_iter().filter(|t| !t.is_empty()) {
        seg.paths.push(PathUse {
            text,
            access: Access::Read,
            role: "option value",
        });
    }
}

/// What an ssh `-o` keyword does, matched as ssh matches it.
fn ssh_keyword(v: &str) -> Option<(knowledge::Action, knowledge::Kind, &'static str)> {
    let v = v.trim_start();
    let end = v
        .find(|c: char| c == '=' || c.is_whitespace())
        .unwrap_or(v.len());
    let key = v[..end].to_ascii_lowercase();
    use knowledge::{Action, Kind};
    Some(match key.as_str() {
        "proxycommand" | "localcommand" | "permitlocalcommand" | "knownhostscommand" | "match" => {
            (Action::Deny, Kind::Exec, "makes ssh run a local command")
        }
        "pkcs11provider" | "securitykeyprovider" => (
            Action::Deny,
            Kind::Exec,
            "makes ssh load a library, code of the caller's choice",
        ),
        "include" => (
            Action::OnUnknown,
            Kind::Config,
            "reads ssh configuration from a file the gate does not see",
        ),
        "proxyjump" => (
            Action::ApprovalRequired,
            Kind::Network,
            "connects through another host (a jump host), which the network policy does not see",
        ),
        "controlpath" | "controlmaster" => (
            Action::ApprovalRequired,
            Kind::Config,
            "uses or opens a control socket that other commands can reuse",
        ),
        _ => return None,
    })
}

/// make's command-line variable assignments, read as make reads them: the
/// name is trimmed of blanks (`'SHELL = ./x'`) and of `override`, `export`,
/// `unexport` and `private`; `!=` runs its value in a shell; a value that calls
/// a make function (`$(shell …)`, `$(file >…)`, `$($(f) x)`) runs or writes
/// when it is expanded. Each of those needs approval, like `--eval`.
fn make_assignments(program: &str, seg: &mut Segment, kb: Kb<'_>) {
    if !matches!(program, "make" | "gmake") {
        return;
    }
    let norm = knowledge::normalize(&seg.argv, kb);
    let mut found = Vec::new();
    for w in &norm.words {
        let knowledge::Word::Arg { text, index, .. } = w else {
            continue;
        };
        if let Some(why) = make_assignment_risk(text) {
            found.push(((*text).to_string(), index.saturating_add(1), why));
        } else if let Some((name, value)) = make_assigned(text) {
            // A variable the knowledge base knows as an environment variable
            // (`CC=./x`, `CFLAGS='-wrapper …'`, `PATH=…`) is judged as one:
            // the makefile's recipes see it the same way.
            if kb.env(name).is_some() {
                seg.findings.extend(knowledge::env_finding(kb, name, value));
            }
        }
    }
    for (shown, n, why) in found {
        let entry = format!("{program} argument {n}");
        // The knowledge base's own entry may have named it already.
        if seg.findings.iter().any(|f| f.entry == entry) {
            continue;
        }
        seg.findings.push(knowledge::Finding {
            action: knowledge::Action::ApprovalRequired,
            entry,
            origin: knowledge::BUILTIN_KNOWLEDGE_ORIGIN.into(),
            shown,
            kind: knowledge::Kind::Exec,
            reason: why.into(),
        });
    }
}

/// The name and value a command-line word of make assigns, as make reads
/// them (blanks and `override`/`export`/`unexport`/`private` taken off).
fn make_assigned(word: &str) -> Option<(&str, &str)> {
    let eq = word.find('=')?;
    let (left, value) = (&word[..eq], &word[eq + 1..]);
    let mut name = left.trim_end_matches([':', '+', '?', '!']).trim();
    loop {
        let trimmed = ["override", "export", "unexport", "private"]
            .iter()
            .find_map(|k| {
                name.strip_prefix(k)
                    .filter(|r| r.starts_with([' ', '\t']))
                    .map(str::trim_start)
            });
        match trimmed {
            Some(rest) => name = rest,
            None => break,
        }
    }
    Some((name, value))
}

/// Why one command-line word of make, if it is an assignment, needs approval.
fn make_assignment_risk(word: &str) -> Option<&'static str> {
    let eq = word.find('=')?;
    if word[..eq].ends_with('!') {
        return Some("is a `!=` assignment: make runs its value as a shell command");
    }
    let (name, value) = make_assigned(word)?;
    if name.contains(['$', ' ', '\t']) {
        return Some("assigns a variable whose name make computes or cannot be read, so what it sets is not known");
    }
    if matches!(
        name,
        "SHELL"
            | ".SHELLFLAGS"
            | "MAKE"
            | "MAKEFLAGS"
            | "MFLAGS"
            | "GNUMAKEFLAGS"
            | "MAKEFILES"
            | "MAKESHELL"
            | ".RECIPEPREFIX"
            | ".DEFAULT"
            | "MAKE_COMMAND"
    ) {
        return Some(
            "replaces the program make runs recipes with, or the options and makefiles it obeys",
        );
    }
    if makes_function_call(value) {
        return Some("holds a make function call (`$(shell …)`, `$(file …)`), which runs a command or writes a file when make expands it");
    }
    None
}

/// A `$(…)`/`${…}` that is more than a plain variable reference (`$(CC)`).
fn makes_function_call(value: &str) -> bool {
    let b = value.as_bytes();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'$' && matches!(b[i + 1], b'(' | b'{') {
            let close = if b[i + 1] == b'(' { b')' } else { b'}' };
            let mut j = i + 2;
            while j < b.len()
                && (b[j].is_ascii_alphanumeric() || matches!(b[j], b'_' | b'.' | b'-'))
            {
                j += 1;
            }
            if j >= b.len() || b[j] != close {
                return true;
            }
            i = j;
        } else if b[i] == b'$' && b[i + 1] == b'$' {
            i += 2;
            continue;
        }
        i += 1;
    }
    false
}

/// `curl -O URL` and `wget URL` write a file named by the URL's last
/// segment (under `--output-dir`/`-P`): that name is checked as a write
/// (`cd .git && wget h/config`). Names the server chooses (`curl -J`, wget's
/// recursion, `--content-disposition`, `--trust-server-names`) need approval.
fn downloaded_names(program: &str, seg: &mut Segment, kb: Kb<'_>) {
    if !matches!(program, "curl" | "wget") {
        return;
    }
    let norm = knowledge::normalize(&seg.argv, kb);
    if norm.entry.is_none() {
        return;
    }
    let keys: Vec<(String, Option<String>)> = norm
        .words
        .iter()
        .filter_map(|w| {
            let v = match w {
                knowledge::Word::Short { value, .. } | knowledge::Word::Long { value, .. } => {
                    value.map(str::to_string)
                }
                _ => None,
            };
            w.key().map(|k| (k, v))
        })
        .collect();
    let has = |k: &str| keys.iter().any(|(x, _)| x == k);
    let value = |k: &str| {
        keys.iter()
            .find(|(x, _)| x == k)
            .and_then(|(_, v)| v.clone())
    };
    let mut urls: Vec<String> = norm
        .words
        .iter()
        .filter_map(|w| match w {
            knowledge::Word::Arg { text, .. } => Some((*text).to_string()),
            _ => None,
        })
        .collect();
    let (named, dir, chooses) = if program == "curl" {
        urls.extend(
            keys.iter()
                .filter(|(k, _)| k == "--url")
                .filter_map(|(_, v)| v.clone()),
        );
        (
            has("-O") || has("--remote-name-all"),
            value("--output-dir"),
            has("-J").then_some("-J"),
        )
    } else {
        let chooses = [
            "-r",
            "-m",
            "-p",
            "--content-disposition",
            "--trust-server-names",
            "-i",
        ]
        .into_iter()
        .find(|k| has(k));
        (!has("-O"), value("-P"), chooses)
    };
    if let Some(k) = chooses {
        seg.findings.push(knowledge::Finding {
            action: knowledge::Action::ApprovalRequired,
            entry: format!("{program} {k}"),
            origin: knowledge::BUILTIN_KNOWLEDGE_ORIGIN.into(),
            shown: k.to_string(),
            kind: knowledge::Kind::Write,
            reason: "writes files whose names the server (its links or headers) chooses, which the gate does not see".into(),
        });
        return;
    }
    if !named {
        return;
    }
    for url in urls {
        let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
        let rest = rest.split(['?', '#']).next().unwrap_or_default();
        let Some((_, name)) = rest
            .split_once('/')
            .map(|(_, p)| ((), p.rsplit('/').next().unwrap_or_default()))
        else {
            continue;
        };
        let name = if name.is_empty() && program == "wget" {
            "index.html"
        } else {
            name
        };
        if name.is_empty() {
            continue;
        }
        let text = match &dir {
            Some(d) => format!("{}/{name}", d.trim_end_matches('/')),
            None => name.to_string(),
        };
        seg.paths.push(PathUse {
            text,
            access: Access::Write,
            role: "downloaded file",
        });
    }
}

/// `gunzip x.gz`, `xz -d x.xz`, `zstd -d x.zst`: each operand is written
/// again under its name without the suffix (`.git/config.gz` becomes
/// `.git/config`), a write the boundary and the protections must see.
fn decompressed_outputs(program: &str, seg: &mut Segment, kb: Kb<'_>) {
    let unpacks = match program {
        "gunzip" | "unxz" | "unlzma" | "bunzip2" | "unzstd" | "unpigz" => true,
        "gzip" | "xz" | "lzma" | "bzip2" | "zstd" | "pigz" | "lzop" => false,
        _ => return,
    };
    let norm = knowledge::normalize(&seg.argv, kb);
    if norm.entry.is_none() {
        return;
    }
    let keys: Vec<String> = norm.words.iter().filter_map(|w| w.key()).collect();
    let has = |k: &str| keys.iter().any(|x| x == k);
    // To standard output, only testing or listing, or one named output (-o).
    if !(unpacks || has("-d")) || has("-c") || has("-t") || has("-l") || has("-o") {
        return;
    }
    if has("-r") {
        seg.findings.push(knowledge::Finding {
            action: knowledge::Action::OnUnknown,
            entry: format!("{program} -r"),
            origin: knowledge::BUILTIN_KNOWLEDGE_ORIGIN.into(),
            shown: short(&seg.argv.join(" ")),
            kind: knowledge::Kind::Write,
            reason:
                "decompresses every file under a directory, writing names the gate does not see"
                    .into(),
        });
        return;
    }
    let suffix = norm.words.iter().find_map(|w| match w {
        knowledge::Word::Short {
            letter: 'S',
            value: Some(v),
            ..
        }
        | knowledge::Word::Long {
            short: Some('S'),
            value: Some(v),
            ..
        } => Some(v.to_string()),
        _ => None,
    });
    let mut outputs = Vec::new();
    for w in &norm.words {
        let knowledge::Word::Arg { text, .. } = w else {
            continue;
        };
        if *text == "-" {
            continue;
        }
        outputs.extend(unpacked_names(text, suffix.as_deref()));
    }
    for text in outputs {
        seg.paths.push(PathUse {
            text,
            access: Access::Write,
            role: "decompressed file",
        });
    }
}

/// The names a decompressor may write for `name`: without its last suffix
/// (`x.gz` → `x`, gzip's `x-gz`/`x_z` too), `x.tgz` → `x.tar`, and without a
/// suffix given by `-S`.
fn unpacked_names(name: &str, suffix: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(s) = suffix.filter(|s| !s.is_empty()) {
        if let Some(stem) = name.strip_suffix(s).filter(|t| !t.is_empty()) {
            out.push(stem.to_string());
        }
    }
    let base_at = name.rfind('/').map_or(0, |i| i + 1);
    let base = &name[base_at..];
    if let Some(dot) = base.rfind(['.', '-', '_']).filter(|&d| d > 0) {
        let stem = &name[..base_at + dot];
        out.push(stem.to_string());
        if base[dot + 1..].starts_with('t') {
            out.push(format!("{stem}.tar"));
        }
    }
    out
}

/// Why setting `name` from a value the gate cannot see is unknown.
fn risky_set(how: &str, name: &str) -> String {
    format!("{how} sets `{name}`, which programs obey (PATH, BASH_ENV, LD_PRELOAD, …), to a value the gate cannot see; set it as `{name}=VALUE` instead")
}

/// The names `${NAME:=word}` or `${NAME=word}` assign, anywhere in `text`
/// (quotes are not followed: a name in single quotes counts too).
fn assigned_in_expansion(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        rest = &rest[i + 2..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..end];
        let after = &rest[end..];
        if !name.is_empty() && (after.starts_with(":=") || after.starts_with('=')) {
            out.push(name);
        }
    }
    out
}

/// Programs that read more arguments from `@FILE` (gcc's and binutils'
/// response files, javac's and rustc's argument files): options there
/// (`-wrapper`, `-fplugin=`, `-B`, `-Clinker=`) are as strong as written ones.
const RESPONSE_FILES: &[&str] = &[
    "gcc", "g++", "cc", "c++", "cpp", "clang", "clang++", "gfortran", "ld", "ld.bfd", "ld.gold",
    "ld.lld", "lld", "ar", "as", "nm", "objdump", "objcopy", "strip", "ranlib", "readelf", "size",
    "strings", "javac", "java", "rustc",
];

/// One of [`RESPONSE_FILES`], also as a versioned or cross tool
/// (`gcc-12`, `x86_64-linux-gnu-gcc`, `x86_64-linux-gnu-ld.bfd`, `llvm-ar`).
fn reads_response_files(program: &str) -> bool {
    program
        .split('-')
        .any(|part| RESPONSE_FILES.contains(&part))
}

/// The first `@FILE` argument, if any.
fn response_file(argv: &[String]) -> Option<&str> {
    argv.iter()
        .skip(1)
        .find(|a| a.len() > 1 && a.starts_with('@'))
        .map(String::as_str)
}

/// `. .venv/bin/activate`: a Python venv's activation script (it sets PATH,
/// VIRTUAL_ENV and PS1 and defines `deactivate`). It is judged as a command
/// like any other (its path at step 1, a rule for `.`/`source` at step 4; the
/// python toolchain preset adds one), instead of as an unknown file.
fn venv_activation(argv: &[String]) -> bool {
    match argv {
        [_, script] => {
            let p = std::path::Path::new(script);
            p.ends_with("bin/activate") && !p.components().any(|c| c.as_os_str() == "..")
        }
        _ => false,
    }
}

/// Global git options, before the subcommand, that can point git at other programs.
fn git_config_injection(argv: &[String]) -> bool {
    for a in argv.iter().skip(1) {
        if a == "-c" || a.starts_with("--config-env") || a.starts_with("--exec-path") {
            return true;
        }
        if a.starts_with("-c") && a.len() > 2 {
            return true;
        }
        if !a.starts_with('-') {
            // Value of -C or the subcommand: only options before the subcommand
            // are git's own; `-C dir` is skipped by continuing past its value.
            if argv
                .iter()
                .skip(1)
                .take_while(|x| *x != a)
                .last()
                .is_some_and(|p| p == "-C" || p == "--git-dir" || p == "--work-tree")
            {
                continue;
            }
            return false;
        }
    }
    false
}

fn is_var_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

/// Programs that only read the paths they are given.
pub fn reads_only(program: &str) -> bool {
    matches!(
        program,
        "cat"
            | "head"
            | "tail"
            | "less"
            | "more"
            | "wc"
            | "grep"
            | "egrep"
            | "fgrep"
            | "rg"
            | "ls"
            | "diff"
            | "cmp"
            | "comm"
            | "file"
            | "stat"
            | "du"
            | "df"
            | "md5sum"
            | "sha1sum"
            | "sha256sum"
            | "sha512sum"
            | "cksum"
            | "nl"
            | "od"
            | "xxd"
            | "hexdump"
            | "strings"
            | "tree"
            | "realpath"
            | "readlink"
            | "basename"
            | "dirname"
            | "jq"
            | "cut"
            | "paste"
            | "join"
            | "column"
            | "fold"
            | "fmt"
            | "rev"
            | "tac"
            | "expand"
            | "cd"
            | "pushd"
            | "zcat"
            | "python3"
            | "python"
            | "node"
            | "pytest"
            | "awk"
            | "gawk"
    )
}

impl Analyzer {
    fn new(ctx: &Context, plain_fast_path: bool, assumed: &LineFacts) -> Self {
        Analyzer {
            kb: ctx.knowledge.clone(),
            home: ctx.home.clone(),
            plain_fast_path,
            segments: Vec::new(),
            functions: HashMap::new(),
            call_stack: Vec::new(),
            too_complex: None,
            words: 0,
            assumed: assumed.clone(),
            seen: LineFacts::default(),
            loop_depth: 0,
            nested_loop_passes: 0,
            made_dirs: Vec::new(),
        }
    }

    fn push(&mut self, seg: Segment) {
        if self.segments.len() >= MAX_SEGMENTS {
            self.too_complex = Some(format!(
                "the command has more than {MAX_SEGMENTS} simple commands"
            ));
            return;
        }
        self.words += seg.argv.len();
        if self.words > MAX_WORDS {
            self.too_complex = Some(format!(
                "the command expands to more than {MAX_WORDS} words"
            ));
            return;
        }
        self.segments.push(seg);
    }

    fn unknown_segment(&mut self, st: &State, argv: Vec<String>, why: String) {
        let mut seg = Segment::new(&st.cwd);
        seg.argv = argv;
        seg.unknown = Some(why);
        self.push(seg);
    }

    /// Parse and walk a shell string; returns why it cannot be analysed, if so.
    fn shell_text(&mut self, text: &str, st: &mut State, depth: usize) -> Option<String> {
        if depth > MAX_SHELL_DEPTH {
            return Some(format!(
                "shells nested more than {MAX_SHELL_DEPTH} deep cannot be analysed"
            ));
        }
        if let Some(why) = hazards::refuse_before_parsing(text) {
            return Some(why);
        }
        if let Some(name) = assigned_in_expansion(text)
            .into_iter()
            .find(|n| knowledge::env_known_risky(Kb::new(&self.kb), n))
        {
            return Some(risky_set(&format!("`${{{name}:=…}}`"), name));
        }
        if self.plain_fast_path {
            if let Some(words) = plain::words(text) {
                // What the parser would give: one simple command of these words,
                // none of which expands (the differential test holds the two equal).
                let mut seg = Segment::new(&st.cwd);
                seg.argv = words.map(String::from).collect();
                self.invocation(seg, st, depth, 0, 0);
                return None;
            }
        }
        let read_plain = self.plain_fast_path.then(|| plain::program(text)).flatten();
        let program = match read_plain {
            Some(p) => p,
            None => match brush_parser::Parser::new(text.as_bytes(), &words::options())
                .parse_program()
            {
                Ok(p) => p,
                Err(e) => return Some(format!("the shell text does not parse as bash ({e})")),
            },
        };
        // Functions are collected first: a call anywhere may reach any of them.
        for cc in &program.complete_commands {
            self.collect_functions(cc, 0);
        }
        for cc in &program.complete_commands {
            self.list(cc, st, depth, 0);
        }
        None
    }

    fn collect_functions(&mut self, list: &ast::CompoundList, nest: usize) {
        if nest > MAX_NESTING {
            return;
        }
        for item in &list.0 {
            let ao = &item.0;
            for p in std::iter::once(&ao.first).chain(ao.additional.iter().map(|x| match x {
                ast::AndOr::And(p) | ast::AndOr::Or(p) => p,
            })) {
                for c in &p.seq {
                    if let ast::Command::Function(f) = c {
                        self.functions.insert(f.fname.value.clone(), f.body.clone());
                    }
                }
            }
        }
    }

    fn list(&mut self, list: &ast::CompoundList, st: &mut State, depth: usize, nest: usize) {
        for item in &list.0 {
            let ast::CompoundListItem(ao, sep) = item;
            match sep {
                ast::SeparatorOperator::Async => {
                    let mut bg = st.clone();
                    self.and_or(ao, &mut bg, depth, nest);
                }
                ast::SeparatorOperator::Sequence => {
                    // A `cd` that may fail leaves the shell where it was, and
                    // after `;` or a newline the line goes on in either.
                    st.cd_fallback = None;
                    self.and_or(ao, st, depth, nest);
                    if let Some(old) = st.cd_fallback.take() {
                        st.cwd.merge(&old);
                    }
                }
            }
        }
    }

    fn and_or(&mut self, ao: &ast::AndOrList, st: &mut State, depth: usize, nest: usize) {
        if ao.additional.is_empty() {
            self.pipeline(&ao.first, st, depth, nest);
            return;
        }
        let before = st.clone();
        self.pipeline(&ao.first, st, depth, nest);
        // Where the list stands if the last command that ran succeeded
        // (`ok`), and if it failed or was skipped (`failed`; a failed `cd`
        // stays where it was). `a && cd b && ls ..` runs `ls` only in `b`.
        let mut ok = st.clone();
        let mut failed = before;
        failed.merge(st);
        for next in &ao.additional {
            match next {
                ast::AndOr::And(p) => {
                    let mut ran = ok.clone();
                    self.pipeline(p, &mut ran, depth, nest);
                    failed.merge(&ok);
                    failed.merge(&ran);
                    ok = ran;
                }
                ast::AndOr::Or(p) => {
                    let mut ran = failed.clone();
                    self.pipeline(p, &mut ran, depth, nest);
                    ok.merge(&ran);
                    failed.merge(&ran);
                }
            }
        }
        ok.merge(&failed);
        // The list's own states already hold where a failed `cd` stays.
        ok.cd_fallback = None;
        *st = ok;
    }

    fn pipeline(&mut self, p: &ast::Pipeline, st: &mut State, depth: usize, nest: usize) {
        if p.seq.len() == 1 {
            self.command(&p.seq[0], st, depth, nest, &[]);
        } else {
            // Each part of a pipeline runs in its own subshell.
            for c in &p.seq {
                let mut sub = st.clone();
                self.command(c, &mut sub, depth, nest, &[]);
            }
        }
    }

    fn command(
        &mut self,
        c: &ast::Command,
        st: &mut State,
        depth: usize,
        nest: usize,
        inherited: &[ast::IoRedirect],
    ) {
        if nest > MAX_NESTING {
            self.too_complex = Some(format!(
                "the command is nested more than {MAX_NESTING} levels deep"
            ));
            return;
        }
        if self.too_complex.is_some() {
            return; // the answer is already known: nothing more is judged
        }
        match c {
            ast::Command::Simple(sc) => self.simple(sc, st, depth, nest, inherited),
            ast::Command::Compound(cc, redirects) => {
                let mut all = inherited.to_vec();
                if let Some(r) = redirects {
                    all.extend(r.0.iter().cloned());
                }
                self.compound(cc, st, depth, nest + 1, &all);
            }
            ast::Command::Function(f) => {
                // bash calls `command_not_found_handle` (zsh
                // `command_not_found_handler`) for every program it does not
                // find, which the gate cannot know: any later command may run it.
                let name = f.fname.value.as_str();
                if matches!(
                    name,
                    "command_not_found_handle" | "command_not_found_handler"
                ) {
                    self.unknown_segment(
                        st,
                        vec![name.to_string()],
                        format!(
                            "defining `{name}` makes the shell run it, with the state of that moment, for any program it does not find, which the gate cannot know; a person must approve it, or give the function another name and call it"
                        ),
                    );
                }
                // Judge the body where it is defined (stricter than judging it only
                // when called; calls re-judge it with the caller's directory).
                let mut body_state = st.clone();
                self.function_body(&f.body, &mut body_state, depth, nest + 1);
            }
            ast::Command::ExtendedTest(test, redirects) => {
                let mut seg = Segment::new(&st.cwd);
                seg.argv = vec!["[[".into()];
                seg.data_only = true;
                let mut all = inherited.to_vec();
                if let Some(r) = redirects {
                    all.extend(r.0.iter().cloned());
                }
                let mut assigned = Assigned::default();
                test_assigns(&test.expr, &mut assigned);
                for r in &all {
                    words::assigned_in_word(&r.to_string(), &mut assigned);
                }
                st.forget_before(&assigned);
                self.extended_test_words(&test.expr, &mut seg, &st.vars);
                self.redirects(&all, &mut seg, &st.vars);
                self.push(seg);
                st.forget_after(&assigned);
                // `=~` sets BASH_REMATCH to what matched.
                st.vars.set_unseen("BASH_REMATCH");
            }
        }
    }

    fn extended_test_words(&self, e: &ast::ExtendedTestExpr, seg: &mut Segment, vars: &Vars) {
        use ast::ExtendedTestExpr as E;
        match e {
            E::And(a, b) | E::Or(a, b) => {
                self.extended_test_words(a, seg, vars);
                self.extended_test_words(b, seg, vars);
            }
            E::Not(a) | E::Parenthesized(a) => self.extended_test_words(a, seg, vars),
            E::UnaryTest(_, w) => self.test_word(&w.value, seg, vars),
            E::BinaryTest(op, a, b) => {
                let arithmetic = is_arithmetic(op);
                for w in [a, b] {
                    self.test_word(&w.value, seg, vars);
                    if arithmetic {
                        self.arithmetic_operand(&w.value, seg, vars);
                    }
                }
            }
        }
    }

    /// A word that is data: only a substitution in it matters.
    fn data_word(&self, raw: &str, seg: &mut Segment, vars: &Vars) {
        if let Expansion::Executes { why } = expand(raw, vars, &self.home) {
            seg.unknown.get_or_insert(why);
        }
    }

    /// An operand of an arithmetic `[[` operator (`-eq`, `-lt`, …): bash
    /// evaluates its value as an expression.
    fn arithmetic_operand(&self, raw: &str, seg: &mut Segment, vars: &Vars) {
        let why = match expand(raw, vars, &self.home) {
            Expansion::Known { values, .. } => values.iter().find_map(|v| {
                words::arithmetic_unseen(v, vars).map(|name| words::unseen_why(&name, raw))
            }),
            Expansion::Unknown { .. } => {
                words::arithmetic_unseen(raw, vars).map(|name| words::unseen_why(&name, raw))
            }
            Expansion::Executes { .. } => None,
        };
        if let Some(why) = why {
            seg.unknown.get_or_insert(why);
        }
    }

    /// An operand of a `[[` test: data, except that its arithmetic operators
    /// and `-v` evaluate array subscripts, so a subscript holding
    /// command-substitution text runs it.
    fn test_word(&self, raw: &str, seg: &mut Segment, vars: &Vars) {
        match expand(raw, vars, &self.home) {
            Expansion::Executes { why } => {
                seg.unknown.get_or_insert(why);
            }
            Expansion::Known { values, .. }
                if values
                    .iter()
                    .any(|v| v.contains('[') && (v.contains("$(") || v.contains('`'))) =>
            {
                seg.unknown.get_or_insert(
                    "a test would evaluate an array subscript holding a command substitution, which runs a command the gate cannot follow".into(),
                );
            }
            _ => {}
        }
    }

    /// The working directories after `cd PATTERN`: the one directory the
    /// pattern names from each, or unknown (bash enters the single match;
    /// with none or several, `cd` fails or complains).
    fn glob_chdir(&self, cwd: &Cwd, pattern: &str) -> Cwd {
        let unknown = || {
            Cwd::Unknown(format!(
                "`cd {}` is a pattern that does not name exactly one directory here",
                short(pattern)
            ))
        };
        let Cwd::Known(dirs) = cwd else {
            return unknown();
        };
        let mut out = Vec::new();
        for d in dirs {
            match crate::gate::glob_paths(d, pattern).as_deref() {
                Some([one]) => out.push(crate::load::absolute_lexical(&d.join(one))),
                _ => return unknown(),
            }
        }
        Cwd::Known(out)
    }

    fn function_body(
        &mut self,
        body: &ast::FunctionBody,
        st: &mut State,
        depth: usize,
        nest: usize,
    ) {
        let ast::FunctionBody(cc, redirects) = body;
        let all: Vec<ast::IoRedirect> =
            redirects.iter().flat_map(|r| r.0.iter().cloned()).collect();
        self.compound(cc, st, depth, nest, &all);
    }

    fn arithmetic(&mut self, expr: &str, st: &mut State) {
        let mut assigned = Assigned::default();
        words::arithmetic_assigned(expr, &mut assigned);
        self.arithmetic_judged(expr, st);
        st.forget_after(&assigned);
    }

    fn arithmetic_judged(&mut self, expr: &str, st: &State) {
        let why = if expr.contains("$(") || expr.contains('`') {
            format!(
                "the arithmetic `{}` contains a command substitution",
                short(expr)
            )
        } else if let Some(name) = words::arithmetic_unseen(expr, &st.vars) {
            words::unseen_why(&name, expr)
        } else {
            return;
        };
        let mut seg = Segment::new(&st.cwd);
        seg.argv = vec!["((".into()];
        seg.unknown = Some(why);
        self.push(seg);
    }

    fn compound(
        &mut self,
        cc: &ast::CompoundCommand,
        st: &mut State,
        depth: usize,
        nest: usize,
        redirects: &[ast::IoRedirect],
    ) {
        use ast::CompoundCommand as C;
        match cc {
            C::BraceGroup(g) => self.list_with(&g.list, st, depth, nest, redirects),
            C::Subshell(s) => {
                let mut sub = st.clone();
                self.list_with(&s.list, &mut sub, depth, nest, redirects);
            }
            C::Arithmetic(a) => self.arithmetic(&a.expr.value, st),
            C::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&e.value, st);
                }
                self.loop_body(&f.body.list, st, depth, nest, redirects);
            }
            C::ForClause(f) => {
                let mut assigned = Assigned::default();
                for w in f.values.iter().flatten() {
                    words::assigned_in_word(&w.value, &mut assigned);
                }
                st.forget_before(&assigned);
                let mut seg = Segment::new(&st.cwd);
                let mut values = Vec::new();
                let mut known = true;
                match &f.values {
                    Some(ws) => {
                        for w in ws {
                            match expand(&w.value, &st.vars, &self.home) {
                                Expansion::Known { values: v, glob } => {
                                    for x in &v {
                                        seg.paths.push(PathUse {
                                            text: x.clone(),
                                            access: Access::Read,
                                            role: "argument",
                                        });
                                    }
                                    // A pattern's names are the workspace's
                                    // files, which the gate does not read.
                                    known &= !glob;
                                    values.extend(v)
                                }
                                Expansion::Unknown { .. } => known = false,
                                Expansion::Executes { why } => {
                                    seg.unknown.get_or_insert(why);
                                    known = false;
                                }
                            }
                        }
                    }
                    None => known = false,
                }
                if knowledge::env_known_risky(Kb::new(&self.kb), &f.variable_name) {
                    seg.unknown
                        .get_or_insert(risky_set("a `for` loop", &f.variable_name));
                }
                if seg.unknown.is_some() {
                    seg.argv = vec!["for".into()];
                    self.push(seg);
                }
                st.forget_after(&assigned);
                if known && !values.is_empty() && values.len() <= words::MAX_ALTERNATIVES {
                    st.vars.set_known(&f.variable_name, values);
                } else {
                    st.vars.set_unseen(&f.variable_name);
                }
                self.loop_body(&f.body.list, st, depth, nest, redirects);
            }
            C::CaseClause(c) => {
                let mut seg = Segment::new(&st.cwd);
                let mut assigned = Assigned::default();
                words::assigned_in_word(&c.value.value, &mut assigned);
                for p in c.cases.iter().flat_map(|item| &item.patterns) {
                    words::assigned_in_word(&p.value, &mut assigned);
                }
                st.forget_before(&assigned);
                self.data_word(&c.value.value, &mut seg, &st.vars);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.data_word(&p.value, &mut seg, &st.vars);
                    }
                }
                if seg.unknown.is_some() {
                    seg.argv = vec!["case".into()];
                    self.push(seg);
                }
                st.forget_after(&assigned);
                let before = st.clone();
                for item in &c.cases {
                    if let Some(body) = &item.cmd {
                        let mut branch = before.clone();
                        self.list_with(body, &mut branch, depth, nest, redirects);
                        st.merge(&branch);
                    }
                }
            }
            C::IfClause(i) => {
                self.list_with(&i.condition, st, depth, nest, redirects);
                let before = st.clone();
                let mut then = before.clone();
                self.list_with(&i.then, &mut then, depth, nest, redirects);
                st.merge(&then);
                if let Some(elses) = &i.elses {
                    let mut cur = before.clone();
                    for e in elses {
                        if let Some(cond) = &e.condition {
                            self.list_with(cond, &mut cur, depth, nest, redirects);
                        }
                        let mut branch = cur.clone();
                        self.list_with(&e.body, &mut branch, depth, nest, redirects);
                        st.merge(&branch);
                        st.merge(&cur);
                    }
                }
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                let ast::WhileOrUntilClauseCommand(cond, body, _) = w;
                self.list_with(cond, st, depth, nest, redirects);
                self.loop_body(&body.list, st, depth, nest, redirects);
            }
            C::Coprocess(_) => {
                self.unknown_segment(
                    st,
                    vec!["coproc".into()],
                    "`coproc` runs a command the gate cannot follow".into(),
                );
            }
        }
    }

    /// A loop body runs zero or more times, each time from where the last one
    /// ended: it is judged again from the state before the loop joined with
    /// the state after the body, until that no longer changes. A `cd` in the
    /// body makes the directory unknown, and a value still changing after two
    /// passes (`x+=.`, `x=$x/..`) is not followed.
    fn loop_body(
        &mut self,
        body: &ast::CompoundList,
        st: &mut State,
        depth: usize,
        nest: usize,
        redirects: &[ast::IoRedirect],
    ) {
        if self.loop_depth == 0 {
            self.nested_loop_passes = 0;
        }
        self.loop_depth += 1;
        self.loop_passes(body, st, depth, nest, redirects);
        self.loop_depth -= 1;
    }

    fn loop_passes(
        &mut self,
        body: &ast::CompoundList,
        st: &mut State,
        depth: usize,
        nest: usize,
        redirects: &[ast::IoRedirect],
    ) {
        let mut entry = st.clone();
        for pass in 0..4 {
            self.nested_loop_passes += 1;
            if self.nested_loop_passes > MAX_NESTED_LOOP_PASSES {
                self.too_complex.get_or_insert(format!(
                    "the loops nested here would be judged more than {MAX_NESTED_LOOP_PASSES} times over before the values they set settle; split them into separate commands or nest fewer loops"
                ));
                return;
            }
            let mut out = entry.clone();
            self.list_with(body, &mut out, depth, nest, redirects);
            let mut next = entry.clone();
            next.merge(&out);
            if out.cwd != entry.cwd {
                next.cwd = Cwd::Unknown("the working directory changes inside a loop".into());
            }
            if next.cwd == entry.cwd && next.vars == entry.vars {
                *st = next;
                return;
            }
            if pass == 1 {
                let growing: Vec<String> = next
                    .vars
                    .known
                    .iter()
                    .filter(|(name, values)| entry.vars.known.get(*name) != Some(*values))
                    .map(|(name, _)| name.clone())
                    .collect();
                for name in growing {
                    next.vars.set_unseen(&name);
                }
            }
            entry = next;
        }
        *st = entry;
        self.unknown_segment(
            st,
            vec!["for".into()],
            "the values a loop gives its variables do not settle".into(),
        );
    }

    fn list_with(
        &mut self,
        list: &ast::CompoundList,
        st: &mut State,
        depth: usize,
        nest: usize,
        redirects: &[ast::IoRedirect],
    ) {
        if redirects.is_empty() {
            self.list(list, st, depth, nest);
            return;
        }
        let start = self.segments.len();
        self.list(list, st, depth, nest);
        // Redirections of a compound apply to every command inside it; judge them
        // once, as their own segment.
        let mut seg = Segment::new(&st.cwd);
        self.redirects(redirects, &mut seg, &st.vars);
        if self.segments.len() == start
            || !seg.paths.is_empty()
            || seg.unknown.is_some()
            || !seg.net_redirects.is_empty()
        {
            self.push(seg);
        }
    }

    /// Record what redirections touch.
    fn redirects(&self, redirects: &[ast::IoRedirect], seg: &mut Segment, vars: &Vars) {
        for r in redirects {
            match r {
                ast::IoRedirect::File(_, kind, target) => {
                    use ast::IoFileRedirectKind as K;
                    let access = match kind {
                        K::Read | K::DuplicateInput => Access::Read,
                        _ => Access::Write,
                    };
                    match target {
                        ast::IoFileRedirectTarget::Filename(w) => {
                            self.redirect_word(&w.value, access, seg, vars)
                        }
                        ast::IoFileRedirectTarget::Duplicate(w) => {
                            let v = w.value.trim_end_matches('-');
                            if !v.is_empty() && !v.chars().all(|c| c.is_ascii_digit()) {
                                self.redirect_word(&w.value, access, seg, vars);
                            }
                        }
                        ast::IoFileRedirectTarget::Fd(_) => {}
                        ast::IoFileRedirectTarget::ProcessSubstitution(..) => {
                            seg.unknown.get_or_insert(
                                "a process substitution runs a command the gate cannot follow"
                                    .into(),
                            );
                        }
                    }
                }
                ast::IoRedirect::OutputAndError(w, _) => {
                    self.redirect_word(&w.value, Access::Write, seg, vars)
                }
                ast::IoRedirect::HereString(_, w) => self.data_word(&w.value, seg, vars),
                ast::IoRedirect::HereDocument(_, doc) => {
                    if doc.requires_expansion
                        && (doc.doc.value.contains("$(") || doc.doc.value.contains('`'))
                    {
                        seg.unknown.get_or_insert(
                            "the here-document contains a command substitution".into(),
                        );
                    }
                }
            }
        }
    }

    fn redirect_word(&self, raw: &str, access: Access, seg: &mut Segment, vars: &Vars) {
        match expand(raw, vars, &self.home) {
            Expansion::Known { values, glob } => {
                for v in values {
                    // bash expands a pattern in a redirection target when it
                    // names one file: the gate checks each name it matches.
                    if glob {
                        seg.glob_args.push(v.clone());
                    }
                    if v.starts_with("/dev/tcp/") || v.starts_with("/dev/udp/") {
                        seg.net_redirects.push(v);
                    } else {
                        seg.paths.push(PathUse {
                            text: v,
                            access,
                            role: "redirection",
                        });
                    }
                }
            }
            Expansion::Unknown { shown, why } => {
                seg.unknown.get_or_insert(format!(
                    "the redirection target `{shown}` cannot be known before running ({why})"
                ));
            }
            Expansion::Executes { why } => {
                seg.unknown.get_or_insert(why);
            }
        }
    }

    /// A simple command, with what its own expansions assign: the gate
    /// follows none of those values (`((x=5))`, `${x:=w}`, `a[i++]=1`).
    fn simple(
        &mut self,
        sc: &ast::SimpleCommand,
        st: &mut State,
        depth: usize,
        nest: usize,
        inherited: &[ast::IoRedirect],
    ) {
        let mut assigned = Assigned::default();
        let items = (sc.prefix.iter().flat_map(|p| p.0.iter()))
            .chain(sc.suffix.iter().flat_map(|s| s.0.iter()));
        for item in items {
            use ast::CommandPrefixOrSuffixItem as I;
            match item {
                I::Word(w) => words::assigned_in_word(&w.value, &mut assigned),
                I::AssignmentWord(a, w) => {
                    words::assigned_in_word(&w.value, &mut assigned);
                    // An indexed array's subscript is arithmetic.
                    if let ast::AssignmentName::ArrayElementName(_, sub) = &a.name {
                        words::arithmetic_assigned(sub, &mut assigned);
                    }
                }
                I::IoRedirect(r) => words::assigned_in_word(&r.to_string(), &mut assigned),
                I::ProcessSubstitution(..) => {}
            }
        }
        if let Some(w) = &sc.word_or_name {
            words::assigned_in_word(&w.value, &mut assigned);
        }
        for r in inherited {
            words::assigned_in_word(&r.to_string(), &mut assigned);
        }
        if assigned.is_empty() {
            return self.simple_words(sc, st, depth, nest, inherited);
        }
        st.forget_before(&assigned);
        self.simple_words(sc, st, depth, nest, inherited);
        st.forget_after(&assigned);
    }

    fn simple_words(
        &mut self,
        sc: &ast::SimpleCommand,
        st: &mut State,
        depth: usize,
        nest: usize,
        inherited: &[ast::IoRedirect],
    ) {
        let mut seg = Segment::new(&st.cwd);
        let mut redirects: Vec<ast::IoRedirect> = inherited.to_vec();
        let mut assignments: Vec<Assignment> = Vec::new();
        let mut raw_words: Vec<&str> = Vec::new();
        for item in sc.prefix.iter().flat_map(|p| p.0.iter()) {
            self.prefix_or_suffix(item, &mut seg, &mut redirects, &mut assignments, None, st);
        }
        let program_word = sc.word_or_name.as_ref().map(|w| w.value.as_str());
        if let Some(w) = program_word {
            raw_words.push(w);
        }
        for item in sc.suffix.iter().flat_map(|s| s.0.iter()) {
            self.prefix_or_suffix(
                item,
                &mut seg,
                &mut redirects,
                &mut assignments,
                Some(&mut raw_words),
                st,
            );
        }
        self.redirects(&redirects, &mut seg, &st.vars);

        let Some(program_raw) = program_word else {
            // Only assignments and redirections.
            for a in &assignments {
                self.note_assignment(a, &mut seg, st, true);
            }
            if !seg.paths.is_empty()
                || !seg.findings.is_empty()
                || seg.unknown.is_some()
                || !seg.net_redirects.is_empty()
                || seg.argv.is_empty()
            {
                self.push(seg);
            }
            return;
        };

        // The program word: a variable, glob or substitution there is never known.
        let program = match expand(program_raw, &st.vars, &self.home) {
            Expansion::Known { values, glob } => {
                let dynamic = program_raw.contains('$') && !program_raw.starts_with("$'")
                    || program_raw.contains('`');
                if glob || dynamic || values.len() != 1 {
                    seg.argv = vec![program_raw.to_string()];
                    seg.unknown = Some(format!(
                        "`{}` in command position is only known at run time",
                        short(program_raw)
                    ));
                    self.push(seg);
                    return;
                }
                values.into_iter().next().unwrap_or_default()
            }
            Expansion::Unknown { .. } => {
                seg.argv = vec![program_raw.to_string()];
                seg.unknown = Some(format!(
                    "`{}` in command position is only known at run time",
                    short(program_raw)
                ));
                self.push(seg);
                return;
            }
            Expansion::Executes { why } => {
                seg.argv = vec![program_raw.to_string()];
                seg.unknown = Some(why);
                self.push(seg);
                return;
            }
        };

        // Arguments: every combination of their possible values is judged.
        let mut first = Vec::with_capacity(raw_words.len());
        first.push(program);
        let mut argvs: Vec<Vec<String>> = vec![first];
        for raw in raw_words.iter().skip(1) {
            let expanded = expand(raw, &st.vars, &self.home);
            if let Expansion::Known { glob: true, values } = &expanded {
                seg.glob_args.extend(values.iter().cloned());
            }
            match expanded {
                Expansion::Known { mut values, .. } if values.len() == 1 && argvs.len() == 1 => {
                    // The usual word: one value, so one argv grows.
                    argvs[0].extend(values.pop());
                }
                Expansion::Known { values, .. } => {
                    let mut next = Vec::new();
                    for a in &argvs {
                        for v in &values {
                            let mut b = a.clone();
                            b.push(v.clone());
                            next.push(b);
                        }
                    }
                    if next.len() > words::MAX_ALTERNATIVES {
                        seg.argv = argvs[0].clone();
                        seg.unknown = Some("the arguments have too many possible values".into());
                        self.push(seg);
                        return;
                    }
                    argvs = next;
                }
                Expansion::Unknown { shown, why } => {
                    seg.unknown_args.push((shown.clone(), why));
                    for a in &mut argvs {
                        a.push(shown.clone());
                    }
                }
                Expansion::Executes { why } => {
                    seg.unknown.get_or_insert(why);
                    for a in &mut argvs {
                        a.push((*raw).to_string());
                    }
                }
            }
        }
        for a in &assignments {
            // `VAR=x cmd`: only for this command, but a dangerous name still matters.
            self.note_assignment(a, &mut seg, st, false);
        }
        let last = argvs.pop();
        for argv in argvs {
            let mut s = seg.clone();
            s.argv = argv;
            self.invocation(s, st, depth, nest, 0);
        }
        if let Some(argv) = last {
            seg.argv = argv;
            self.invocation(seg, st, depth, nest, 0);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn prefix_or_suffix<'w>(
        &self,
        item: &'w ast::CommandPrefixOrSuffixItem,
        seg: &mut Segment,
        redirects: &mut Vec<ast::IoRedirect>,
        assignments: &mut Vec<Assignment>,
        words_out: Option<&mut Vec<&'w str>>,
        st: &State,
    ) {
        use ast::CommandPrefixOrSuffixItem as I;
        match item {
            I::IoRedirect(r) => redirects.push(r.clone()),
            I::Word(w) => {
                if let Some(out) = words_out {
                    out.push(w.value.as_str());
                }
            }
            I::AssignmentWord(a, w) => {
                if let Some(out) = words_out {
                    // `export X=1`: an argument that assigns.
                    out.push(w.value.as_str());
                } else {
                    let (name, element) = match &a.name {
                        ast::AssignmentName::VariableName(n) => (n.clone(), false),
                        ast::AssignmentName::ArrayElementName(n, _) => (n.clone(), true),
                    };
                    let assign = |raw: String| Assignment {
                        name: name.clone(),
                        raw,
                        append: a.append,
                        element,
                    };
                    let raw = w.value.split_once('=').map(|x| x.1).unwrap_or("");
                    let raw = raw.to_string();
                    if let ast::AssignmentValue::Array(_) = a.value {
                        // Its elements are not expanded here: one that runs a
                        // command is refused whole.
                        if ["$(", "`", "<(", ">("].iter().any(|t| w.value.contains(t)) {
                            seg.unknown.get_or_insert(
                                "an array assignment with a command substitution runs a command the gate cannot follow".into(),
                            );
                        }
                        assignments.push(assign(String::from("(")));
                    } else {
                        assignments.push(assign(raw));
                    }
                }
                let _ = st;
            }
            I::ProcessSubstitution(..) => {
                seg.unknown.get_or_insert(
                    "a process substitution runs a command the gate cannot follow".into(),
                );
            }
        }
    }

    /// An assignment `name=raw`. `persists`: a plain assignment (not `VAR=x cmd`).
    fn note_assignment(&self, a: &Assignment, seg: &mut Segment, st: &mut State, persists: bool) {
        let (name, raw) = (a.name.as_str(), a.raw.as_str());
        let kb = Kb::new(&self.kb);
        if !persists || self.assumed.allexport {
            // Under `set -a` a plain assignment is exported, as `export` would.
            // `VAR=x cmd`: judged by the knowledge base; unknown names get on_unknown.
            seg.findings.extend(knowledge::env_finding(kb, name, raw));
        } else if knowledge::env_known_risky(kb, name) {
            // A plain assignment matters when the name is one programs read
            // (HOME, PATH and the like are exported already).
            seg.findings.extend(knowledge::env_finding(kb, name, raw));
        }
        let value = if raw == "(" {
            Expansion::Unknown {
                shown: name.into(),
                why: "array".into(),
            }
        } else {
            expand(raw, &st.vars, &self.home)
        };
        // A name with the integer attribute evaluates what it is given.
        if self.assumed.integer(name) {
            let why = match &value {
                Expansion::Unknown { .. } if !arithmetic_only(raw) => {
                    Some(integer_why("the assignment", name))
                }
                Expansion::Known { values, .. } => values.iter().find_map(|v| {
                    words::arithmetic_unseen(v, &st.vars).map(|n| words::unseen_why(&n, v))
                }),
                _ => None,
            };
            if let Some(why) = why {
                seg.unknown.get_or_insert(why);
            }
        }
        match value {
            Expansion::Known { values, .. } => {
                let values = match self.stored_value(a, values, &st.vars) {
                    Some(v) => v,
                    None => {
                        if persists {
                            st.vars.set_unseen(name);
                        }
                        return;
                    }
                };
                if values.iter().any(|v| v.contains("$(") || v.contains('`')) {
                    seg.unknown.get_or_insert(format!(
                        "`{name}` would hold command-substitution text, which arithmetic or prompt expansion can run"
                    ));
                }
                for v in values.iter().filter(|v| path_like_value(v)) {
                    seg.paths.push(PathUse {
                        text: v.clone(),
                        access: Access::Read,
                        role: "assignment",
                    });
                }
                if persists {
                    st.vars.set_known(name, values);
                }
            }
            Expansion::Unknown { .. } => {
                if persists && arithmetic_only(raw) && !a.append && !self.assumed.attributed(name) {
                    // An integer, whatever it is: harmless where arithmetic reads it.
                    st.vars.unset(name);
                } else if persists {
                    st.vars.set_unseen(name);
                }
            }
            Expansion::Executes { why } => {
                seg.unknown.get_or_insert(why);
                if persists {
                    st.vars.set_unseen(name);
                }
            }
        }
    }

    /// What `a` leaves in its variable, given the values of its word: `None`
    /// when that is not known. `+=` appends to a string (an integer's `+=`
    /// adds, an array's appends an element); an array element, an array, or a
    /// name given attributes (`declare -i`, `-l`, `-u`) holds what the gate
    /// does not follow.
    fn stored_value(
        &self,
        a: &Assignment,
        values: Vec<String>,
        vars: &Vars,
    ) -> Option<Vec<String>> {
        if a.element || a.raw == "(" || self.assumed.attributed(&a.name) {
            return None;
        }
        if !a.append {
            return Some(values);
        }
        appended(vars.get(&a.name)?, &values)
    }

    /// Normalise the argv and apply the knowledge base: its findings and
    /// paths go on the segment; the commands its options run are judged as
    /// segments of their own, inside this one as a wrapper.
    fn knowledge(
        &mut self,
        seg: &mut Segment,
        st: &mut State,
        depth: usize,
        nest: usize,
        unwraps: usize,
    ) {
        let kb_arc = self.kb.clone();
        let kb = Kb::new(&kb_arc);
        let argv = std::mem::take(&mut seg.argv);
        let applied = {
            let norm = knowledge::normalize(&argv, kb);
            seg.normalized = norm.shown(&argv[0]);
            if let Some(why) = knowledge::glob_option(&argv, &norm, &seg.glob_args) {
                seg.unknown.get_or_insert(why);
            }
            knowledge::apply(&argv, &norm)
        };
        seg.argv = argv;
        seg.data_args = applied.data_args.clone();
        if applied == knowledge::Applied::default() {
            return;
        }
        let template = seg.clone();
        if applied.inner.len() > MAX_INNER_RUNS {
            seg.unknown.get_or_insert(format!(
                "more than {MAX_INNER_RUNS} options of `{}` run other commands",
                seg.argv[0]
            ));
            return;
        }
        for run in applied.inner {
            match run {
                InnerRun::Argv { wrapper, argv } => {
                    let mut s = template.clone();
                    s.wrappers.push(wrapper);
                    s.argv = argv;
                    s.normalized = Vec::new();
                    self.invocation(s, st, depth, nest, unwraps + 1);
                }
                InnerRun::Shell { wrapper, code } => {
                    let mut s = template.clone();
                    s.wrappers.push(wrapper.clone());
                    let mut inner_state = State {
                        cwd: s.cwd.clone(),
                        vars: Vars::default(),
                        oldpwd: None,
                        cd_fallback: None,
                    };
                    let before = self.segments.len();
                    if let Some(why) = self.shell_text(&code, &mut inner_state, depth + 1) {
                        s.argv = wrapper;
                        s.unknown = Some(why);
                        self.push(s);
                        continue;
                    }
                    let chain = s.wrappers.clone();
                    for inner in &mut self.segments[before..] {
                        let mut w = chain.clone();
                        w.append(&mut inner.wrappers);
                        inner.wrappers = w;
                    }
                }
            }
        }
        seg.findings.extend(applied.findings);
        for (text, access, role) in applied.paths {
            let _ = role;
            seg.paths.push(PathUse {
                text,
                access,
                role: "option value",
            });
        }
    }

    /// One program invocation: unwrap wrappers, handle builtins that change the
    /// shell's state, and record the segment.
    fn invocation(
        &mut self,
        mut seg: Segment,
        st: &mut State,
        depth: usize,
        nest: usize,
        unwraps: usize,
    ) {
        if unwraps > 16 {
            seg.unknown
                .get_or_insert("wrappers nested too deeply".into());
            self.push(seg);
            return;
        }
        let program = crate::rules::program_name(&seg.argv[0]).to_string();
        if let Some(why) = never_known(&program, &seg.argv) {
            seg.unknown = Some(why);
            self.push(seg);
            return;
        }
        self.knowledge(&mut seg, st, depth, nest, unwraps);
        linker_lists(&program, &mut seg);
        decompressed_outputs(&program, &mut seg, Kb::new(&self.kb.clone()));
        downloaded_names(&program, &mut seg, Kb::new(&self.kb.clone()));
        make_assignments(&program, &mut seg, Kb::new(&self.kb.clone()));
        ssh_options(&program, &mut seg);
        let kb_arc = self.kb.clone();
        match unwrap::unwrap(&seg.argv, Kb::new(&kb_arc)) {
            unwrap::Unwrap::NotWrapper => {}
            unwrap::Unwrap::Unknown(why) => {
                seg.unknown = Some(why);
                self.push(seg);
                return;
            }
            unwrap::Unwrap::Inner(inner) => {
                let mut wrapper_seg = seg.clone();
                wrapper_seg.argv = inner.wrapper.clone();
                let mut inner_seg = seg;
                inner_seg.wrappers.push(inner.wrapper.clone());
                for (text, access) in &inner.paths {
                    inner_seg.paths.push(PathUse {
                        text: text.clone(),
                        access: *access,
                        role: "argument",
                    });
                }
                for (name, value) in &inner.env {
                    inner_seg.findings.extend(knowledge::env_finding(
                        Kb::new(&self.kb),
                        name,
                        value,
                    ));
                    if value.starts_with('/') || value.starts_with("..") {
                        inner_seg.paths.push(PathUse {
                            text: value.clone(),
                            access: Access::Read,
                            role: "assignment",
                        });
                    }
                }
                if let Some(dir) = &inner.chdir {
                    inner_seg.paths.push(PathUse {
                        text: dir.clone(),
                        access: Access::Read,
                        role: "working directory",
                    });
                    inner_seg.cwd = chdir(&inner_seg.cwd, dir);
                }
                if inner.inners.is_empty() {
                    // The wrapper runs nothing else (`env` alone, `command -v x`).
                    inner_seg.argv = inner.wrapper.clone();
                    inner_seg.wrappers.pop();
                    inner_seg.data_only = true;
                    self.push(inner_seg);
                    return;
                }
                let _ = wrapper_seg;
                let inners = inner.inners.clone();
                for argv in inners {
                    let mut s = inner_seg.clone();
                    s.argv = argv;
                    if s.argv.is_empty() {
                        continue;
                    }
                    self.invocation(s, st, depth, nest, unwraps + 1);
                }
                return;
            }
            unwrap::Unwrap::Code { wrapper, code } => {
                // `sh -c CODE`: a new shell with the same directory, no variables.
                if shell_allexport(&wrapper) {
                    self.seen.allexport = true;
                }
                seg.wrappers.push(wrapper.clone());
                let mut inner_state = State {
                    cwd: seg.cwd.clone(),
                    vars: Vars::default(),
                    oldpwd: None,
                    cd_fallback: None,
                };
                let before = self.segments.len();
                if let Some(why) = self.shell_text(&code, &mut inner_state, depth + 1) {
                    seg.argv = wrapper;
                    seg.unknown = Some(why);
                    self.push(seg);
                    return;
                }
                // The inner segments carry the wrapper chain too.
                let chain = seg.wrappers.clone();
                for s in &mut self.segments[before..] {
                    let mut w = chain.clone();
                    w.append(&mut s.wrappers);
                    s.wrappers = w;
                    s.paths.extend(seg.paths.iter().cloned());
                    s.net_redirects.extend(seg.net_redirects.iter().cloned());
                    if s.unknown.is_none() {
                        s.unknown = seg.unknown.clone();
                    }
                    s.findings.extend(seg.findings.iter().cloned());
                }
                if self.segments.len() == before {
                    seg.argv = wrapper;
                    seg.data_only = true;
                    self.push(seg);
                }
                return;
            }
        }

        // Bash evaluates the subscript of an array name as arithmetic, and
        // that runs a command substitution: `test -v 'a[$(cmd)]'`, `read`,
        // `printf -v`, `unset`, `declare`, the operands of `[[ -eq ]]`. The
        // words are looked at once quotes are gone (`$'a[\x24(cmd)]'`).
        if NAME_EVALUATING.contains(&program.as_str())
            && seg
                .argv
                .iter()
                .skip(1)
                .any(|a| a.contains('[') && (a.contains("$(") || a.contains('`')))
        {
            seg.unknown.get_or_insert(format!(
                "`{program}` would evaluate an array subscript holding a command substitution, which runs a command the gate cannot follow"
            ));
        }
        seg.data_only = DATA_ONLY.contains(&program.as_str());
        // The subscripts those builtins evaluate assign too (`read 'a[i++]'`),
        // and `let`'s arguments are arithmetic (`let x=5`, `let x++`).
        // Applied once the builtin is judged: a name whose value is unseen
        // is still read as it runs (`read x; let x+=1`).
        let mut assigned = Assigned::default();
        if NAME_EVALUATING.contains(&program.as_str()) {
            for a in seg.argv.iter().skip(1) {
                if program == "let" {
                    words::arithmetic_assigned(a, &mut assigned);
                } else if let Some((_, sub)) = a.split_once('[') {
                    words::arithmetic_assigned(sub, &mut assigned);
                }
            }
        }
        // Builtins that change the shell's state for later commands.
        match program.as_str() {
            "cd" | "pushd" => {
                let mut operands = Vec::new();
                let mut options_done = false;
                for a in seg.argv.iter().skip(1) {
                    if !options_done && a == "--" {
                        options_done = true;
                    } else if !options_done && a.len() > 1 && a.starts_with('-') {
                        // `pushd -N` names a stack entry, not an option.
                        if program == "pushd" && a[1..].chars().all(|c| c.is_ascii_digit()) {
                            operands.push(a.clone());
                        }
                        if program == "pushd" && a == "-n" {
                            operands.push(a.clone());
                        }
                    } else {
                        options_done = true;
                        operands.push(a.clone());
                    }
                }
                let target = operands.first().cloned();
                // `pushd` alone swaps the top two entries of the directory
                // stack, `pushd +N`/`-N` rotates it, `-n` only edits it: the
                // gate does not keep the stack.
                let stack = program == "pushd"
                    && match target.as_deref() {
                        None => true,
                        Some(t) => {
                            t == "-n"
                                || ((t.starts_with('+') || t.starts_with('-'))
                                    && t.len() > 1
                                    && t[1..].chars().all(|c| c.is_ascii_digit()))
                        }
                    };
                if stack {
                    st.oldpwd = Some(st.cwd.clone());
                    st.cwd = Cwd::Unknown(format!(
                        "`{}` moves to a directory of the directory stack, which the gate does not keep; use `cd DIR` to be judged",
                        seg.argv.join(" ")
                    ));
                    st.vars.set_unseen("PWD");
                    st.vars.set_unseen("OLDPWD");
                    seg.data_only = false;
                    self.push(seg);
                    return;
                }
                let dest = match target.as_deref() {
                    None => Some(self.home.clone()),
                    Some("-") => None,
                    Some(t) => Some(t.to_string()),
                };
                let new_cwd = match dest {
                    Some(d) => {
                        seg.paths.push(PathUse {
                            text: d.clone(),
                            access: Access::Read,
                            role: "working directory",
                        });
                        if seg.glob_args.contains(&d) {
                            self.glob_chdir(&st.cwd, &d)
                        } else {
                            chdir(&st.cwd, &d)
                        }
                    }
                    None => st.oldpwd.clone().unwrap_or_else(|| {
                        Cwd::Unknown("`cd -` goes back to a directory not known here".into())
                    }),
                };
                let old = st.cwd.clone();
                if !seg.unknown_args.is_empty() {
                    st.oldpwd = Some(st.cwd.clone());
                    st.cwd = Cwd::Unknown("`cd` to a directory only known at run time".into());
                } else {
                    st.oldpwd = Some(st.cwd.clone());
                    // A directory the gate does not see may not exist: the
                    // `cd` fails and the shell stays.
                    let sure = match &new_cwd {
                        Cwd::Known(dirs) => dirs
                            .iter()
                            .all(|d| d.is_dir() || self.made_dirs.iter().any(|m| m == d)),
                        Cwd::Unknown(_) => true,
                    };
                    if !sure {
                        st.cd_fallback = Some(old);
                    }
                    st.cwd = new_cwd;
                }
                // `cd` sets PWD and OLDPWD to directories, not to what the
                // line assigned them.
                st.vars.set_unseen("PWD");
                st.vars.set_unseen("OLDPWD");
                seg.data_only = false;
                self.push(seg);
                return;
            }
            "mkdir" => {
                if let Cwd::Known(dirs) = &st.cwd {
                    for a in seg.argv.iter().skip(1).filter(|a| !a.starts_with('-')) {
                        for d in dirs {
                            let made = crate::load::absolute_lexical(&d.join(a));
                            // `-p` makes the parents too.
                            for p in made.ancestors() {
                                if p.starts_with(d) && !self.made_dirs.iter().any(|m| m == p) {
                                    self.made_dirs.push(p.to_path_buf());
                                }
                            }
                        }
                    }
                }
            }
            "popd" => {
                st.cwd = Cwd::Unknown("`popd` returns to a directory not known here".into());
                st.vars.set_unseen("PWD");
                st.vars.set_unseen("OLDPWD");
                seg.data_only = true;
                self.push(seg);
                return;
            }
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                let args: Vec<String> = seg.argv[1..].to_vec();
                // A name reference (`local -n r=PATH`): assigning `r` later
                // sets the variable it names, which the gate does not follow.
                let nameref = args
                    .iter()
                    .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('n'));
                if nameref {
                    seg.unknown.get_or_insert(format!(
                        "`{program} -n` makes a name that sets another variable, which the gate does not follow"
                    ));
                }
                // Attributes that change what an assignment stores (`-i`
                // makes `+=` add, `-l`/`-u` change case, `-a`/`-A` make arrays).
                let attributes = args.iter().any(|a| {
                    a.len() > 1
                        && (a.starts_with('-') || a.starts_with('+'))
                        && !a.starts_with("--")
                        && a[1..].chars().any(|c| "ilunaA".contains(c))
                });
                let integer = args.iter().any(|a| {
                    a.len() > 1
                        && (a.starts_with('-') || a.starts_with('+'))
                        && !a.starts_with("--")
                        && a[1..].contains('i')
                });
                if attributes && program != "export" {
                    for a in args
                        .iter()
                        .filter(|a| !a.starts_with('-') && !a.starts_with('+'))
                    {
                        let name = a.split_once('=').map_or(a.as_str(), |x| x.0);
                        let name = name.split('[').next().unwrap_or(name);
                        let name = name.trim_end_matches('+');
                        if seg.unknown_args.iter().any(|(shown, _)| shown == a)
                            || !is_var_name(name)
                        {
                            self.seen.any_attributed = true;
                            self.seen.any_integer |= integer;
                        } else {
                            self.seen.attributed.insert(name.to_string());
                            if integer {
                                self.seen.integers.insert(name.to_string());
                            }
                        }
                    }
                }
                let printing = args.iter().any(|a| {
                    a.starts_with('-') && (a.contains('p') || a.contains('f') || a.contains('F'))
                });
                for a in args {
                    if !a.starts_with('-') && !a.starts_with('+') && !a.contains('=') {
                        // `local x` (and `declare x` in a function, which is
                        // local) leaves `x` empty, not its caller's value.
                        if is_var_name(&a)
                            && program != "export"
                            && program != "readonly"
                            && !printing
                        {
                            st.vars.unset(&a);
                        }
                        continue;
                    }
                    if let Some((name, value)) = a.split_once('=') {
                        let append = name.ends_with('+');
                        let name = name.trim_end_matches('+');
                        if is_var_name(name)
                            && ((integer && program != "export") || self.assumed.integer(name))
                        {
                            let unseen = if seg.unknown_args.iter().any(|(shown, _)| *shown == a) {
                                Some(integer_why(&format!("`{program}`"), name))
                            } else {
                                words::arithmetic_unseen(value, &st.vars)
                                    .map(|n| words::unseen_why(&n, value))
                            };
                            if let Some(why) = unseen {
                                seg.unknown.get_or_insert(why);
                            }
                        }
                        if is_var_name(name) {
                            let kb = Kb::new(&self.kb);
                            if program == "export"
                                || self.assumed.allexport
                                || seg.argv.iter().any(|a| a == "-x")
                            {
                                // Exported: every later program sees it.
                                seg.findings.extend(knowledge::env_finding(kb, name, value));
                            } else if knowledge::env_known_risky(kb, name) {
                                seg.findings.extend(knowledge::env_finding(kb, name, value));
                            }
                            if value.contains("$(") || value.contains('`') {
                                seg.unknown.get_or_insert(format!("`{name}` would hold command-substitution text, which arithmetic or prompt expansion can run"));
                            }
                            if path_like_value(value) {
                                // `export TMPDIR=/elsewhere`: later programs use it.
                                seg.paths.push(PathUse {
                                    text: value.to_string(),
                                    access: Access::Read,
                                    role: "assignment",
                                });
                            }
                            let value = vec![value.to_string()];
                            let stored = if attributes || self.assumed.attributed(name) {
                                None
                            } else if append {
                                st.vars.get(name).and_then(|old| appended(old, &value))
                            } else {
                                Some(value)
                            };
                            match stored {
                                Some(v) => st.vars.set_known(name, v),
                                None => st.vars.set_unseen(name),
                            }
                        } else if name.contains('[') {
                            // `declare a[1]=x`: an element, not followed.
                            let name = name.split('[').next().unwrap_or(name);
                            st.vars.set_unseen(name);
                        }
                    }
                }
            }
            "read" | "mapfile" | "readarray" | "getopts" | "wait" => {
                let kb = Kb::new(&self.kb);
                // The names each one sets besides those it is given: `read`
                // with none sets REPLY, `mapfile` MAPFILE, and `getopts` its
                // OPTARG and OPTIND. `wait` sets only the name of `-p NAME`.
                let own: &[&str] = match program.as_str() {
                    "read" => &["REPLY"],
                    "mapfile" | "readarray" => &["MAPFILE"],
                    "getopts" => &["OPTARG", "OPTIND"],
                    _ => &[],
                };
                let given = seg.argv.iter().skip(1).map(String::as_str);
                let names: Vec<&str> = if program == "wait" {
                    let at = seg.argv.iter().position(|a| {
                        a == "-p"
                            || (a.starts_with('-') && a.ends_with('p') && !a.starts_with("--"))
                    });
                    at.and_then(|i| seg.argv.get(i + 1))
                        .map(String::as_str)
                        .into_iter()
                        .collect()
                } else {
                    given.chain(own.iter().copied()).collect()
                };
                for a in names {
                    if is_var_name(a) {
                        if knowledge::env_known_risky(kb, a) {
                            seg.unknown
                                .get_or_insert(risky_set(&format!("`{program}`"), a));
                        }
                        // OPTIND is getopts' own counter, an integer it sets.
                        if self.assumed.integer(a) && !(program == "getopts" && a == "OPTIND") {
                            seg.unknown
                                .get_or_insert(integer_why(&format!("`{program}`"), a));
                        }
                        st.vars.set_unseen(a);
                    }
                }
                // `read $name`: a name only known at run time may be any.
                if !seg.unknown_args.is_empty() {
                    st.vars.known.clear();
                }
            }
            "printf" => {
                let named = seg
                    .argv
                    .iter()
                    .enumerate()
                    .find_map(|(i, a)| match a.as_str() {
                        "-v" => seg.argv.get(i + 1).cloned(),
                        _ => a
                            .strip_prefix("-v")
                            .filter(|n| is_var_name(n))
                            .map(String::from),
                    });
                if let Some(name) = named {
                    if knowledge::env_known_risky(Kb::new(&self.kb), &name) {
                        seg.unknown.get_or_insert(risky_set("`printf -v`", &name));
                    }
                    if self.assumed.integer(&name) {
                        seg.unknown.get_or_insert(integer_why("`printf -v`", &name));
                    }
                    if seg.unknown_args.iter().any(|(shown, _)| *shown == name) {
                        st.vars.known.clear();
                    }
                    st.vars.set_unseen(&name);
                }
            }
            "unset" => {
                for a in seg.argv.iter().skip(1) {
                    st.vars.unset(a);
                }
            }
            "let" => {
                for a in seg.argv.iter().skip(1) {
                    if a.contains("$(") || a.contains('`') {
                        seg.unknown
                            .get_or_insert("`let` would run a command substitution".into());
                    } else if let Some(name) = words::arithmetic_unseen(a, &st.vars) {
                        seg.unknown.get_or_insert(words::unseen_why(&name, a));
                    }
                }
            }
            "set" | "shopt" => {
                let unknown: Vec<String> = seg
                    .unknown_args
                    .iter()
                    .map(|(shown, _)| shown.clone())
                    .collect();
                match enabled_shell_options(&program, &seg.argv, &unknown) {
                    Err(word) => {
                        seg.unknown.get_or_insert(format!(
                            "`{program}` is given `{word}`, only known at run time, which may turn on a shell option that changes how later commands read (keyword mode, allexport); spell the options out"
                        ));
                    }
                    Ok(options) => {
                        let how = seg.argv.join(" ");
                        if let Some(why) = options
                            .iter()
                            .find_map(|o| unfollowed_shell_option(&how, o))
                        {
                            seg.unknown.get_or_insert(why);
                        }
                        if options.iter().any(|o| o == "allexport") {
                            self.seen.allexport = true;
                        }
                    }
                }
            }
            "trap" => {
                // The handler is shell code that runs later: at exit, on a
                // signal, or before every command (DEBUG), in the directory
                // and with the variables of that moment. It is judged here,
                // and unless it is a constant that only prints, it needs
                // approval: the gate does not follow the state it will see.
                match trap_handler(&seg.argv) {
                    Err(why) => {
                        seg.unknown.get_or_insert(why);
                    }
                    Ok(None) => {}
                    Ok(Some(code)) => {
                        let mut inner = st.clone();
                        let before = self.segments.len();
                        if let Some(why) = self.shell_text(&code, &mut inner, depth + 1) {
                            seg.unknown.get_or_insert(why);
                        }
                        let printing = !code.contains(['$', '`', '<', '>'])
                            && self.segments[before..].iter().all(|s| {
                                s.data_only
                                    && s.paths.is_empty()
                                    && s.unknown.is_none()
                                    && s.unknown_args.is_empty()
                                    && s.wrappers.is_empty()
                                    && !s.function_call
                                    && s.argv.first().is_some_and(|p| {
                                        matches!(
                                            p.as_str(),
                                            "echo" | "printf" | "true" | "false" | ":" | "exit"
                                        )
                                    })
                            });
                        if !printing {
                            seg.unknown.get_or_insert(format!(
                                "the trap's handler `{}` runs later (at exit, on a signal or before each command), in the working directory and with the variables of that moment, which the gate does not follow; a person must approve it, or run that code as the line's last command (a handler of constant `echo`/`printf`/`exit` words is allowed)",
                                short(&code)
                            ));
                        }
                        // A DEBUG trap runs its handler before every later
                        // command, so nothing it assigns is known after this.
                        st.forget_changed_by(&inner, "a trap's handler");
                    }
                }
            }
            _ => {}
        }
        st.forget_after(&assigned);
        if self.functions.contains_key(&seg.argv[0]) {
            seg.function_call = true;
            let name = seg.argv[0].clone();
            if !self.call_stack.contains(&name) && self.call_stack.len() < MAX_SHELL_DEPTH {
                if let Some(body) = self.functions.get(&name).cloned() {
                    self.call_stack.push(name);
                    let mut call_state = st.clone();
                    self.function_body(&body, &mut call_state, depth, nest + 1);
                    self.call_stack.pop();
                    // A function body runs in the caller's shell: its `cd` and
                    // its assignments persist, but a `local` one is restored
                    // on return, so either value may hold.
                    for (name, old) in &st.vars.known {
                        if let Some(now) = call_state.vars.known.get_mut(name) {
                            for v in old {
                                if !now.contains(v) {
                                    now.push(v.clone());
                                }
                            }
                            if now.len() > words::MAX_ALTERNATIVES {
                                call_state.vars.set_unseen(name);
                            }
                        }
                    }
                    for name in &st.vars.unseen {
                        call_state.vars.set_unseen(name);
                    }
                    st.cwd = call_state.cwd;
                    st.vars = call_state.vars;
                }
            }
        }
        self.push(seg);
    }
}

/// One assignment word: `name=raw`, `name+=raw`, `name[i]=raw`.
struct Assignment {
    name: String,
    /// The value as written; `(` for an array.
    raw: String,
    /// `+=`.
    append: bool,
    /// `name[i]=`: an array element.
    element: bool,
}

/// What a `[[ ]]` test assigns as bash evaluates it: its words' expansions,
/// and the operands of `-eq` and the like, which are arithmetic
/// (`[[ x=3 -eq 3 ]]`, `[[ i++ -lt 3 ]]`).
fn test_assigns(e: &ast::ExtendedTestExpr, out: &mut Assigned) {
    use ast::ExtendedTestExpr as E;
    match e {
        E::And(a, b) | E::Or(a, b) => {
            test_assigns(a, out);
            test_assigns(b, out);
        }
        E::Not(a) | E::Parenthesized(a) => test_assigns(a, out),
        E::UnaryTest(_, w) => {
            words::assigned_in_word(&w.value, out);
            // `-v a[i=1]`: the subscript of the name tested is arithmetic.
            if let Some((_, sub)) = w.value.split_once('[') {
                words::arithmetic_assigned(sub, out);
            }
        }
        E::BinaryTest(op, a, b) => {
            let arithmetic = is_arithmetic(op);
            for w in [a, b] {
                words::assigned_in_word(&w.value, out);
                if arithmetic {
                    words::arithmetic_assigned(&w.value, out);
                }
            }
        }
    }
}

/// A word that is one arithmetic expansion (`$((n+1))`): its value is an integer.
fn arithmetic_only(raw: &str) -> bool {
    let bare = raw
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .unwrap_or(raw);
    bare.starts_with("$((")
        && bare.ends_with("))")
        && words::arithmetic_parts(bare).first().map(|p| p.len() + 5) == Some(bare.len())
}

/// A string variable holding one of `old` after `+=` one of `more`; `None`
/// when that makes too many alternatives.
fn appended(old: &[String], more: &[String]) -> Option<Vec<String>> {
    if old.len().saturating_mul(more.len()) > words::MAX_ALTERNATIVES {
        return None;
    }
    Some(
        old.iter()
            .flat_map(|o| more.iter().map(move |m| format!("{o}{m}")))
            .collect(),
    )
}

/// The handler a `trap` sets: `trap [-lpP] [--] [ACTION SIGSPEC…]`.
/// `Ok(None)`: none (printing, listing, a reset with `-`, ignoring with '').
fn trap_handler(argv: &[String]) -> Result<Option<String>, String> {
    let mut i = 1;
    match argv.get(1) {
        Some(a) if a == "--" => i = 2,
        Some(a) if a.len() > 1 && a.starts_with('-') => {
            if !a[1..].chars().all(|c| matches!(c, 'l' | 'p' | 'P')) {
                return Err(format!(
                    "`trap` is given the option `{}`, which the gate does not know; spell the handler after `--`",
                    short(a)
                ));
            }
            // `-l` lists signals and `-p`/`-P` print handlers: nothing is set.
            return Ok(None);
        }
        _ => {}
    }
    match argv.get(i).map(String::as_str) {
        None | Some("-") | Some("") => Ok(None),
        Some(code) => Ok(Some(code.to_string())),
    }
}

/// The working directories after `cd dir`.
fn chdir(cwd: &Cwd, dir: &str) -> Cwd {
    let list = match cwd {
        Cwd::Unknown(why) if !dir.starts_with('/') => return Cwd::Unknown(why.clone()),
        Cwd::Unknown(_) => vec![crate::load::absolute_lexical(Path::new(dir))],
        Cwd::Known(list) => list
            .iter()
            .map(|c| crate::load::absolute_lexical(&c.join(dir)))
            .collect(),
    };
    // Every segment carries its working directories, and each is checked against
    // the boundary: a cwd that could grow with the command (`cd b; cd b; …`) would
    // make the decision cost segments × length. No cwd of PATH_MAX bytes or more is
    // followed (most tools cannot even print it), so that cost stays bounded.
    if list
        .iter()
        .any(|p| p.as_os_str().len() >= crate::paths::PATH_MAX)
    {
        return Cwd::Unknown(format!(
            "the working directory would be {} bytes or longer (PATH_MAX)",
            crate::paths::PATH_MAX
        ));
    }
    Cwd::Known(list)
}

/// `[[ a -eq b ]]` and kin: both operands are arithmetic expressions.
fn is_arithmetic(op: &ast::BinaryPredicate) -> bool {
    use ast::BinaryPredicate as P;
    matches!(
        op,
        P::ArithmeticEqualTo
            | P::ArithmeticNotEqualTo
            | P::ArithmeticLessThan
            | P::ArithmeticLessThanOrEqualTo
            | P::ArithmeticGreaterThan
            | P::ArithmeticGreaterThanOrEqualTo
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argvs(text: &str) -> Vec<Vec<String>> {
        let a = analyze(text, &Context::new("/w".into(), "/w".into()));
        assert!(a.unknown.is_none(), "{:?}", a.unknown);
        a.segments.into_iter().map(|s| s.argv).collect()
    }

    #[test]
    fn a_working_directory_of_path_max_or_more_is_not_followed() {
        // 2 100 × "b/" from /w passes PATH_MAX: from there the cwd is unknown,
        // so each later segment costs its own bytes, not the cwd's.
        // (`&&`: after `;` a `cd` into a directory not on disk may fail,
        // and the cwds it may leave grow past the branch bound first.)
        let text = format!("{}ls", "cd b && ".repeat(2100));
        let a = analyze(&text, &Context::new("/w".into(), "/w".into()));
        let last = a.segments.last().expect("segments");
        assert!(
            matches!(&last.cwd, Cwd::Unknown(why) if why.contains("PATH_MAX")),
            "{:?}",
            last.cwd
        );
        let short = analyze(
            "cd b && cd c && ls",
            &Context::new("/w".into(), "/w".into()),
        );
        assert_eq!(
            short.segments.last().map(|s| s.cwd.clone()),
            Some(Cwd::Known(vec![PathBuf::from("/w/b/c")]))
        );
        // After `;`, a `cd` into a directory not on disk may fail: both.
        let short = analyze("cd b; ls", &Context::new("/w".into(), "/w".into()));
        assert_eq!(
            short.segments.last().map(|s| s.cwd.clone()),
            Some(Cwd::Known(vec![PathBuf::from("/w/b"), PathBuf::from("/w")]))
        );
    }

    #[test]
    fn nested_loops_are_judged_within_a_budget_of_passes() {
        let ctx = Context::new("/w".into(), "/w".into());
        // Each loop resets `z` before and changes it inside, so every loop
        // needs a second pass each time the loop around it runs.
        let nested = |depth: usize| {
            (0..depth).fold("cat $z".to_string(), |inner, i| {
                format!("z=a; for v{i} in 1 2; do z=c; {inner}; done")
            })
        };
        let deep = analyze(&nested(10), &ctx);
        assert!(
            deep.unknown
                .as_deref()
                .is_some_and(|w| w.contains("loops nested here")),
            "{:?}",
            deep.unknown
        );
        assert!(analyze(&nested(3), &ctx).unknown.is_none());
        // Loops one after another are not counted together.
        let row = "for i in 1 2; do x=$x$i; done; ".repeat(500) + "ls";
        assert!(analyze(&row, &ctx).unknown.is_none());
    }

    #[test]
    fn compounds_split_into_simple_commands() {
        assert_eq!(argvs("ls -l; echo hi && cat x | wc -l").len(), 4);
        assert_eq!(argvs("if true; then ls; else pwd; fi").len(), 3);
        assert_eq!(argvs("for f in a b; do cat $f; done").len(), 2);
        assert_eq!(argvs("(cd src && ls) ; { pwd; }").len(), 3);
    }

    #[test]
    fn wrappers_unwrap() {
        assert_eq!(
            argvs("env -i A=1 timeout 5 nice -n 3 curl x")[0],
            vec!["curl", "x"]
        );
        assert_eq!(argvs("sh -c 'bash -c \"wget y\"'")[0], vec!["wget", "y"]);
        let f = argvs("find . -name '*.py' -exec rm {} ;");
        assert!(f.iter().any(|a| a[0] == "rm"), "{f:?}");
    }

    /// A reproducible stream of pseudo-random numbers for the generated
    /// inputs of the differential tests (xorshift64; `seed` must not be 0).
    pub(super) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// Reading a plain line without the parser must give exactly what the
    /// parser gives, for every line read so; lines refused go to the parser.
    #[test]
    fn plain_fast_path_equals_the_parser() {
        const WORDS: &[&str] = &[
            "ls",
            "-la",
            "src",
            "cat",
            "src/main.rs",
            "grep",
            "-n",
            "main",
            "a=b",
            "X=1",
            "sh",
            "-c",
            "bash",
            "env",
            "-i",
            "FOO=1",
            "LD_PRELOAD=/x",
            "timeout",
            "5",
            "nice",
            "git",
            "status",
            "clone",
            "curl",
            "http://h",
            "if",
            "then",
            "fi",
            "time",
            "for",
            "in",
            "do",
            "done",
            "while",
            "function",
            "coproc",
            "select",
            "case",
            "esac",
            "!",
            "../x",
            "..",
            "/etc/passwd",
            "/tmp/x",
            "find",
            ".",
            "-exec",
            "-execdir",
            "rm",
            "-rf",
            "xargs",
            "cd",
            "pushd",
            "popd",
            "eval",
            "source",
            "exec",
            "command",
            "-v",
            "%1",
            "@",
            "--opt=/etc",
            "a,b",
            "-",
            "--",
            "+x",
            "12345678901234567890",
            "sudo",
            "python3",
            "-m",
            "pytest",
            "x:y",
            "%",
            "=",
            "cp",
            "ln",
            "-s",
            "sed",
            "-i",
            "tee",
            "/dev/tcp/h/80",
            "stdbuf",
            "-o0",
            "nohup",
            "xargs",
            "-I",
            "~",
            "$HOME",
            "'q'",
            "a;b",
            "{",
            "}",
            "[[",
            "*",
            "#c",
            "dir/",
            "'a b'",
            "\"fn main\"",
            "c''url",
            "\"cu\"rl",
            "'$HOME'",
            "\"~/x\"",
            "'*'",
            "\"../x\"",
            "'/etc/passwd'",
            "\"a=b\"",
            "'if'",
            "\"é\"",
            "''",
            "\"$x\"",
            "'a",
            "sub",
            "\"sub\"",
        ];
        const JOINS: &[&str] = &[
            " && ", " || ", "; ", " | ", "&&", "||", ";", "|", " & ", " |& ", " ;; ", "\n",
        ];
        let ctx = Context::new("/w/sub".into(), "/w".into());
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let (mut words_read, mut lines_read) = (0, 0);
        for _ in 0..30_000 {
            let n = 1 + (next() % 9) as usize;
            let mut text = String::new();
            if next().is_multiple_of(5) {
                text.push(' ');
            }
            for i in 0..n {
                if i > 0 {
                    text.push_str(match next() % 12 {
                        0 => "\t",
                        1 | 2 => JOINS[(next() % JOINS.len() as u64) as usize],
                        _ => " ",
                    });
                }
                text.push_str(WORDS[(next() % WORDS.len() as u64) as usize]);
            }
            if plain::words(&text).is_some() {
                words_read += 1;
            } else if plain::program(&text).is_some() {
                lines_read += 1;
            }
            let with = analyze_with(&text, &ctx, true);
            let without = analyze_with(&text, &ctx, false);
            assert_eq!(with, without, "the fast path differs on {text:?}");
        }
        // The comparison is only worth something if both shortcuts were taken.
        assert!(
            words_read > 3_000,
            "only {words_read} lines were plain words"
        );
        assert!(
            lines_read > 3_000,
            "only {lines_read} lines were read as plain"
        );
    }

    /// Found by the differential test: a wrapper option that wants a value as
    /// the last word made the unwrapper slice past the end (a panic that
    /// `guarded` turned into `on_unknown`).
    #[test]
    fn a_wrapper_option_without_its_value_is_judged_not_a_panic() {
        let ctx = Context::new("/w".into(), "/w".into());
        for text in ["stdbuf -o", "nice -n", "timeout -s", "exec -a"] {
            // Unguarded on purpose: a panic fails this test.
            let a = analyze_with(text, &ctx, false);
            assert_eq!(a.unknown, None, "{text}");
            let argvs: Vec<Vec<String>> = a.segments.into_iter().map(|s| s.argv).collect();
            let words: Vec<String> = text.split(' ').map(String::from).collect();
            assert_eq!(argvs, vec![words], "{text}");
        }
    }

    /// The parse bound alone, pre-parse guards aside, ends every shape on which
    /// brush-parser was found to backtrack exponentially or its tokenizer to grow
    /// without end (each took seconds to minutes, or gigabytes, unbounded;
    /// without the bound this test does not finish).
    #[test]
    fn the_parse_bound_ends_every_backtracking_shape_the_guards_aside() {
        let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/shell_decide");
        let mut tried = 0;
        for entry in std::fs::read_dir(&seeds).expect("fuzz seeds") {
            let path = entry.expect("seed").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.starts_with("regress-") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("seed text");
            let _ = brush_parser::budget::with_budget(parse_steps(text.len()), || {
                brush_parser::Parser::new(text.as_bytes(), &words::options()).parse_program()
            });
            tried += 1;
        }
        assert!(tried >= 10, "{tried} seeds");
    }

    /// Everyday scripts stay well inside the bound: 64 KiB of conditionals,
    /// `[[`, `case`, subshells and quoting (6.3 steps a byte).
    #[test]
    fn a_long_everyday_script_is_within_the_parse_bound() {
        let unit = "if [ -f \"a.txt\" ]; then sed -e \"s/foo/bar/g\" -i a.txt; elif [[ -d b && \"$x\" == y* ]]; then (cd b && make -j2 all); fi; case \"$1\" in a|b) echo ab;; *) echo other;; esac\n";
        let text = unit.repeat(64 * 1024 / unit.len());
        let a = analyze(&text, &Context::new("/w".into(), "/w".into()));
        assert_eq!(a.unknown, None);
        assert!(a.segments.len() > 1000);
    }
}
