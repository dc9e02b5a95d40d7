//! What is refused before brush-parser sees it.
//!
//! brush-parser 0.4 is a real bash parser, but hostile text can make it panic,
//! backtrack exponentially or grow its memory without bound (all found by
//! fuzzing; each shape below has a regression seed in `fuzz/seeds/shell_decide`
//! and a case in `tests/decisions.rs`). Everything refused here gets
//! `on_unknown`: none of these shapes is an everyday command, and a string the
//! gate cannot parse safely is a string whose effect it cannot know.

use super::MAX_NESTING;

/// Which bytes a text holds, read in one pass, so that a guard whose shape
/// needs a byte the text lacks is skipped (most texts hold no `(`, `[`, `$`
/// or `<` at all).
struct Present([bool; 256]);

impl Present {
    fn of(text: &str) -> Present {
        let mut present = [false; 256];
        for b in text.bytes() {
            present[usize::from(b)] = true;
        }
        Present(present)
    }

    fn any(&self, bytes: &[u8]) -> bool {
        bytes.iter().any(|&b| self.0[usize::from(b)])
    }
}

/// Why `text` must not be given to the parser, if it must not.
pub fn refuse_before_parsing(text: &str) -> Option<String> {
    let present = Present::of(text);
    if nesting_depth_bounded(text, &present) > MAX_NESTING {
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
    if let Some(why) = parser_hazard(text, &present) {
        return Some(why);
    }
    if present.any(b"0123456789") && oversized_number(text) {
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

/// Most `case` more than `esac` in one string. brush-parser backtracks
/// exponentially over `case` statements left open (found by fuzzing: fifteen
/// took 5 s); bash rejects an unterminated `case` as a syntax error anyway.
pub const MAX_OPEN_CASES: usize = 3;

/// Most `[` more than `]` in one string. brush-parser's grammar backtracks on
/// every `[` that might open a subscript, a `$[…]` or a `[[ … ]]` and does not
/// close (found by fuzzing: 17 such took 3 s). Counted over the whole text,
/// quotes included: `echo "[[[[["` is refused too, which no everyday command
/// needs.
pub const MAX_UNMATCHED_BRACKETS: usize = 4;

/// Most `[` left open inside `${…}` expansions in one string. brush-parser's
/// expansion grammar backtracks exponentially on them, about fifteen times
/// longer for each (found by fuzzing: the four in `a[o${T[${T[}=${T[${T[>} }}`
/// took 9 s). Bash rejects such a word as a bad substitution, so no command that
/// runs is lost.
pub const MAX_OPEN_SUBSCRIPTS: usize = 1;

/// Most `${` that never close in one string. brush-parser backtracks
/// exponentially over nested unterminated expansions (found by fuzzing: 22 of
/// them took 15 s); bash rejects each as a bad substitution.
pub const MAX_OPEN_EXPANSIONS: usize = 2;

/// Most here-documents (`<<`, not `<<<`) opened on one line. Each is pending
/// until the lines after it close it, and brush-parser's tokenizer does work
/// for every pending one at each (112 500 on one line took 36 s of CPU before
/// it kept them in a queue; finding 10 of the audit review). Counted on the
/// raw text, quotes included, as the other bounds are; no script an agent
/// sends opens this many on one line.
pub const MAX_PENDING_HEREDOCS: usize = 256;

/// How many more `case` than `esac` words `text` holds, in one pass, and none
/// at all when there is no `case` (the gate's usual text).
fn open_cases(text: &str) -> usize {
    if !text.contains("case") {
        return 0;
    }
    let (cases, esacs) = text
        .split(|c: char| c.is_ascii_whitespace() || ";&|()".contains(c))
        .fold((0usize, 0usize), |(cases, esacs), w| match w {
            "case" => (cases + 1, esacs),
            "esac" => (cases, esacs + 1),
            _ => (cases, esacs),
        });
    cases.saturating_sub(esacs)
}

/// What is left open in a string's `${…}` expansions.
#[derive(Debug, Default, PartialEq, Eq)]
struct OpenExpansions {
    /// `[` still open when the `${` holding them closed, or at the end.
    subscripts: usize,
    /// `${` still open at the end.
    expansions: usize,
}

fn open_expansions(text: &str) -> OpenExpansions {
    // One frame per open brace: `Some(open [)` for `${`, `None` for a plain `{`
    // (a group or a brace expansion), which only absorbs its own `}`.
    let mut frames: Vec<Option<usize>> = Vec::new();
    let mut open = OpenExpansions::default();
    let mut scan = QuotedScan::new(text.as_bytes());
    while let Some((i, c, quote)) = scan.next() {
        // A quoted `]` closes nothing (`${T["]"`, found by fuzzing). `${` still
        // opens inside double quotes; nothing opens inside single quotes.
        if quote == Some(b'\'') || (quote.is_some() && matches!(c, b'[' | b']')) {
            continue;
        }
        match c {
            b'$' if text.as_bytes().get(i + 1) == Some(&b'{') => {
                frames.push(Some(0));
                scan.skip_to(i + 2);
            }
            b'{' => frames.push(None),
            b'}' => {
                if let Some(Some(brackets)) = frames.pop() {
                    open.subscripts += brackets;
                }
            }
            b'[' => {
                if let Some(Some(brackets)) = frames.last_mut() {
                    *brackets += 1;
                }
            }
            b']' => {
                if let Some(Some(brackets)) = frames.last_mut() {
                    *brackets = brackets.saturating_sub(1);
                }
            }
            _ => {}
        }
    }
    for brackets in frames.into_iter().flatten() {
        open.expansions += 1;
        open.subscripts += brackets;
    }
    open
}

/// Reads bytes the way bash's quoting does: yields each byte that is neither a
/// quote mark nor escaped by a backslash, with the quote it stands in
/// (`Some(b'\'')`, `Some(b'"')` or `None`). Inside single quotes a backslash
/// is literal and is yielded like any byte.
struct QuotedScan<'a> {
    bytes: &'a [u8],
    at: usize,
    quote: Option<u8>,
}

impl<'a> QuotedScan<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        QuotedScan {
            bytes,
            at: 0,
            quote: None,
        }
    }

    /// Goes on from `at` (past what the caller has read itself), in the same quote.
    fn skip_to(&mut self, at: usize) {
        self.at = at;
    }
}

