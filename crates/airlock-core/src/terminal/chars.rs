//! The characters a terminal or a reader must never receive raw from agent text.

/// What kind of dangerous character `c` is, or `None` for an ordinary one.
/// Newline and tab are [`Danger::Control`] too: callers that keep them say so.
pub fn classify(c: char) -> Option<Danger> {
    let cp = c as u32;
    match cp {
        0x00..=0x1f | 0x7f => Some(Danger::Control),
        0x80..=0x9f => Some(Danger::C1Control),
        0xe0000..=0xe007f => Some(Danger::Tag),
        _ if is_bidi(cp) => Some(Danger::Bidi),
        _ if is_invisible(cp) => Some(Danger::Invisible),
        _ => None,
    }
}

/// The classes of [`classify`]. Typed so that each cleaner states what it does
/// with each class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Danger {
    /// C0 controls (including ESC, the start of every escape sequence) and DEL.
    Control,
    /// C1 controls, U+0080..U+009F: CSI (U+009B), OSC (U+009D), DCS (U+0090) and
    /// ST (U+009C) act as escape sequences on terminals that honour them.
    C1Control,
    /// Bidirectional embeddings, overrides, isolates and marks: they reorder what
    /// a reader sees (`rm -rf ~ #` shown as something harmless).
    Bidi,
    /// Unicode TAG characters U+E0000..U+E007F: an invisible copy of ASCII that
    /// models read as text (hidden instructions).
    Tag,
    /// Zero-width and other invisible format characters, variation selectors,
    /// invisible fillers and line/paragraph separators: they hide or smuggle text.
    Invisible,
}

fn is_bidi(cp: u32) -> bool {
    matches!(
        cp,
        0x061c            // ARABIC LETTER MARK
        | 0x200e | 0x200f // LRM, RLM
        | 0x202a..=0x202e // LRE, RLE, PDF, LRO, RLO
        | 0x2066..=0x2069 // LRI, RLI, FSI, PDI
    )
}

/// Unicode's format characters (general category Cf) that are not bidi controls,
/// plus invisible characters of other categories that are used to hide text.
fn is_invisible(cp: u32) -> bool {
    matches!(
        cp,
        0x00ad                // SOFT HYPHEN
        | 0x034f              // COMBINING GRAPHEME JOINER
        | 0x0600..=0x0605     // Arabic number signs (Cf)
        | 0x06dd | 0x070f | 0x0890..=0x0891 | 0x08e2
        | 0x115f | 0x1160     // HANGUL CHOSEONG/JUNGSEONG FILLER
        | 0x17b4 | 0x17b5     // KHMER invisible vowels
        | 0x180b..=0x180f     // MONGOLIAN free variation selectors, vowel separator
        | 0x200b..=0x200d     // ZERO WIDTH SPACE, ZWNJ, ZWJ
        | 0x2028 | 0x2029     // LINE / PARAGRAPH SEPARATOR
        | 0x2060..=0x2065     // WORD JOINER, invisible operators
        | 0x206a..=0x206f     // deprecated format characters
        | 0x3164 | 0xffa0     // HANGUL FILLER, HALFWIDTH HANGUL FILLER
        | 0xfe00..=0xfe0f     // VARIATION SELECTORS (used to smuggle bytes)
        | 0xfeff              // ZERO WIDTH NO-BREAK SPACE (BOM)
        | 0xfff9..=0xfffb     // interlinear annotation (hides the annotated text)
        | 0x110bd | 0x110cd
        | 0x13430..=0x1343f   // Egyptian hieroglyph format controls
        | 0x1bca0..=0x1bca3   // shorthand format controls
        | 0x1d173..=0x1d17a   // musical symbol format controls
        | 0xe0100..=0xe01ef   // VARIATION SELECTORS SUPPLEMENT
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_is_recognised() {
        let table: &[(char, Option<Danger>)] = &[
            ('a', None),
            (' ', None),
            ('é', None),
            ('€', None),
            ('漢', None),
            ('\u{1F600}', None),
            ('\n', Some(Danger::Control)),
            ('\u{1b}', Some(Danger::Control)),
            ('\u{7f}', Some(Danger::Control)),
            ('\u{9b}', Some(Danger::C1Control)),
            ('\u{9d}', Some(Danger::C1Control)),
            ('\u{202e}', Some(Danger::Bidi)),
            ('\u{2067}', Some(Danger::Bidi)),
            ('\u{200f}', Some(Danger::Bidi)),
            ('\u{61c}', Some(Danger::Bidi)),
            ('\u{e0041}', Some(Danger::Tag)),
            ('\u{e007f}', Some(Danger::Tag)),
            ('\u{200b}', Some(Danger::Invisible)),
            ('\u{200d}', Some(Danger::Invisible)),
            ('\u{2060}', Some(Danger::Invisible)),
            ('\u{feff}', Some(Danger::Invisible)),
            ('\u{ad}', Some(Danger::Invisible)),
            ('\u{2028}', Some(Danger::Invisible)),
            ('\u{fe0f}', Some(Danger::Invisible)),
            ('\u{e0100}', Some(Danger::Invisible)),
            ('\u{3164}', Some(Danger::Invisible)),
        ];
        for (c, want) in table {
            assert_eq!(classify(*c), *want, "U+{:04X}", *c as u32);
        }
    }
}
