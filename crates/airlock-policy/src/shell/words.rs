//! Expanding one shell word the way bash would, as far as that can be known
//! before running: quote removal, escapes, `$'…'`, `~`, brace expansion and the
//! variables the script itself set to literal values. Anything else (command
//! substitution, unknown variables) is reported, never guessed.

use brush_parser::word::{
    self, Parameter, ParameterExpr, TildeExpr, WordPiece, WordPieceWithSource,
};
use brush_parser::ParserOptions;
use std::collections::HashMap;

/// At most this many alternatives per word (brace expansion, loop variables).
pub const MAX_ALTERNATIVES: usize = 64;

/// What a word expands to.
#[derive(Debug, Clone, PartialEq)]
pub enum Expansion {
    /// The word's possible values (usually one). `glob` is set when an unquoted
    /// `*`, `?` or `[` remains, so the value is a pattern.
    Known { values: Vec<String>, glob: bool },
    /// The value depends on something only known at run time (`$X`, `$1`).
    Unknown { shown: String, why: String },
    /// The word runs code when expanded (command or process substitution,
    /// `${x@P}`): never allowed.
    Executes { why: String },
}

/// Values of variables, as far as the script itself makes them known.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Vars {
    /// Variables with known values (each value one alternative).
    pub known: HashMap<String, Vec<String>>,
    /// Variables the script gives values the gate cannot see (`read`, a loop
    /// over words it cannot expand, an assignment of such a word). In
    /// arithmetic, bash evaluates a variable's value as an expression, where
    /// an array subscript runs a command substitution: `read x < f; echo
    /// $((x))` runs whatever `f` holds as `a[$(cmd)]`.
    pub unseen: std::collections::HashSet<String>,
}

impl Vars {
    pub fn get(&self, name: &str) -> Option<&Vec<String>> {
        self.known.get(name)
    }
    /// `name` now holds one of `values`.
    pub fn set_known(&mut self, name: &str, values: Vec<String>) {
        self.unseen.remove(name);
        self.known.insert(name.to_string(), values);
    }
    /// `name` now holds a value the gate cannot see.
    pub fn set_unseen(&mut self, name: &str) {
        self.known.remove(name);
        self.unseen.insert(name.to_string());
    }
    /// `name` is unset.
    pub fn unset(&mut self, name: &str) {
        self.known.remove(name);
        self.unseen.remove(name);
    }
}

/// Most levels of variables naming variables followed in arithmetic.
const ARITHMETIC_DEPTH: usize = 8;

/// The first variable that the arithmetic expression `expr` reads, directly
/// or through known values that name it, whose value the gate cannot see
/// (or a positional parameter, whose value comes from a caller); bash would
/// evaluate that value as an expression.
pub fn arithmetic_unseen(expr: &str, vars: &Vars) -> Option<String> {
    arithmetic_unseen_at(expr, vars, 0)
}

fn arithmetic_unseen_at(expr: &str, vars: &Vars, depth: usize) -> Option<String> {
    if depth > ARITHMETIC_DEPTH {
        return Some(format!("`{}` (names nest too deep)", short(expr)));
    }
    let b = expr.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'$'
            && matches!(b.get(i + 1), Some(d) if d.is_ascii_digit() || *d == b'@' || *d == b'*')
            || b[i..].starts_with(b"${")
                && matches!(b.get(i + 2), Some(d) if d.is_ascii_digit() || *d == b'@' || *d == b'*')
        {
            return Some("a positional parameter".into());
        }
        if (c.is_ascii_alphabetic() || c == b'_') && (i == 0 || !word(b[i - 1])) {
            let end = (i..b.len()).find(|&j| !word(b[j])).unwrap_or(b.len());
            let name = &expr[i..end];
            if vars.unseen.contains(name) {
                return Some(format!("`{name}`"));
            }
            if let Some(values) = vars.known.get(name) {
                for v in values {
                    if v.trim().parse::<i64>().is_err() {
                        if let Some(found) = arithmetic_unseen_at(v, vars, depth + 1) {
                            return Some(found);
                        }
                    }
                }
            }
            i = end;
            continue;
        }
        i += 1;
    }
    None
}

