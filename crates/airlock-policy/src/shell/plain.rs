//! The plain subset of bash, read without brush-parser.
//!
//! Most of what agents send is words joined by `&&`, `;` and `|`, with a few
//! quoted arguments. brush-parser's PEG grammar reads such a line several
//! times (every word is first tried as an assignment), which made it most of
//! the gate's cost. A line made only of the shapes below is read here instead,
//! into the very tree brush-parser would build, and walked by the same code;
//! anything else (a byte outside these shapes, a reserved word, an operator
//! out of place) goes to the real parser. The differential tests in
//! `shell::tests` and below hold the two readings equal.
//!
//! The shapes:
//! - a plain byte: a letter, digit, or one of `-_./=:,+@%`;
//! - `'…'` holding anything but `'` and control characters;
//! - `"…"` holding anything but `"`, `$`, `` ` ``, `\`, `!` and control
//!   characters, so nothing inside expands;
//! - a word: one or more of those, with nothing between them;
//! - blanks (space, tab) between words and around operators;
//! - the operators `&&`, `||`, `;` and `|`, each between two commands.
//!
//! No shape expands, globs or splits, so a word's value is its text with the
//! quotes taken off ([`literal_word`]).

use brush_parser::ast;

/// Reserved words of bash: as the first word they start a compound or a
/// pipeline modifier, so such a command is never read here.
const RESERVED: &[&str] = &[
    "!", "[[", "]]", "{", "}", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for",
    "function", "if", "in", "select", "then", "time", "until", "while",
];

fn plain_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'_' | b'.' | b'/' | b'=' | b':' | b',' | b'+' | b'@' | b'%'
        )
}

/// A character inside quotes that stays literal there. Control characters
/// (newline among them) are left to the parser.
fn quoted_char(c: char, quote: char) -> bool {
    if c.is_control() && c != '\t' {
        return false;
    }
    match quote {
        '\'' => c != '\'',
        _ => !matches!(c, '"' | '$' | '`' | '\\' | '!'),
    }
}

/// The length of the word at the start of `text` (0 if none starts there).
fn word_len(text: &str) -> Option<usize> {
    let mut chars = text.char_indices();
    let mut end = 0;
    while let Some((i, c)) = chars.next() {
        match c {
            '\'' | '"' => {
                let close = loop {
                    match chars.next() {
                        Some((j, q)) if q == c => break j,
                        Some((_, q)) if quoted_char(q, c) => {}
                        // Unterminated, or a character that means something here.
                        _ => return None,
                    }
                };
                end = close + 1;
            }
            c if c.is_ascii() && plain_byte(c as u8) => end = i + 1,
            _ => break,
        }
    }
    Some(end)
}

/// The value of a word made only of the shapes above: its text, unquoted.
pub fn literal_word(raw: &str) -> Option<String> {
    if raw.is_empty() || word_len(raw)? != raw.len() {
        return None;
    }
    if !raw.contains(['\'', '"']) {
        return Some(raw.to_string());
    }
    let mut value = String::with_capacity(raw.len());
    let mut quote = None;
    for c in raw.chars() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => value.push(c),
        }
    }
    Some(value)
}

/// A plain line of one command: its words, which need no expansion at all
/// (no quotes, no operators). The analyser takes these straight to the
/// invocation, skipping even the tree.
pub fn words(text: &str) -> Option<std::str::SplitAsciiWhitespace<'_>> {
    let plain = text
        .bytes()
        .all(|b| plain_byte(b) || b == b' ' || b == b'\t');
    if !plain {
        return None;
    }
    let words = text.split_ascii_whitespace();
    if !command_word(words.clone().next()?) {
        return None;
    }
    Some(words)
}

/// Whether `word` may start a simple command read here: `%1` is a job
/// reference, `a=b` an assignment, `if` a reserved word (bash knows reserved
/// words only unquoted, but a quoted one is left to the parser all the same).
fn command_word(word: &str) -> bool {
    let bare = word.trim_matches(['\'', '"']);
    !(word.contains('=') || word.starts_with('%') || RESERVED.contains(&bare))
}

