//! Live program output on its way to a person's terminal (`airlock run` with a
//! tty). Plain text, newline, tab, carriage return and SGR colour sequences pass
//! as they are; every other escape sequence (OSC 52 clipboard writes, DCS,
//! cursor movement, screen clears, SGR 8 "conceal"), C0 and C1 control, bidi and
//! invisible format character, and every byte that is not UTF-8, is written as a
//! visible escape instead. Sequences split across chunks are handled: the
//! filter keeps what it has not decided yet until the next chunk.

use super::chars::classify;
use super::escape::push_escape;

/// The longest SGR parameter string that passes; longer ones are shown escaped.
const MAX_SGR: usize = 64;

#[derive(Debug, Default)]
pub struct StreamFilter {
    /// Bytes of an incomplete UTF-8 character at the end of the last chunk.
    carry: Vec<u8>,
    state: State,
}

#[derive(Debug, Default)]
enum State {
    #[default]
    Ground,
    /// After ESC.
    Escape,
    /// After `ESC [`, collecting parameters.
    Csi(String),
}

/// One decoded unit of the byte stream.
enum Unit {
    Char(char),
    Invalid(u8),
}

impl StreamFilter {
    pub fn new() -> StreamFilter {
        StreamFilter::default()
    }

    /// Filter one chunk; what is safe to show so far is appended to `out`.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<u8>) {
        let mut text = String::new();
        let mut bytes = std::mem::take(&mut self.carry);
        bytes.extend_from_slice(chunk);
        let mut rest = &bytes[..];
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    for c in s.chars() {
                        self.unit(Unit::Char(c), &mut text);
                    }
                    break;
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    for c in std::str::from_utf8(good).unwrap_or_default().chars() {
                        self.unit(Unit::Char(c), &mut text);
                    }
                    match e.error_len() {
                        // Incomplete at the end: wait for the next chunk.
                        None => {
                            self.carry = bad.to_vec();
                            break;
                        }
                        Some(n) => {
                            for &b in &bad[..n] {
                                self.unit(Unit::Invalid(b), &mut text);
                            }
                            rest = &bad[n..];
                        }
                    }
                }
            }
        }
        out.extend_from_slice(text.as_bytes());
    }

    /// The stream ended: show whatever was held back, escaped.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let mut text = String::new();
        for b in std::mem::take(&mut self.carry) {
            self.unit(Unit::Invalid(b), &mut text);
        }
        match std::mem::take(&mut self.state) {
            State::Ground => {}
            State::Escape => text.push_str("\\x1b"),
            State::Csi(params) => {
                text.push_str("\\x1b[");
                text.push_str(&params);
            }
        }
        out.extend_from_slice(text.as_bytes());
    }

    fn unit(&mut self, unit: Unit, out: &mut String) {
        match std::mem::take(&mut self.state) {
            State::Ground => self.ground(unit, out),
            State::Escape => match unit {
                Unit::Char('[') => self.state = State::Csi(String::new()),
                other => {
                    out.push_str("\\x1b");
                    self.ground(other, out);
                }
            },
            State::Csi(mut params) => match unit {
                Unit::Char(c @ ('0'..='9' | ';' | ':')) if params.len() < MAX_SGR => {
                    params.push(c);
                    self.state = State::Csi(params);
                }
                Unit::Char('m') if sgr_is_plain(&params) => {
                    out.push_str("\x1b[");
                    out.push_str(&params);
                    out.push('m');
                }
                other => {
                    out.push_str("\\x1b[");
                    out.push_str(&params);
                    self.ground(other, out);
                }
            },
        }
    }

    fn ground(&mut self, unit: Unit, out: &mut String) {
        match unit {
            Unit::Char('\u{1b}') => self.state = State::Escape,
            Unit::Char(c @ ('\n' | '\t' | '\r')) => out.push(c),
            Unit::Char(c) if classify(c).is_some() => push_escape(out, c),
            Unit::Char(c) => out.push(c),
            Unit::Invalid(b) => out.push_str(&format!("\\x{b:02x}")),
        }
    }
}