/// What expansions and arithmetic assign as they are evaluated, which the
/// gate does not follow: the value a name held before is no longer known.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Assigned {
    /// Names arithmetic assigns (`x=3`, `x+=1`, `x++`, `--x`): an integer.
    pub integers: Vec<String>,
    /// Names `${x:=word}` or `${x=word}` may assign: the word's value.
    pub defaults: Vec<String>,
    /// Arithmetic assigns a name only known at run time (`(($n=1))`).
    pub any: bool,
}

impl Assigned {
    pub fn is_empty(&self) -> bool {
        self.integers.is_empty() && self.defaults.is_empty() && !self.any
    }
}

/// Add what the arithmetic expression `expr` assigns to `out`. A name is
/// assigned when an assignment operator (`=` but not `==`, `+=`, `<<=`, …)
/// follows it, after an optional subscript, or `++`/`--` stands on either
/// side. A `$` in an expression that assigns may make the assigned name
/// (`(($n=1))`, `((${n}++))`), so then any name may be.
pub fn arithmetic_assigned(expr: &str, out: &mut Assigned) {
    let b = expr.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let skip_blank = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        j
    };
    let assigns_at = |j: usize| -> bool {
        let rest = &b[j.min(b.len())..];
        // The second byte of `==`, `!=`, `<=`, `>=` compares.
        if rest.first() == Some(&b'=') && j > 0 && b"=!<>".contains(&b[j - 1]) {
            return false;
        }
        if rest.starts_with(b"++") || rest.starts_with(b"--") {
            return true;
        }
        if rest.starts_with(b"<<=") || rest.starts_with(b">>=") {
            return true;
        }
        match rest {
            [b'=', next, ..] => *next != b'=',
            [b'=', ..] => true,
            [op, b'=', ..] => b"+-*/%&^|".contains(op),
            _ => false,
        }
    };
    let mut assigns_somewhere = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if (c.is_ascii_alphabetic() || c == b'_') && (i == 0 || !word(b[i - 1])) {
            let end = (i..b.len()).find(|&j| !word(b[j])).unwrap_or(b.len());
            let name = &expr[i..end];
            // After the name (and a subscript of it), an assignment operator;
            // before it, `++` or `--`.
            let mut after = skip_blank(end);
            if b.get(after) == Some(&b'[') {
                let mut depth = 0usize;
                while after < b.len() {
                    match b[after] {
                        b'[' => depth += 1,
                        b']' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    after += 1;
                }
                after = skip_blank(after + 1);
            }
            let before = expr[..i].trim_end();
            let prefixed = before.ends_with("++") || before.ends_with("--");
            let dollar = before.ends_with('$') || before.ends_with("${");
            if (assigns_at(after) || prefixed) && !dollar {
                assigns_somewhere = true;
                if !out.integers.iter().any(|n| n == name) {
                    out.integers.push(name.to_string());
                }
            } else if assigns_at(after) || prefixed {
                assigns_somewhere = true;
            }
            i = end;
            continue;
        }
        if assigns_at(i) {
            assigns_somewhere = true;
        }
        i += 1;
    }
    if assigns_somewhere && expr.contains('$') {
        out.any = true;
    }
}

/// Add what expanding the raw word `raw` assigns to `out`: the arithmetic
/// of its `$(( ))`, `$[ ]`, subscripts and substring offsets, and the
/// names of its `${x:=word}` and `${x=word}`. Quotes are not followed: a
/// name in single quotes counts too, which only ever forgets more.
pub fn assigned_in_word(raw: &str, out: &mut Assigned) {
    if !raw.contains('$') {
        return;
    }
    for part in arithmetic_parts(raw) {
        arithmetic_assigned(part, out);
    }
    let mut rest = raw;
    while let Some(i) = rest.find("${") {
        rest = &rest[i + 2..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..end];
        let after = &rest[end..];
        if !name.is_empty()
            && (after.starts_with(":=") || after.starts_with('='))
            && !out.defaults.iter().any(|n| n == name)
        {
            out.defaults.push(name.to_string());
        }
    }
}

