//! Reading sed scripts and awk programs for what runs a command or writes a
//! file. One pass each, linear in the text; what cannot be read is reported as
//! an effect (the caller's action applies), never ignored.

use super::{Kind, Script};
use crate::shell::Access;

/// Something a script does.
#[derive(Debug, Clone, PartialEq)]
pub enum Hit {
    /// A file it reads or writes by name (`w out.txt`, `r /etc/passwd`).
    Path(String, Access),
    /// Something the knowledge base's action applies to, with what showed it.
    Effect(Kind, String),
}

pub fn scan(lang: Script, text: &str) -> Vec<Hit> {
    match lang {
        Script::Sed => sed(text),
        Script::Awk => awk(text),
    }
}

/// GNU sed: the `e` command and `s///e` run commands; `w`/`W` and `s///w` write
/// files; `r`/`R` read them.
pub fn sed(text: &str) -> Vec<Hit> {
    let b = text.as_bytes();
    let mut hits = Vec::new();
    let mut i = 0;
    // The rest of the line from `i`, trimmed: a file name.
    let line_from = |i: usize| -> (String, usize) {
        let mut j = i;
        while j < b.len() && b[j] != b'\n' {
            j += 1;
        }
        (text[i..j].trim().to_string(), j)
    };
    // Past a delimited part (`/re/`); returns the index after the closing delimiter.
    let delimited = |mut i: usize, d: u8| -> Option<usize> {
        while i < b.len() {
            if b[i] == b'\\' {
                i += 2;
                continue;
            }
            if b[i] == d {
                return Some(i + 1);
            }
            i += 1;
        }
        None
    };
    let unreadable = |hits: &mut Vec<Hit>, why: &str| {
        hits.push(Hit::Effect(
            Kind::Exec,
            format!("the script could not be read ({why})"),
        ));
    };
    while i < b.len() {
        let c = b[i];
        // Separators, blanks, braces, negation.
        if c.is_ascii_whitespace() || c == b';' || c == b'{' || c == b'}' || c == b'!' {
            i += 1;
            continue;
        }
        if c == b'#' {
            i = line_from(i).1;
            continue;
        }
        // Addresses: numbers, `$`, `/re/`, `\cREc`, `,`, `~`, `+`.
        if c.is_ascii_digit() || c == b'$' || c == b',' || c == b'~' || c == b'+' {
            i += 1;
            continue;
        }
        if c == b'/' || c == b'\\' {
            let (d, start) = if c == b'\\' {
                match b.get(i + 1) {
                    Some(&d) => (d, i + 2),
                    None => break,
                }
            } else {
                (b'/', i + 1)
            };
            match delimited(start, d) {
                Some(j) => {
                    i = j;
                    // Address flags `I` and `M`.
                    while i < b.len() && (b[i] == b'I' || b[i] == b'M') {
                        i += 1;
                    }
                }
                None => {
                    unreadable(&mut hits, "an address is not closed");
                    break;
                }
            }
            continue;
        }
        i += 1;
        match c {
            b'e' => {
                let (cmd, j) = line_from(i);
                let what = if cmd.is_empty() {
                    "the `e` command runs the pattern space as a command".to_string()
                } else {
                    format!("the `e` command runs `{cmd}`")
                };
                hits.push(Hit::Effect(Kind::Exec, what));
                i = j;
            }
            b'w' | b'W' | b'r' | b'R' => {
                let (file, j) = line_from(i);
                if c == b'w' || c == b'W' {
                    hits.push(Hit::Effect(
                        Kind::Write,
                        format!("the `{}` command writes to `{file}`", c as char),
                    ));
                    if !file.starts_with("/dev/std") {
                        hits.push(Hit::Path(file, Access::Write));
                    }
                } else if !file.is_empty() {
                    hits.push(Hit::Path(file, Access::Read));
                }
                i = j;
            }
            b's' | b'y' => {
                let Some(&d) = b.get(i) else {
                    unreadable(&mut hits, "`s` without a delimiter");
                    break;
                };
                if d == b'\n' || d == b'\\' {
                    unreadable(&mut hits, "an unusual `s` delimiter");
                    break;
                }
                let Some(j) = delimited(i + 1, d).and_then(|j| delimited(j, d)) else {
                    unreadable(&mut hits, "an `s` or `y` command is not closed");
                    break;
                };
                i = j;
                if c == b'y' {
                    continue;
                }
                // Flags, up to a separator; `w FILE` takes the rest of the line.
                while i < b.len() && !matches!(b[i], b';' | b'\n' | b'}') {
                    match b[i] {
                        b'e' => hits.push(Hit::Effect(
                            Kind::Exec,
                            "the `e` flag of `s` runs the result as a command".into(),
                        )),
                        b'w' => {
                            let (file, j) = line_from(i + 1);
                            hits.push(Hit::Effect(
                                Kind::Write,
                                format!("the `w` flag of `s` writes to `{file}`"),
                            ));
                            if !file.starts_with("/dev/std") {
                                hits.push(Hit::Path(file, Access::Write));
                            }
                            i = j;
                            break;
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            // Text commands: the rest of the line is text (`a foo`, `i\`).
            b'a' | b'i' | b'c' => {
                let (_, j) = line_from(i);
                i = j;
            }
            // A label (`:a`, `b a`, `t a`, `T a`) or `v`'s version: GNU sed
            // ends it at white space, `;`, `}` or `#`, and reads what follows
            // as commands (`:a e id` runs `id`). Ending it at the first of
            // these is the reading that sees the most commands; an older sed
            // that reads a longer label only runs fewer of them.
            b':' | b'b' | b't' | b'T' | b'v' => {
                while i < b.len() && matches!(b[i], b' ' | b'\t') {
                    i += 1;
                }
                while i < b.len() && !(b[i].is_ascii_whitespace() || matches!(b[i], b';' | b'}')) {
                    i += 1;
                }
            }
            // An optional number (`q5`, `l 70`); anything after it is read as
            // commands, which sed would refuse.
            b'l' | b'L' | b'q' | b'Q' => {
                while i < b.len() && matches!(b[i], b' ' | b'\t') {
                    i += 1;
                }
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            b'p' | b'P' | b'd' | b'D' | b'n' | b'N' | b'h' | b'H' | b'g' | b'G' | b'x' | b'='
            | b'z' | b'F' => {}
            other => {
                unreadable(
                    &mut hits,
                    &format!("`{}` is not a sed command", other as char),
                );
                break;
            }
        }
    }
    hits
}

/// What the token before a `/` says it is.
#[derive(Clone, Copy, PartialEq)]
enum Before {
    /// An operand ended (`x`, `1.`, `"s"`, `)`, `]`): `/` divides.
    Operand,
    /// An operand is expected (start, `(`, `,`, an operator, `print`, a new
    /// line): `/` opens a regular expression.
    Expected,
    /// The awks differ: after `x++` gawk divides and mawk reads a regular
    /// expression; after `if (…)` gawk reads one and mawk divides.
    Either,
}

/// Words after which awk expects an operand, so that `/` opens a regular
/// expression (`print /x/`).
const EXPECTING: &[&str] = &[
    "print", "printf", "return", "case", "do", "else", "exit", "in", "BEGIN", "END",
];

/// awk: `system(…)`, a pipe to or from a command (`print | "cmd"`, `"cmd" |
/// getline`), output redirection in a print statement (`print > "f"`), input
/// redirection of `getline` (`getline line < "/etc/shadow"`), gawk's
/// `@include`, `@load` and indirect calls (`@f("id")` calls the function
/// named by `f`, `system` among them), and `ARGV`/`ARGC`, which name the
/// files it reads. Strings, regular expressions and comments are skipped;
/// `||` is logical. Where a `/` divides in one awk and opens a regular
/// expression in another, what follows cannot be read.
pub fn awk(text: &str) -> Vec<Hit> {
    let b = text.as_bytes();
    let mut hits = Vec::new();
    let mut i = 0;
    let mut before = Before::Expected;
    // Whether each open `(` follows `if`, `while` or `for`: after its `)` a
    // statement starts.
    let mut parens: Vec<bool> = Vec::new();
    let mut control = false;
    let mut in_print = false;
    let mut in_getline = false;
    let unreadable = |hits: &mut Vec<Hit>, why: &str| {
        hits.push(Hit::Effect(
            Kind::Exec,
            format!("the program could not be read ({why})"),
        ));
    };
    while i < b.len() {
        let c = b[i];
        // A word: a name, a keyword or a number (`1.`, `1e5`).
        if c.is_ascii_alphanumeric() || c == b'_' || c == b'@' || c == b'.' {
            let s = i;
            while i < b.len()
                && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'_' | b'@' | b'.'))
            {
                i += 1;
            }
            let w = &text[s..i];
            control = matches!(w, "if" | "while" | "for" | "switch");
            before = if EXPECTING.contains(&w) || control || w == "@" {
                Before::Expected
            } else {
                Before::Operand
            };
            match w {
                "print" | "printf" => in_print = true,
                "getline" => in_getline = true,
                "system" => hits.push(Hit::Effect(Kind::Exec, "`system()` runs a command".into())),
                "ARGV" | "ARGC" => hits.push(Hit::Effect(
                    Kind::Read,
                    format!("`{w}` names the files it reads, and the program can change them"),
                )),
                "@" => {}
                _ if w.starts_with('@') => hits.push(Hit::Effect(
                    Kind::Exec,
                    format!(
                        "`{w}` loads code the gate cannot see, or calls a function named at run time (`system` among them)"
                    ),
                )),
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                before = Before::Operand;
                continue;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            // A line continued: white space.
            b'\\' if matches!(b.get(i + 1), Some(b'\n')) => {
                i += 2;
                continue;
            }
            b'\\' if b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n') => {
                i += 3;
                continue;
            }
            b'/' if before == Before::Either => {
                unreadable(
                    &mut hits,
                    "a `/` that one awk reads as division and another as the start of a regular expression",
                );
                return hits;
            }
            b'/' if before == Before::Expected => {
                match regex_end(b, i + 1) {
                    Ok(j) => i = j,
                    Err(why) => {
                        unreadable(&mut hits, why);
                        return hits;
                    }
                }
                before = Before::Operand;
                continue;
            }
            b'+' | b'-' if b.get(i + 1) == Some(&c) => {
                // Postfix after an operand; prefix otherwise (`++/x/` is no awk).
                before = if before == Before::Operand {
                    Before::Either
                } else {
                    Before::Expected
                };
                i += 2;
                continue;
            }
            b'(' => {
                parens.push(control);
                before = Before::Expected;
            }
            b')' => {
                before = if parens.pop() == Some(true) {
                    Before::Either
                } else {
                    Before::Operand
                };
            }
            b']' => before = Before::Operand,
            b'|' => {
                if b.get(i + 1) == Some(&b'|') {
                    i += 2;
                    before = Before::Expected;
                    continue;
                }
                hits.push(Hit::Effect(
                    Kind::Exec,
                    "`|` pipes to or from a command".into(),
                ));
                before = Before::Expected;
            }
            b'>' if in_print => {
                hits.push(Hit::Effect(
                    Kind::Write,
                    "`print >` writes to a file named at run time".into(),
                ));
                before = Before::Expected;
            }
            b'<' if in_getline => {
                hits.push(Hit::Effect(
                    Kind::Read,
                    "`getline <` reads a file named at run time".into(),
                ));
                before = Before::Expected;
            }
            b';' | b'\n' | b'{' | b'}' => {
                in_print = false;
                in_getline = false;
                before = Before::Expected;
            }
            c if c.is_ascii_whitespace() => {}
            _ => before = Before::Expected,
        }
        if !c.is_ascii_whitespace() {
            control = false;
        }
        i += 1;
    }
    hits
}

/// Past a regular expression that starts at `i` (after its `/`): the index
/// after the closing `/`. A `/` inside a bracket expression (`[/]`) is part
/// of it for gawk and mawk and ends it for others, so it cannot be read.
fn regex_end(b: &[u8], mut i: usize) -> Result<usize, &'static str> {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'\n' => return Err("a regular expression is not closed on its line"),
            b'/' => return Ok(i + 1),
            b'[' => {
                i += 1;
                // `[]…]` and `[^]…]`: the first `]` is a member.
                if b.get(i) == Some(&b'^') {
                    i += 1;
                }
                if b.get(i) == Some(&b']') {
                    i += 1;
                }
                loop {
                    match b.get(i) {
                        None | Some(b'\n') => return Err("a bracket expression is not closed"),
                        Some(b'/') => return Err("a `/` inside a bracket expression"),
                        Some(b'\\') => i += 2,
                        Some(b']') => {
                            i += 1;
                            break;
                        }
                        // `[:alpha:]`, `[.x.]`, `[=x=]` hold a `]` of their own.
                        Some(b'[') if matches!(b.get(i + 1), Some(b':' | b'.' | b'=')) => {
                            let close = b[i + 1];
                            i += 2;
                            while i < b.len() && !(b[i] == close && b.get(i + 1) == Some(&b']')) {
                                if matches!(b[i], b'/' | b'\n') {
                                    return Err("a `/` inside a bracket expression");
                                }
                                i += 1;
                            }
                            i += 2;
                        }
                        Some(_) => i += 1,
                    }
                }
            }
            _ => i += 1,
        }
    }
    Err("a regular expression is not closed")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(h: &[Hit]) -> Vec<Kind> {
        h.iter()
            .filter_map(|h| match h {
                Hit::Effect(k, _) => Some(*k),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn sed_scripts() {
        for ok in [
            "s/a/b/g",
            "1,10p",
            "/^#/d",
            "s|x|y|2",
            "$!N;s/\\n/ /",
            "y/abc/xyz/",
            "/start/,/end/{s/a/b/;p}",
            "a hello",
            ":a;N;ba",
            "s/e/w/g",
        ] {
            assert!(kinds(&sed(ok)).is_empty(), "{ok}: {:?}", sed(ok));
        }
        assert_eq!(kinds(&sed("1e id")), [Kind::Exec]);
        assert_eq!(kinds(&sed("s/x/id/e")), [Kind::Exec]);
        assert_eq!(kinds(&sed("w /tmp/out")), [Kind::Write]);
        assert_eq!(kinds(&sed("s/a/b/w out.txt")), [Kind::Write]);
        assert!(sed("w out.txt").contains(&Hit::Path("out.txt".into(), Access::Write)));
        assert!(sed("r /etc/shadow").contains(&Hit::Path("/etc/shadow".into(), Access::Read)));
        assert_eq!(kinds(&sed("s/a")), [Kind::Exec]);
        // A label ends at white space: what follows is a command.
        assert_eq!(kinds(&sed(":a e id")), [Kind::Exec]);
        assert_eq!(kinds(&sed(":a s/x/id/e")), [Kind::Exec]);
        assert_eq!(kinds(&sed("b end e id")), [Kind::Exec]);
        assert_eq!(kinds(&sed("t\tx\te id")), [Kind::Exec]);
        assert_eq!(kinds(&sed("v 4.2 e id")), [Kind::Exec]);
        assert_eq!(kinds(&sed("{:a}e id")), [Kind::Exec]);
        assert_eq!(kinds(&sed(":a#x e id")), [Kind::Exec]);
        assert_eq!(kinds(&sed("q5 e id")), [Kind::Exec]);
        assert!(sed(":x w ../pwned").contains(&Hit::Path("../pwned".into(), Access::Write)));
        for ok in [
            ":a;N;$!ba;s/\n/ /g",
            "b end; s/a/b/; :end",
            "{:a;N;ba}",
            "q5",
            "l 70",
        ] {
            assert!(kinds(&sed(ok)).is_empty(), "{ok}: {:?}", sed(ok));
        }
    }

    #[test]
    fn awk_programs() {
        for ok in [
            "{print $1}",
            "/a|b/ {print}",
            "$1 > 5 {n++} END {print n}",
            "NR==1 || NR==2",
            "{ x = a / b / c }",
            "BEGIN { print \"a | b\" }",
        ] {
            assert!(kinds(&awk(ok)).is_empty(), "{ok}: {:?}", awk(ok));
        }
        assert_eq!(kinds(&awk("BEGIN{system(\"id\")}")), [Kind::Exec]);
        assert_eq!(kinds(&awk("{print | \"sh\"}")), [Kind::Exec]);
        assert_eq!(kinds(&awk("BEGIN{\"id\" | getline x}")), [Kind::Exec]);
        assert_eq!(kinds(&awk("{print > \"/tmp/x\"}")), [Kind::Write]);
        assert_eq!(
            kinds(&awk(
                "BEGIN{while((getline l < \"/etc/shadow\")>0) print l}"
            )),
            [Kind::Read]
        );
        assert!(kinds(&awk("{ if ($1 < 3) print }")).is_empty());
        for ok in [
            "{ x = $1 / 2 }",
            "{ print /a|b/ }",
            "$1 ~ /[[:alpha:]]|x/ { n++ } END { print n / 2 }",
            "{ x = 1. / 2; y = (a) / 3 }",
            "!/^#/",
            "BEGIN { n = split($0, a, /,|;/) }",
            "/x/ && /y|z/",
            "{ getline; print }",
        ] {
            assert!(kinds(&awk(ok)).is_empty(), "{ok}: {:?}", awk(ok));
        }
        // After `x++` gawk divides (and runs `system`), mawk reads a regex.
        assert_eq!(
            kinds(&awk("BEGIN{x=4; y = x++ / 2; system(\"id\"); z = 1 / 1}")),
            [Kind::Exec]
        );
        // A continued line divides.
        assert_eq!(
            kinds(&awk("BEGIN{x = 4 \\\n / 2; system(\"id\"); z = 1 / 1}")),
            [Kind::Exec]
        );
        assert_eq!(
            kinds(&awk("BEGIN{x = 1. / 2; system(\"id\"); z = 1 / 1}")),
            [Kind::Exec]
        );
        // `print /re/` is a regex: a `#` or `"` in it starts nothing.
        assert_eq!(
            kinds(&awk("BEGIN{ print /#/; system(\"id\") }")),
            [Kind::Exec]
        );
        assert_eq!(
            kinds(&awk("BEGIN{ print /\"/; system(\"id\"); x = \"/ }")),
            [Kind::Exec]
        );
        assert_eq!(
            kinds(&awk("/[/\"]/; system(\"id\"); x = \"/")),
            [Kind::Exec]
        );
        assert_eq!(kinds(&awk("BEGIN{f=\"system\"; @f(\"id\")}")), [Kind::Exec]);
        assert_eq!(
            kinds(&awk("BEGIN{ARGV[1]=\"/etc/shadow\";ARGC=2}{print}")),
            [Kind::Read, Kind::Read]
        );
    }
}
