//! What is refused before brush-parser sees it.
//!
//! brush-parser 0.4 is a real bash parser, but hostile text can make it panic,
//! backtrack exponentially or grow its memory without bound (all found by
//! fuzzing; each shape below has a regression seed in `fuzz/seeds/shell_decide`
//! and a case in `tests/decisions.rs`). Everything refused here gets
//! `on_unknown`: none of these shapes is an everyday command, and a string the
//! gate cannot parse safely is a string whose effect it cannot know.

use super::MAX_NESTING;

/// Why `text` must not be given to the parser, if it must not.
pub fn refuse_before_parsing(text: &str) -> Option<String> {
    if nesting_depth(text) > MAX_NESTING {
        return Some(format!(
            "the command is nested more than {MAX_NESTING} levels deep"
        ));
    }
    if let Some(c) = control_character(text) {
        return Some(format!(
            "the shell text contains the control character U+{:04X}; send plain text (tabs and newlines are fine)",
            c as u32
        ));
    }
    if let Some(why) = parser_hazard(text) {
        return Some(why);
    }
    if oversized_number(text) {
        return Some("the command holds a number too large to analyse".into());
    }
    None
}

/// A control character other than tab and newline. Bash would take most of them
/// literally, but brush-parser 0.4 can loop without bound on some (`<<\r [t`,
/// found by fuzzing), and no command an agent means to send contains them.
pub fn control_character(text: &str) -> Option<char> {
    text.chars()
        .find(|c| (c.is_control() && *c != '\t' && *c != '\n') && *c != '\u{7f}')
}

/// Most `((` (arithmetic or nested subshells) in one string.
pub const MAX_DOUBLE_PARENS: usize = 6;
/// Deepest nesting of `(` in one string.
pub const MAX_PAREN_DEPTH: usize = 12;

/// Shapes on which brush-parser 0.4 backtracks exponentially (found by
/// fuzzing: twelve `((:` took 5 s, twenty-four unmatched `(` took 7 s). They are
/// refused before parsing; no everyday command comes near these bounds.
fn parser_hazard(text: &str) -> Option<String> {
    if text.matches("((").count() > MAX_DOUBLE_PARENS {
        return Some(format!(
            "the command has more than {MAX_DOUBLE_PARENS} `((`, more than the gate analyses"
        ));
    }
    // A here-document inside a command substitution can make brush's tokenizer
    // grow without bound (found by fuzzing). A command substitution is never
    // allowed anyway, so nothing allowable is lost by refusing the pair early.
    let has_heredoc = text.match_indices("<<").any(|(k, _)| {
        text.as_bytes().get(k + 2) != Some(&b'<') && (k == 0 || text.as_bytes()[k - 1] != b'<')
    });
    if has_heredoc && (text.contains("$(") || text.contains('`')) {
        return Some(
            "a here-document together with a command substitution is more than the gate analyses"
                .into(),
        );
    }
    if let Some(why) = heredoc_delimiter_hazard(text) {
        return Some(why.into());
    }
    let mut depth: usize = 0;
    for b in text.bytes() {
        match b {
            b'(' => {
                depth += 1;
                if depth > MAX_PAREN_DEPTH {
                    return Some(format!(
                        "the command nests `(` more than {MAX_PAREN_DEPTH} deep, more than the gate analyses"
                    ));
                }
            }
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// Numbers the parser would overflow on (brace sequences, `~N`, fd numbers).
fn oversized_number(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let len = i - start;
            if len >= 19 || (len >= 10 && matches!(b.get(i), Some(b'<' | b'>'))) {
                return true;
            }
        } else {
            i += 1;
        }
    }
    false
}

/// A conservative bound on syntactic nesting, checked before parsing so that a
/// hostile string cannot exhaust the parser's stack.
pub fn nesting_depth(text: &str) -> usize {
    let mut depth: usize = 0;
    let mut max = 0;
    for b in text.bytes() {
        match b {
            b'(' | b'{' | b'[' | b'`' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let mut kw_depth: usize = 0;
    for w in text.split(|c: char| c.is_whitespace() || c == ';' || c == '&' || c == '|') {
        match w {
            "if" | "while" | "until" | "for" | "case" | "select" | "function" => {
                kw_depth += 1;
                max = max.max(kw_depth);
            }
            "fi" | "done" | "esac" => kw_depth = kw_depth.saturating_sub(1),
            _ => {}
        }
    }
    max.max(text.matches("$((").count())
}
/// A here-document whose delimiter brush-parser's tokenizer cannot end on.
///
/// * A delimiter that does not start like a word (`<<- (`, `<< )`): memory grows
///   without bound.
/// * A delimiter that is empty once its quotes are removed (`<<''`, `<<""`,
///   `<<$''`, `<<\ `): the tokenizer ends the body at every position and never
///   advances, so memory grows without bound (found by fuzzing: the five bytes
///   `<<'' `). Bash would end such a body at the first empty line.
///
/// The scan is not quote-aware: a `<<` inside quotes is judged too. That can only
/// refuse (`echo "<<''"`), never allow.
fn heredoc_delimiter_hazard(text: &str) -> Option<&'static str> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(pos) = text[i..].find("<<") {
        let mut j = i + pos + 2;
        if bytes.get(j) == Some(&b'<') {
            i = j + 1; // `<<<` is a here-string
            continue;
        }
        if bytes.get(j) == Some(&b'-') {
            j += 1;
        }
        while matches!(bytes.get(j), Some(b' ' | b'\t')) {
            j += 1;
        }
        let rest = &bytes[j..];
        match rest.first() {
            Some(c)
                if c.is_ascii_alphanumeric() || matches!(c, b'_' | b'\'' | b'"' | b'\\' | b'$') => {
            }
            _ => return Some(
                "a here-document delimiter that is not a plain word is more than the gate analyses",
            ),
        }
        let empty = [&b"''"[..], b"\"\"", b"$''", b"$\"\""]
            .iter()
            .any(|e| rest.starts_with(e))
            || (rest.first() == Some(&b'\\')
                && matches!(
                    rest.get(1),
                    None | Some(
                        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')'
                    )
                ));
        if empty {
            return Some("a here-document with an empty delimiter is more than the gate analyses");
        }
        i = j;
    }
    None
}