/// The arithmetic parts of a raw word: `$(( … ))`, `$[ … ]`, an array
/// subscript `${name[ … ]}` and a substring's offset and length `${name: … }`.
pub fn arithmetic_parts(raw: &str) -> Vec<&str> {
    let b = raw.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    // The end of a part opened at `from`, closed by `close` at depth 0.
    let span = |from: usize, open: u8, close: u8| -> usize {
        let mut depth = 0usize;
        let mut j = from;
        while j < b.len() {
            if b[j] == open {
                depth += 1;
            } else if b[j] == close {
                if depth == 0 {
                    return j;
                }
                depth -= 1;
            }
            j += 1;
        }
        b.len()
    };
    while i < b.len() {
        if b[i..].starts_with(b"$((") {
            let end = span(i + 3, b'(', b')');
            out.push(&raw[i + 3..end]);
            i = end;
        } else if b[i..].starts_with(b"$[") {
            let end = span(i + 2, b'[', b']');
            out.push(&raw[i + 2..end]);
            i = end;
        } else if b[i..].starts_with(b"${") {
            let name_end = (i + 2..b.len())
                .find(|&j| !(b[j].is_ascii_alphanumeric() || b[j] == b'_'))
                .unwrap_or(b.len());
            match b.get(name_end) {
                Some(b'[') => {
                    let end = span(name_end + 1, b'[', b']');
                    out.push(&raw[name_end + 1..end]);
                    i = end;
                }
                // `${x:-w}`, `${x:=w}`, `${x:?w}`, `${x:+w}` are not arithmetic.
                Some(b':') if !matches!(b.get(name_end + 1), Some(b'-' | b'=' | b'?' | b'+')) => {
                    let end = span(name_end + 1, b'{', b'}');
                    out.push(&raw[name_end + 1..end]);
                    i = end;
                }
                _ => i += 2,
            }
        } else {
            i += 1;
        }
    }
    out
}

pub fn options() -> ParserOptions {
    ParserOptions::default()
}

/// Expand a raw word (as the parser gives it, quotes included).
pub fn expand(raw: &str, vars: &Vars, home: &str) -> Expansion {
    // Most words are plain or simply quoted: nothing in them expands.
    if let Some(value) = super::plain::literal_word(raw) {
        return Expansion::Known {
            values: vec![value],
            glob: false,
        };
    }
    expand_parsed(raw, vars, home)
}

/// [`expand`] without the shortcut for literal words: brush-parser reads the word.
pub(super) fn expand_parsed(raw: &str, vars: &Vars, home: &str) -> Expansion {
    if let Some(why) = executes(raw) {
        return Expansion::Executes { why };
    }
    if let Some(name) = arithmetic_parts(raw)
        .into_iter()
        .find_map(|part| arithmetic_unseen(part, vars))
    {
        return Expansion::Executes {
            why: unseen_why(&name, raw),
        };
    }
    let texts = match brace_expand(raw) {
        Some(t) => t,
        None => {
            return Expansion::Unknown {
                shown: raw.to_string(),
                why: format!("brace expansion of `{}` gives too many words", short(raw)),
            }
        }
    };
    let mut values = Vec::new();
    let mut glob = false;
    for text in &texts {
        let pieces = match word::parse(text, &options()) {
            Ok(p) => p,
            Err(_) => {
                return Expansion::Unknown {
                    shown: raw.to_string(),
                    why: format!("the word `{raw}` cannot be parsed"),
                }
            }
        };
        let mut acc = vec![String::new()];
        if let Err(e) = expand_pieces(text, &pieces, false, vars, home, &mut acc, &mut glob) {
            return e;
        }
        values.extend(acc);
        if values.len() > MAX_ALTERNATIVES {
            return Expansion::Unknown {
                shown: raw.to_string(),
                why: format!("`{raw}` has too many possible values"),
            };
        }
    }
    Expansion::Known { values, glob }
}