impl Iterator for QuotedScan<'_> {
    type Item = (usize, u8, Option<u8>);

    fn next(&mut self) -> Option<Self::Item> {
        while let Some(&c) = self.bytes.get(self.at) {
            let i = self.at;
            self.at += 1;
            match self.quote {
                Some(q) if c == q => self.quote = None,
                Some(b'\'') => return Some((i, c, self.quote)),
                None if matches!(c, b'\'' | b'"') => self.quote = Some(c),
                _ if c == b'\\' => self.at += 1,
                _ => return Some((i, c, self.quote)),
            }
        }
        None
    }
}

/// Shapes on which brush-parser 0.4 backtracks exponentially (found by
/// fuzzing: twelve `((:` took 5 s, twenty-four unmatched `(` took 7 s). They are
/// refused before parsing; no everyday command comes near these bounds.
fn parser_hazard(text: &str, present: &Present) -> Option<String> {
    let parens = present.any(b"(");
    if parens && text.matches("((").count() > MAX_DOUBLE_PARENS {
        return Some(format!(
            "the command has more than {MAX_DOUBLE_PARENS} `((`, more than the gate analyses"
        ));
    }
    let brackets = present.any(b"[");
    if brackets && text.matches('[').count() > text.matches(']').count() + MAX_UNMATCHED_BRACKETS {
        return Some(format!(
            "the command has more than {MAX_UNMATCHED_BRACKETS} `[` without a `]`, more than the gate analyses"
        ));
    }
    if open_cases(text) > MAX_OPEN_CASES {
        return Some(format!(
            "the command has more than {MAX_OPEN_CASES} `case` without `esac`, more than the gate analyses"
        ));
    }
    // Without a `$`, no `${` opens, and only a `${` counts.
    let dollar = present.any(b"$");
    let open = if dollar {
        open_expansions(text)
    } else {
        OpenExpansions::default()
    };
    if open.subscripts > MAX_OPEN_SUBSCRIPTS {
        return Some(
            "the command has `${…}` expansions with unclosed `[`, more than the gate analyses"
                .into(),
        );
    }
    if open.expansions > MAX_OPEN_EXPANSIONS {
        return Some(format!(
            "the command has more than {MAX_OPEN_EXPANSIONS} `${{` without `}}`, more than the gate analyses"
        ));
    }
    if brackets && dollar && subscript_with_substitution(text) {
        return Some(
            "an array subscript (`name[`) together with `$(` (a command substitution, or `$((` beyond plain arithmetic) is more than the gate analyses"
                .into(),
        );
    }
    if present.any(b"<") {
        if let Some(why) = heredoc_hazard(text) {
            return Some(why);
        }
    }
    if parens {
        return paren_depth_hazard(text);
    }
    None
}