/// Whether an SGR parameter string only sets colours and type styles. SGR 8
/// (conceal) is refused: it hides text from the person reading.
fn sgr_is_plain(params: &str) -> bool {
    let mut fields = params.split(';');
    while let Some(field) = fields.next() {
        if let Some((head, rest)) = field.split_once(':') {
            // ITU T.416 colour form: 38:2::R:G:B, 38:5:N.
            if !matches!(head, "38" | "48" | "58")
                || !rest.chars().all(|c| c.is_ascii_digit() || c == ':')
            {
                return false;
            }
            continue;
        }
        let n: u32 = if field.is_empty() {
            0
        } else {
            match field.parse() {
                Ok(n) => n,
                Err(_) => return false,
            }
        };
        match n {
            0..=7 | 9..=29 | 30..=37 | 39..=47 | 49..=55 | 59 | 90..=97 | 100..=107 => {}
            // Extended colours: 5;N or 2;R;G;B follow.
            38 | 48 | 58 => {
                let take = match fields.next() {
                    Some("5") => 1,
                    Some("2") => 3,
                    _ => return false,
                };
                for _ in 0..take {
                    match fields.next() {
                        Some(v) if v.parse::<u8>().is_ok() => {}
                        _ => return false,
                    }
                }
            }
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter_chunks(chunks: &[&[u8]]) -> String {
        let mut f = StreamFilter::new();
        let mut out = Vec::new();
        for chunk in chunks {
            f.push(chunk, &mut out);
        }
        f.finish(&mut out);
        String::from_utf8(out).expect("the filter writes UTF-8")
    }

    fn filter(bytes: &[u8]) -> String {
        filter_chunks(&[bytes])
    }

    #[test]
    fn plain_text_and_colours_pass() {
        for text in [
            "hello\n",
            "a\tb\r\n",
            "progress 10%\rprogress 20%\r",
            "\x1b[31mred\x1b[0m \x1b[1;4;32mbold\x1b[m",
            "\x1b[38;5;196mx\x1b[48;2;10;20;30my\x1b[38:2::1:2:3mz\x1b[39;49m",
            "caf\u{e9} \u{1F600} \u{6f22}",
        ] {
            assert_eq!(filter(text.as_bytes()), text, "{text:?}");
        }
    }

    /// One row per class: nothing but text and SGR reaches the terminal.
    #[test]
    fn every_other_control_is_shown_escaped() {
        let table: &[(&[u8], &str)] = &[
            (
                b"\x1b]52;c;cm0gLXJmIH4=\x07",
                "\\x1b]52;c;cm0gLXJmIH4=\\x07",
            ),
            (b"\x1b]0;title\x1b\\", "\\x1b]0;title\\x1b\\"),
            (b"\x1bP1$qm\x1b\\", "\\x1bP1$qm\\x1b\\"),
            (
                b"\x1b_apc\x1b\\\x1b^pm\x1b\\",
                "\\x1b_apc\\x1b\\\\x1b^pm\\x1b\\",
            ),
            (b"\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),
            (b"\x1b[1A\x1b[2K", "\\x1b[1A\\x1b[2K"),
            (b"\x1b[?1049h", "\\x1b[?1049h"),
            (b"\x1b[8mhidden\x1b[0m", "\\x1b[8mhidden\x1b[0m"),
            (b"\x1b[6n", "\\x1b[6n"),
            (b"\x1bc", "\\x1bc"),
            (b"a\x07b\x08c\x00d\x7f", "a\\x07b\\x08c\\x00d\\x7f"),
            (
                "\u{9b}2J\u{9d}52;c;x\u{9c}".as_bytes(),
                "\\u{9b}2J\\u{9d}52;c;x\\u{9c}",
            ),
            (b"\x9b2J", "\\x9b2J"),
            ("ls \u{202e}hs.txt".as_bytes(), "ls \\u{202e}hs.txt"),
            ("r\u{200b}m \u{e0041}".as_bytes(), "r\\u{200b}m \\u{e0041}"),
            (b"bad \xff\xfe utf8", "bad \\xff\\xfe utf8"),
        ];
        for (raw, shown) in table {
            let got = filter(raw);
            assert_eq!(got, *shown, "{:?}", String::from_utf8_lossy(raw));
            let without_sgr = got.replace("\x1b[0m", "");
            assert!(!without_sgr.contains('\x1b'), "raw ESC left in {got:?}");
        }
    }

    #[test]
    fn sequences_split_across_chunks() {
        // OSC 52 split inside the introducer, SGR split inside its parameters,
        // a UTF-8 character split between its bytes.
        assert_eq!(
            filter_chunks(&[
                b"a\x1b",
                b"]52;c;eA==\x07",
                b"\x1b[3",
                b"1mred\xe2\x82",
                b"\xac"
            ]),
            "a\\x1b]52;c;eA==\\x07\x1b[31mred\u{20ac}"
        );
        // Held back at the end of the stream: shown, not dropped.
        assert_eq!(filter_chunks(&[b"x\x1b[3"]), "x\\x1b[3");
        assert_eq!(filter_chunks(&[b"x\xe2\x82"]), "x\\xe2\\x82");
    }
}