/// Does the raw word contain something that runs code when expanded?
fn executes(raw: &str) -> Option<String> {
    // Inside single quotes nothing expands; elsewhere `$(`, `` ` ``, `<(`, `>(`
    // run a command. Scanning the raw text (rather than only the parsed pieces)
    // also catches substitutions nested in `${x:-$(…)}` and in `$(( ))`.
    let bytes = raw.as_bytes();
    let mut i = 0;
    let mut in_single = false;
    let mut in_double = false;
    let mut in_ansi = false;
    while i < bytes.len() {
        let c = bytes[i];
        if in_single {
            if c == b'\'' {
                in_single = false;
            }
            i += 1;
            continue;
        }
        if in_ansi {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == b'\'' {
                in_ansi = false;
            }
            i += 1;
            continue;
        }
        match c {
            b'\\' => {
                i += 2;
                continue;
            }
            b'\'' if !in_double => {
                in_single = true;
            }
            b'"' => in_double = !in_double,
            b'$' if !in_double && bytes.get(i + 1) == Some(&b'\'') => {
                in_ansi = true;
                i += 2;
                continue;
            }
            b'$' if bytes.get(i + 1) == Some(&b'(') => {
                if bytes.get(i + 2) == Some(&b'(') {
                    // Arithmetic: runs code only if it nests a substitution,
                    // which the loop finds on its own.
                } else {
                    return Some(format!("`{}` contains a command substitution", short(raw)));
                }
            }
            b'`' => {
                return Some(format!("`{}` contains a command substitution", short(raw)));
            }
            b'<' | b'>' if !in_double && bytes.get(i + 1) == Some(&b'(') => {
                return Some(format!("`{}` contains a process substitution", short(raw)));
            }
            b'@' if bytes.get(i + 1) == Some(&b'P') && raw[..i].contains("${") => {
                return Some(format!(
                    "`{}` uses prompt expansion, which can run commands",
                    short(raw)
                ));
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Why arithmetic over `name` (in `text`) is more than the gate analyses.
pub fn unseen_why(name: &str, text: &str) -> String {
    format!(
        "the arithmetic in `{}` reads {name}, whose value the gate cannot see; bash evaluates it as an expression, where an array subscript runs a command. Hint: check the value first (`case $x in *[!0-9]*) exit 1;; esac`) in a script the policy allows, or compute without it",
        short(text)
    )
}

pub fn short(s: &str) -> String {
    const MAX: usize = 60;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        let cut: String = s.chars().take(MAX).collect();
        format!("{cut}…")
    }
}

/// More `{` than this in one word is not expanded (→ unknown): brush-parser's
/// brace parser backtracks exponentially on unmatched braces (found by fuzzing).
pub const MAX_BRACES_PER_WORD: usize = 5;

/// Brace-expand a raw word; `None` if it would give too many words.
fn brace_expand(raw: &str) -> Option<Vec<String>> {
    if !raw.contains('{') {
        return Some(vec![raw.to_string()]);
    }
    if raw.matches('{').count() > MAX_BRACES_PER_WORD {
        return None;
    }
    let parsed = match word::parse_brace_expansions(raw, &options()) {
        Ok(Some(p)) => p,
        _ => return Some(vec![raw.to_string()]),
    };
    let mut out = vec![String::new()];
    for item in &parsed {
        out = append_brace(out, item)?;
    }
    Some(out)
}

fn append_brace(prefixes: Vec<String>, item: &word::BraceExpressionOrText) -> Option<Vec<String>> {
    use word::{BraceExpressionMember as M, BraceExpressionOrText as B};
    match item {
        B::Text(t) => Some(prefixes.into_iter().map(|p| p + t).collect()),
        B::Expr(members) => {
            let mut alts: Vec<String> = Vec::new();
            for m in members {
                match m {
                    M::NumberSequence {
                        start,
                        end,
                        increment,
                    } => {
                        let step = increment.unsigned_abs().max(1);
                        let count = start.abs_diff(*end) / step + 1;
                        if count > MAX_ALTERNATIVES as u64 {
                            return None;
                        }
                        let mut v = *start;
                        for _ in 0..count {
                            alts.push(v.to_string());
                            v = if end >= start {
                                v.saturating_add(step as i64)
                            } else {
                                v.saturating_sub(step as i64)
                            };
                        }
                    }
                    M::CharSequence { start, end, .. } => {
                        let (a, b) = (*start as u32, *end as u32);
                        let (lo, hi) = (a.min(b), a.max(b));
                        if hi - lo > MAX_ALTERNATIVES as u32 {
                            return None;
                        }
                        alts.extend((lo..=hi).filter_map(char::from_u32).map(String::from));
                    }
                    M::Child(children) => {
                        let mut sub = vec![String::new()];
                        for c in children {
                            sub = append_brace(sub, c)?;
                        }
                        alts.extend(sub);
                    }
                }
            }
            let mut out = Vec::new();
            for p in &prefixes {
                for a in &alts {
                    out.push(format!("{p}{a}"));
                    if out.len() > MAX_ALTERNATIVES {
                        return None;
                    }
                }
            }
            Some(out)
        }
    }
}

/// An unquoted pattern: `*`, `?`, or a `[` closed by a later `]`.
fn is_glob(t: &str) -> bool {
    t.contains(['*', '?']) || t.find('[').is_some_and(|i| t[i + 1..].contains(']'))
}

fn append_all(acc: &mut [String], s: &str) {
    for a in acc.iter_mut() {
        a.push_str(s);
    }
}

#[allow(clippy::too_many_arguments)]
fn expand_pieces(
    text: &str,
    pieces: &[WordPieceWithSource],
    quoted: bool,
    vars: &Vars,
    home: &str,
    acc: &mut Vec<String>,
    glob: &mut bool,
) -> Result<(), Expansion> {
    for p in pieces {
        let raw = text.get(p.start_index..p.end_index).unwrap_or("");
        match &p.piece {
            WordPiece::Text(t) => {
                if !quoted && is_glob(t) {
                    *glob = true;
                }
                append_all(acc, t);
            }
            WordPiece::SingleQuotedText(t) => append_all(acc, t),
            WordPiece::AnsiCQuotedText(t) => append_all(acc, &ansi_c_unescape(t)),
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                expand_pieces(text, inner, true, vars, home, acc, glob)?;
            }
            WordPiece::EscapeSequence(s) => {
                let rest: String = s.chars().skip(1).collect();
                append_all(acc, &rest);
            }
            WordPiece::TildeExpansion(t) => match t {
                TildeExpr::Home => append_all(acc, home),
                _ => {
                    return Err(Expansion::Unknown {
                        shown: raw.to_string(),
                        why: format!("`{raw}` names a directory only known at run time"),
                    })
                }
            },
            WordPiece::ParameterExpansion(expr) => {
                let name = match expr {
                    ParameterExpr::Parameter {
                        parameter: Parameter::Named(n),
                        indirect: false,
                    } => Some(n.as_str()),
                    _ => None,
                };
                let values = match name {
                    Some("HOME") if vars.get("HOME").is_none() => Some(vec![home.to_string()]),
                    Some(n) => vars.get(n).cloned(),
                    None => None,
                };
                let Some(values) = values else {
                    return Err(Expansion::Unknown {
                        shown: raw.to_string(),
                        why: format!("`{raw}` is only known at run time"),
                    });
                };
                if !quoted && values.iter().any(|v| v.contains(char::is_whitespace)) {
                    // Unquoted, the value would be split into several words.
                    return Err(Expansion::Unknown {
                        shown: raw.to_string(),
                        why: format!("unquoted `{raw}` splits into several words"),
                    });
                }
                // Unquoted, the value's `*`, `?` and `[…]` are a pattern too
                // (`x=.git/c?nfig; tee -a $x`).
                if !quoted && values.iter().any(|v| is_glob(v)) {
                    *glob = true;
                }
                let mut next = Vec::new();
                for a in acc.iter() {
                    for v in &values {
                        next.push(format!("{a}{v}"));
                    }
                }
                if next.len() > MAX_ALTERNATIVES {
                    return Err(Expansion::Unknown {
                        shown: raw.to_string(),
                        why: format!("`{raw}` has too many possible values"),
                    });
                }
                *acc = next;
            }
            WordPiece::CommandSubstitution(_) | WordPiece::BackquotedCommandSubstitution(_) => {
                return Err(Expansion::Executes {
                    why: format!("`{}` contains a command substitution", short(raw)),
                })
            }
            WordPiece::ArithmeticExpression(_) => {
                return Err(Expansion::Unknown {
                    shown: raw.to_string(),
                    why: format!("`{raw}` is computed at run time"),
                })
            }
        }
    }
    Ok(())
}

/// Decode the body of `$'…'` as bash does.
pub fn ansi_c_unescape(s: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c != '\\' || i + 1 >= chars.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let e = chars[i + 1];
        i += 2;
        let simple = match e {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            '?' => Some('?'),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            continue;
        }
        let take_digits = |i: &mut usize, max: usize, radix: u32| -> Option<u32> {
            let start = *i;
            while *i < chars.len() && *i - start < max && chars[*i].is_digit(radix) {
                *i += 1;
            }
            if *i == start {
                return None;
            }
            let digits: String = chars[start..*i].iter().collect();
            u32::from_str_radix(&digits, radix).ok()
        };
        match e {
            'x' => match take_digits(&mut i, 2, 16) {
                Some(v) => out.push(char::from_u32(v).unwrap_or('\u{fffd}')),
                None => out.push_str("\\x"),
            },
            'u' => match take_digits(&mut i, 4, 16) {
                Some(v) => out.push(char::from_u32(v).unwrap_or('\u{fffd}')),
                None => out.push_str("\\u"),
            },
            'U' => match take_digits(&mut i, 8, 16) {
                Some(v) => out.push(char::from_u32(v).unwrap_or('\u{fffd}')),
                None => out.push_str("\\U"),
            },
            'c' => {
                if i < chars.len() {
                    let ctl = (chars[i] as u32) & 0x1f;
                    out.push(char::from_u32(ctl).unwrap_or('\u{fffd}'));
                    i += 1;
                }
            }
            '0'..='7' => {
                i -= 1;
                let v = take_digits(&mut i, 3, 8).unwrap_or(0);
                out.push(char::from_u32(v & 0xff).unwrap_or('\u{fffd}'));
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(raw: &str) -> String {
        match expand(raw, &Vars::default(), "/home/me") {
            Expansion::Known { values, .. } => values.join("|"),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn quotes_and_escapes_resolve_like_bash() {
        assert_eq!(one("c''url"), "curl");
        assert_eq!(one("\"cu\"rl"), "curl");
        assert_eq!(one("\\curl"), "curl");
        assert_eq!(one("$'\\x63url'"), "curl");
        assert_eq!(one("$'\\143url'"), "curl");
        assert_eq!(one("'a b'"), "a b");
        assert_eq!(one("~/x"), "/home/me/x");
        assert_eq!(one("$HOME/x"), "/home/me/x");
        assert_eq!(one("{a,b}c"), "ac|bc");
    }

    #[test]
    fn arithmetic_names_what_it_assigns() {
        let names = |expr: &str| {
            let mut a = Assigned::default();
            arithmetic_assigned(expr, &mut a);
            (a.integers, a.any)
        };
        assert_eq!(names("x=5"), (vec!["x".to_string()], false));
        assert_eq!(names(" x += 1, y"), (vec!["x".to_string()], false));
        assert_eq!(names("x++ + --y"), (vec!["x".into(), "y".into()], false));
        assert_eq!(names("a[i=1] <<= 2"), (vec!["a".into(), "i".into()], false));
        assert_eq!(
            names("x == 1 || y != 2 || z <= 3 || w >= 4"),
            (vec![], false)
        );
        assert_eq!(names("y = x + 1"), (vec!["y".to_string()], false));
        assert!(names("$n=1").1, "a name from a value may be any");
        assert!(names("${n}++").1);
        assert!(!names("$n + 1").1);
        let mut a = Assigned::default();
        assigned_in_word("${x:=/etc}${y=1}${z:-w}$((i++))", &mut a);
        assert_eq!(a.defaults, ["x", "y"]);
        assert_eq!(a.integers, ["i"]);
    }

    #[test]
    fn substitutions_are_never_known() {
        assert!(matches!(
            expand("$(curl x)", &Vars::default(), "/"),
            Expansion::Executes { .. }
        ));
        assert!(matches!(
            expand("\"`id`\"", &Vars::default(), "/"),
            Expansion::Executes { .. }
        ));
        assert!(matches!(
            expand("${x:-$(id)}", &Vars::default(), "/"),
            Expansion::Executes { .. }
        ));
        assert!(matches!(
            expand("'$(id)'", &Vars::default(), "/"),
            Expansion::Known { .. }
        ));
        assert!(matches!(
            expand("$X", &Vars::default(), "/"),
            Expansion::Unknown { .. }
        ));
    }
}