fn heredoc_hazard(text: &str) -> Option<String> {
    // A here-document inside a command substitution can make brush's tokenizer
    // grow without bound (found by fuzzing). A command substitution is never
    // allowed anyway, so nothing allowable is lost by refusing the pair early.
    let bytes = text.as_bytes();
    let heredoc = |k: usize| bytes.get(k + 2) != Some(&b'<') && (k == 0 || bytes[k - 1] != b'<');
    let has_heredoc = text.match_indices("<<").any(|(k, _)| heredoc(k));
    if has_heredoc && (text.contains("$(") || text.contains('`')) {
        return Some(
            "a here-document together with a command substitution is more than the gate analyses"
                .into(),
        );
    }
    if has_heredoc {
        let mut line_start = 0;
        for line in text.split('\n') {
            let opened = line
                .match_indices("<<")
                .filter(|(k, _)| heredoc(line_start + k))
                .count();
            if opened > MAX_PENDING_HEREDOCS {
                return Some(format!(
                    "a line opens more than {MAX_PENDING_HEREDOCS} here-documents, more than the gate analyses"
                ));
            }
            line_start += line.len() + 1;
        }
    }
    heredoc_delimiter_hazard(text).map(String::from)
}

fn paren_depth_hazard(text: &str) -> Option<String> {
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

/// A word that may be an array element assignment (`name[`) in a text that
/// also holds a command substitution, or an arithmetic `$((` that is more than
/// plain arithmetic.
///
/// brush-parser tries every word that starts `name[` as an assignment, several
/// times over as its grammar backtracks, and each try parses the subscript as
/// arithmetic; a `$(` there is parsed as a command, where every `(` may open
/// an extended glob or a subshell and both are tried, and a `$((` that fails as
/// arithmetic is tried again as `$(` and `(`. Found by fuzzing and hill
/// climbing: 150 bytes of `T[=$(+(+(@()(")"…` took 2 s in a release build, and
/// the same with `$((` 6 s; without the `T[` either takes 0.1 ms. A command
/// substitution is never allowed anyway, so the pair is refused before parsing.
///
/// The test is loose on purpose, so that no quoting can hide a `$(` from it: any
/// `[` after a name character, anywhere, with any `$(` that no backslash
/// escapes, quotes ignored. What it over-matches (`echo 'a[1]' '$(x)'`) holds
/// the text of a command substitution at least. `a[$((i+1))]=x` is not matched.
fn subscript_with_substitution(text: &str) -> bool {
    let bytes = text.as_bytes();
    let subscript = bytes
        .windows(2)
        .any(|w| (w[0].is_ascii_alphanumeric() || w[0] == b'_') && w[1] == b'[');
    subscript && unescaped_command_substitution(bytes)
}

/// A `$(` with no backslash before it, other than a `$((…))` of plain
/// arithmetic. Quotes are not followed: a backslash inside single quotes is
/// literal, but then so is the `$(` after it, so skipping what a backslash
/// escapes never hides an active `$(`.
fn unescaped_command_substitution(bytes: &[u8]) -> bool {
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'$' if bytes.get(i + 1) == Some(&b'(') => match plain_arithmetic_len(&bytes[i..]) {
                Some(len) => i += len - 1,
                None => return true,
            },
            _ => {}
        }
        i += 1;
    }
    false
}