#[derive(Debug, PartialEq)]
enum Token<'t> {
    Word(&'t str),
    And,
    Or,
    Pipe,
    Semi,
}

fn tokens(text: &str) -> Option<Vec<Token<'_>>> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches([' ', '\t']);
        let Some(first) = rest.bytes().next() else {
            return Some(out);
        };
        let (token, len) = match (first, rest.as_bytes().get(1)) {
            (b'&', Some(b'&')) => (Token::And, 2),
            (b'|', Some(b'|')) => (Token::Or, 2),
            // `|&` pipes stderr too: left to the parser.
            (b'|', Some(b'&')) => return None,
            (b'|', _) => (Token::Pipe, 1),
            (b';', _) => (Token::Semi, 1),
            _ => match word_len(rest)? {
                0 => return None,
                n => (Token::Word(&rest[..n]), n),
            },
        };
        out.push(token);
        rest = &rest[len..];
    }
}

fn word(text: &str) -> ast::Word {
    ast::Word {
        value: text.to_string(),
        loc: None,
    }
}

/// Read a plain line into the tree brush-parser would give for it; `None`
/// when the line is not made only of the shapes above.
pub fn program(text: &str) -> Option<ast::Program> {
    let tokens = tokens(text)?;
    let mut items = Vec::new();
    let mut and_or: Option<ast::AndOrList> = None;
    // The operator that joins the pipeline being read to `and_or`.
    let mut joiner = None;
    let mut seq: Vec<ast::Command> = Vec::new();
    let mut words: Vec<&str> = Vec::new();
    // Closes the simple command being read; false if there is none.
    fn close_command(words: &mut Vec<&str>, seq: &mut Vec<ast::Command>) -> bool {
        let Some((first, rest)) = words.split_first() else {
            return false;
        };
        if !command_word(first) {
            return false;
        }
        let suffix = (!rest.is_empty()).then(|| {
            ast::CommandSuffix(
                rest.iter()
                    .map(|w| ast::CommandPrefixOrSuffixItem::Word(word(w)))
                    .collect(),
            )
        });
        seq.push(ast::Command::Simple(ast::SimpleCommand {
            prefix: None,
            word_or_name: Some(word(first)),
            suffix,
        }));
        words.clear();
        true
    }
    let close_pipeline = |seq: &mut Vec<ast::Command>,
                          and_or: &mut Option<ast::AndOrList>,
                          joiner: Option<&Token>| {
        let pipeline = ast::Pipeline {
            timed: None,
            bang: false,
            seq: std::mem::take(seq),
        };
        match (and_or.as_mut(), joiner) {
            (None, _) => {
                *and_or = Some(ast::AndOrList {
                    first: pipeline,
                    additional: Vec::new(),
                })
            }
            (Some(list), Some(Token::And)) => list.additional.push(ast::AndOr::And(pipeline)),
            (Some(list), _) => list.additional.push(ast::AndOr::Or(pipeline)),
        }
    };
    for token in &tokens {
        match token {
            Token::Word(w) => words.push(w),
            Token::Pipe => {
                if !close_command(&mut words, &mut seq) {
                    return None;
                }
            }
            Token::And | Token::Or => {
                if !close_command(&mut words, &mut seq) {
                    return None;
                }
                close_pipeline(&mut seq, &mut and_or, joiner);
                joiner = Some(token);
            }
            Token::Semi => {
                if !close_command(&mut words, &mut seq) {
                    return None;
                }
                close_pipeline(&mut seq, &mut and_or, joiner.take());
                let list = and_or.take()?;
                items.push(ast::CompoundListItem(
                    list,
                    ast::SeparatorOperator::Sequence,
                ));
            }
        }
    }
    // A line ends with a command: a trailing operator is left to the parser.
    if !close_command(&mut words, &mut seq) {
        return None;
    }
    close_pipeline(&mut seq, &mut and_or, joiner);
    items.push(ast::CompoundListItem(
        and_or?,
        ast::SeparatorOperator::Sequence,
    ));
    Some(ast::Program {
        complete_commands: vec![ast::CompoundList(items)],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_refuses_what_needs_the_parser() {
        for text in [
            "a=b ls", "if true", "time ls", "%1", "ls $HOME", "ls ~", "ls *", "ls 'x'", "ls \"x\"",
            "ls\nrm", "ls;rm", "ls|rm", "ls&", "ls >x", "ls #x", "ls \\x", "ls (x)", "ls {a,b}",
            "ls é", "", "   ",
        ] {
            assert!(words(text).is_none(), "{text:?}");
        }
        let w: Vec<&str> = words(" grep\t-n  main src/main.rs ")
            .expect("plain")
            .collect();
        assert_eq!(w, ["grep", "-n", "main", "src/main.rs"]);
    }

    #[test]
    fn program_refuses_what_needs_the_parser() {
        for text in [
            "ls &",
            "ls & rm",
            "ls |& rm",
            "ls ;",
            "; ls",
            "ls && && rm",
            "ls &&",
            "| ls",
            "ls ||| rm",
            "ls ;; rm",
            "a=1 ls",
            "ls | if true",
            "ls; time rm",
            "ls 'x",
            "ls \"x",
            "ls \"$x\"",
            "ls \"`x`\"",
            "ls \"\\x\"",
            "ls \"!x\"",
            "ls 'a\nb'",
            "ls\nrm",
            "ls > x",
            "ls 2>&1",
            "ls $(x)",
            "ls *",
            "ls ~",
            "ls {a,b}",
            "ls #c",
            "ls é",
            "",
            "  ",
            "'if' x",
            "ls (x)",
            "ls x\\ y",
        ] {
            assert!(program(text).is_none(), "{text:?}");
        }
        assert!(program("ls -la src && cat 'a b' | grep \"x y\" ; git status || true").is_some());
        assert!(program("a&&b||c|d;e").is_some());
    }

    #[test]
    fn literal_word_takes_the_quotes_off() {
        assert_eq!(literal_word("c''url").as_deref(), Some("curl"));
        assert_eq!(literal_word("\"cu\"rl").as_deref(), Some("curl"));
        assert_eq!(literal_word("'a \"b\" $c'").as_deref(), Some("a \"b\" $c"));
        assert_eq!(literal_word("\"it's *\"").as_deref(), Some("it's *"));
        assert_eq!(literal_word("''").as_deref(), Some(""));
        assert_eq!(literal_word("\"héllo\"").as_deref(), Some("héllo"));
        for raw in [
            "", "a b", "$x", "\"$x\"", "~", "a*", "'a", "x\\y", "é", "a;b",
        ] {
            assert_eq!(literal_word(raw), None, "{raw:?}");
        }
    }

    /// Every word [`literal_word`] reads gets the same value from the full
    /// expansion, which parses it with brush-parser.
    #[test]
    fn literal_word_equals_the_full_expansion() {
        use super::super::words::{expand_parsed, Expansion, Vars};
        const PIECES: &[&str] = &[
            "a",
            "-n",
            "x=y",
            "src/main.rs",
            "'a b'",
            "''",
            "\"\"",
            "\"fn main\"",
            "'$x'",
            "'`x`'",
            "\"*\"",
            "'*'",
            "\"~\"",
            "'~/x'",
            "\"a'b\"",
            "'a\"b'",
            "\"{a,b}\"",
            "'{a,b}'",
            "\"<(x)\"",
            "'$(x)'",
            "\"é\"",
            "\"a\tb\"",
            "\"#x\"",
            "'\\'",
            "%",
            "@",
            "\";|&\"",
            "\"[x]\"",
            "'?'",
        ];
        let mut next = super::super::tests::xorshift(0x2545_f491_4f6c_dd1d);
        let mut read = 0;
        for _ in 0..20_000 {
            let n = 1 + (next() % 4) as usize;
            let raw: String = (0..n)
                .map(|_| PIECES[(next() % PIECES.len() as u64) as usize])
                .collect();
            let Some(value) = literal_word(&raw) else {
                continue;
            };
            read += 1;
            let full = expand_parsed(&raw, &Vars::default(), "/home/me");
            assert_eq!(
                full,
                Expansion::Known {
                    values: vec![value],
                    glob: false
                },
                "{raw:?}"
            );
        }
        assert!(read > 10_000, "only {read} words were read here");
    }
}
