//! Escaping for listings and messages that show agent-supplied text to a person:
//! `audit tail`/`query`/`show`, `approvals list`/`show`, `grants list`, the
//! `--ask` prompt, and every message that quotes a command or a file name.
//!
//! Each dangerous character (see [`super::chars`]) becomes a visible escape:
//! `\n`, `\t`, `\r`, `\x1b` for C0 controls and DEL, `\u{9b}` for C1 controls and
//! `\u{202e}` for bidi, TAG and invisible format characters. With ESC itself
//! shown as text, what followed it is plain printable text: no sequence acts.

use super::chars::{classify, Danger};
use std::borrow::Cow;
use std::fmt::Write as _;

/// For one field of a one-line listing: every dangerous character is escaped,
/// newline and tab included.
pub fn escape_line(text: &str) -> Cow<'_, str> {
    escape_with(text, false)
}

/// For a block of text shown on several lines (a command in `approvals show`):
/// newline and tab are kept, everything else dangerous is escaped.
pub fn escape_text(text: &str) -> Cow<'_, str> {
    escape_with(text, true)
}

fn escape_with(text: &str, keep_layout: bool) -> Cow<'_, str> {
    let dangerous = |c: char| classify(c).is_some() && !(keep_layout && (c == '\n' || c == '\t'));
    let Some(first) = text.find(dangerous) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if dangerous(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The visible form of one character.
pub(crate) fn push_escape(out: &mut String, c: char) {
    match (c, classify(c)) {
        ('\n', _) => out.push_str("\\n"),
        ('\t', _) => out.push_str("\\t"),
        ('\r', _) => out.push_str("\\r"),
        (_, Some(Danger::Control)) => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        _ => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// JSON text for a terminal: serde_json leaves DEL, C1 controls, bidi and
/// invisible characters raw inside strings; this writes them as `\uXXXX`
/// escapes (surrogate pairs above U+FFFF). The result is the same JSON value.
/// Such characters can only occur inside strings, so the rewrite is safe.
pub fn json_safe(json: &str) -> Cow<'_, str> {
    let dangerous = |c: char| classify(c).is_some() && (c as u32) >= 0x20;
    let Some(first) = json.find(dangerous) else {
        return Cow::Borrowed(json);
    };
    let mut out = String::with_capacity(json.len() + 16);
    out.push_str(&json[..first]);
    for c in json[first..].chars() {
        if dangerous(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per class of finding 5: the raw text an agent can send, and what a
    /// person's terminal receives.
    #[test]
    fn each_escape_class_is_shown_not_acted_on() {
        let table: &[(&str, &str)] = &[
            ("ls -la", "ls -la"),
            ("grep 'a\\.b' f", "grep 'a\\.b' f"),
            ("caf\u{e9} \u{1F600}", "caf\u{e9} \u{1F600}"),
            // OSC 52: clipboard write, BEL- and ST-terminated.
            (
                "echo \x1b]52;c;cm0gLXJmIH4=\x07",
                "echo \\x1b]52;c;cm0gLXJmIH4=\\x07",
            ),
            ("x\x1b]52;c;cm0=\x1b\\", "x\\x1b]52;c;cm0=\\x1b\\"),
            // CSI: clear screen, cursor up and erase line, SGR.
            ("a\x1b[2J\x1b[H", "a\\x1b[2J\\x1b[H"),
            ("safe\x1b[1A\x1b[2Krm -rf ~", "safe\\x1b[1A\\x1b[2Krm -rf ~"),
            ("\x1b[31mred", "\\x1b[31mred"),
            // DCS and other C0 controls, DEL, backspace over text.
            ("\x1bP1$qm\x1b\\", "\\x1bP1$qm\\x1b\\"),
            (
                "rm -rf ~\x08\x08\x08\x08\x08\x08\x08\x08ls",
                "rm -rf ~\\x08\\x08\\x08\\x08\\x08\\x08\\x08\\x08ls",
            ),
            ("a\x7fb\x00c", "a\\x7fb\\x00c"),
            ("one\ntwo\tthree\rfour", "one\\ntwo\\tthree\\rfour"),
            // C1 controls: 8-bit CSI and OSC.
            (
                "a\u{9b}2Jb\u{9d}52;c;x\u{9c}",
                "a\\u{9b}2Jb\\u{9d}52;c;x\\u{9c}",
            ),
            // Bidi overrides and isolates.
            ("ls \u{202e}txt.sh\u{202c}", "ls \\u{202e}txt.sh\\u{202c}"),
            ("a\u{2067}b\u{2069}", "a\\u{2067}b\\u{2069}"),
            // Invisible: zero-width, BOM, TAG characters.
            ("r\u{200b}m", "r\\u{200b}m"),
            ("\u{feff}ls", "\\u{feff}ls"),
            ("ok\u{e0072}\u{e006d}", "ok\\u{e0072}\\u{e006d}"),
        ];
        for (raw, shown) in table {
            let got = escape_line(raw);
            assert_eq!(got, *shown, "{raw:?}");
            assert!(
                !got.chars().any(|c| classify(c).is_some()),
                "{raw:?} left a raw control in {got:?}"
            );
        }
    }

    #[test]
    fn text_blocks_keep_newlines_and_tabs() {
        assert_eq!(escape_text("a\n\tb\x1b[2J"), "a\n\tb\\x1b[2J");
        assert!(matches!(escape_text("plain\nlines"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_stays_the_same_value_without_raw_controls() {
        let value = serde_json::json!({
            "command": "a\u{202e}b\u{9b}c\u{7f}d\u{e0041}\x1b]52;\x07",
            "keep": "é ✓ \u{1F600}"
        });
        let text = serde_json::to_string(&value).unwrap();
        let safe = json_safe(&text);
        assert!(!safe.chars().any(|c| classify(c).is_some()), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
        assert!(
            safe.contains("\\u202e") && safe.contains("\\udb40\\udc41"),
            "{safe}"
        );
    }
}