/// The length of a `$((…))` at the start of `bytes` whose body is names,
/// numbers, `$name` and operators only: brush-parser reads it as arithmetic at
/// the first try, with nothing to backtrack over.
fn plain_arithmetic_len(bytes: &[u8]) -> Option<usize> {
    let body = bytes.strip_prefix(b"$((")?;
    let end = body.windows(2).position(|w| w == b"))")?;
    body[..end]
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || b"_ +-*/%<>=!&|^~?:,$".contains(c))
        .then_some(3 + end + 2)
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

/// [`nesting_depth`], or a bound below it that is still above
/// [`MAX_NESTING`] whenever the depth is.
fn nesting_depth_bounded(text: &str, present: &Present) -> usize {
    // Each level takes a bracket or a keyword word, which takes at least three
    // bytes with what separates it from the next (`if if …`).
    if !present.any(b"({[`") && text.len() < 3 * MAX_NESTING {
        return 0;
    }
    nesting_depth(text)
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
/// Found by fuzzing, each a memory use that grows without bound:
/// * a delimiter that does not start like a word (`<<- (`, `<< )`);
/// * a delimiter that is empty once its quotes are removed (`<<'' `, `<<""`):
///   the tokenizer ends the body at every position and never advances (bash
///   would end such a body at the first empty line);
/// * a delimiter holding an expansion-like `$[`, even inside double quotes
///   (`<<$[  `, `<<"$[  `, `<<a$[  `; bash takes the word literally).
///
/// So a delimiter is accepted only as a plain word: letters, digits and
/// `_-.+:/@%,=`, optionally quoted with `'…'`, `"…"`, `$'…'`, `$"…"` or `\`,
/// and not empty once unquoted. Every everyday delimiter (`EOF`, `'EOF'`,
/// `"END"`, `\EOF`, `-EOF`, `PY_END`) is such a word.
///
/// `<<` inside quotes is not an operator and is skipped. Inside double quotes a
/// command substitution could hold a here-document; the pairing of a here-document
/// with any command substitution is refused separately ([`parser_hazard`]).
fn heredoc_delimiter_hazard(text: &str) -> Option<&'static str> {
    let bytes = text.as_bytes();
    let mut scan = QuotedScan::new(bytes);
    while let Some((i, c, quote)) = scan.next() {
        if quote.is_some() || c != b'<' || bytes.get(i + 1) != Some(&b'<') {
            continue;
        }
        if bytes.get(i + 2) == Some(&b'<') {
            scan.skip_to(i + 3); // `<<<` is a here-string
            continue;
        }
        let mut j = i + 2;
        if bytes.get(j) == Some(&b'-') {
            j += 1;
        }
        while matches!(bytes.get(j), Some(b' ' | b'\t')) {
            j += 1;
        }
        match delimiter_word(&bytes[j..]) {
            Ok(len) => scan.skip_to(j + len),
            Err(why) => return Some(why),
        }
    }
    None
}

/// A byte a here-document delimiter may hold as it is.
fn plain_delimiter_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"_-.+:/@%,=".contains(&b)
}

/// The length of the delimiter word at the start of `rest`, if it is a plain word.
fn delimiter_word(rest: &[u8]) -> Result<usize, &'static str> {
    const NOT_PLAIN: &str =
        "a here-document delimiter that is not a plain word is more than the gate analyses";
    let mut k = 0;
    let mut value_len = 0;
    while let Some(&c) = rest.get(k) {
        match c {
            b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')' => break,
            b'$' if matches!(rest.get(k + 1), Some(b'\'' | b'"')) => k += 1,
            b'\'' | b'"' => {
                let close = rest[k + 1..]
                    .iter()
                    .position(|&b| b == c)
                    .ok_or(NOT_PLAIN)?;
                let inner = &rest[k + 1..k + 1 + close];
                if !inner.iter().all(|&b| plain_delimiter_byte(b)) {
                    return Err(NOT_PLAIN);
                }
                value_len += inner.len();
                k += close + 2;
            }
            b'\\' => match rest.get(k + 1) {
                Some(&next) if plain_delimiter_byte(next) => {
                    value_len += 1;
                    k += 2;
                }
                _ => return Err(NOT_PLAIN),
            },
            c if plain_delimiter_byte(c) => {
                value_len += 1;
                k += 1;
            }
            _ => return Err(NOT_PLAIN),
        }
    }
    if k == 0 {
        return Err(NOT_PLAIN);
    }
    if value_len == 0 {
        return Err("a here-document with an empty delimiter is more than the gate analyses");
    }
    Ok(k)
}

#[cfg(test)]
mod tests {
    use super::refuse_before_parsing;

    #[test]
    fn the_shapes_found_by_fuzzing_never_reach_the_parser() {
        for text in [
            "<<'' ",
            "<<$[  ",
            "cat <<\"$[  \"",
            "cat <<- (",
            "<<\r [t ",
            "((:((:((:((:((:((:((:((:",
            "a[o${T[${T[}=${T[${T[>} }}",
            "a[o${T[}=${T[${T[>} }rt}y",
            "ar[[oken:$[ ap:/xn:$[x a/x |/ tcif[$\"(\"Afcici[$\"if[$\"cif[}x",
            "case $a in h )x && case $a in h )x && case $a in h )x && case $a in h )x",
            ":a;${wawai:a${wawanlf[]/? :a;=/x | :a;${wawai:a${wa;$\"'\"{wawai:a${w",
            "a[gizx_ah[\"]\"${Toh[\"]\"${Tox_ah[\"]\"${Toh[\"]\"%%$%}>%%wai%%%$ %%$%}>%%$%ucrbunla} >",
            "l{ lw[Tokxi:?(| :awaa${wawanlf[wa;${wawAfcicif[$\"\\b(;? :a;=/x",
            "x=$(cat <<EOF\nEOF\n)",
            "ls 99999999999>x",
            "T[=$(+(+(@()(\")\"$(+(\\\"+($[+!(\")[${d+(=${)]))))",
            "echo T[$(x)",
            "a[1]=$(date)",
            "echo \"it's\" a[1] # '\n$(+(x))",
            "echo '\\'$(x) a[0]",
            "T[=$((+(+(@()(\")\"$((+(\\\"+($[+!(\")[${d+(=${)])))))",
            "a[$((1+(2)))]=x",
            "a[$((x\"))]=x",
        ] {
            assert!(refuse_before_parsing(text).is_some(), "{text:?}");
        }
    }

    /// Finding 10 of the audit review: many here-documents pending on one
    /// line are refused before parsing; up to the cap they go to the parser.
    #[test]
    fn too_many_pending_heredocs_on_one_line_are_refused() {
        use super::MAX_PENDING_HEREDOCS;
        let text = |n: usize| format!("cat {}\n{}", "<<E ".repeat(n), "E\n".repeat(n));
        let why = refuse_before_parsing(&text(MAX_PENDING_HEREDOCS + 1)).unwrap();
        assert!(why.contains("more than 256 here-documents"), "{why}");
        assert_eq!(refuse_before_parsing(&text(MAX_PENDING_HEREDOCS)), None);
        // Spread over lines they are not pending at once.
        let lines = "cat <<E\nE\n".repeat(MAX_PENDING_HEREDOCS + 1);
        assert_eq!(refuse_before_parsing(&lines), None);
        // `<<<` (a here-string) is not a here-document.
        let strings = format!("cat {}", "<<<x ".repeat(MAX_PENDING_HEREDOCS + 1));
        assert_eq!(refuse_before_parsing(&strings), None);
    }

    #[test]
    fn everyday_commands_go_to_the_parser() {
        for text in [
            "cat <<'EOF' > notes.txt\nhello\nEOF",
            "cat <<-\"END\"\n\thi\nEND",
            "python3 - <<PY_END\nprint(1)\nPY_END",
            "echo \"a << b\"",
            "python3 -c 'print(1 << 3)'",
            "echo ${a[1]} ${arr[@]} ${#arr[*]} ${m[\"k\"]}",
            "[ -f x ] && [[ -d y ]] && echo ok",
            "grep -E '[0-9]+[a-z]' f.txt",
            "echo {a,b}{1,2} ${x:-{}}",
            "case $1 in a) case $2 in b) echo ab;; esac;; *) echo other;; esac",
            "a[$((i+1))]=x; arr[$i]=v; m[\"k\"]=${a[0]}",
            "echo \\$(x) a[1]",
            "echo $(date) [ok]",
        ] {
            assert_eq!(refuse_before_parsing(text), None, "{text:?}");
        }
    }
}
