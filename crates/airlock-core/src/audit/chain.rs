//! The hash chain. Each record's `prev` is the SHA-256 (lower-case hex) of the
//! previous record's canonical bytes, which are exactly the bytes of its line in
//! the log file, without the terminating `\n`. Hashing the bytes as written (not a
//! re-serialisation) means any edit of any byte, including whitespace or key
//! order, breaks the chain. The first record ever written has `prev` = [`GENESIS`].

use sha2::{Digest, Sha256};

/// `prev` of the very first record: 64 zeros.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// SHA-256 of one record's canonical bytes (its line, without the newline).
pub fn line_hash(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    hex::encode(Sha256::digest(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newline_is_not_part_of_the_canonical_bytes() {
        assert_eq!(line_hash(b"{\"a\":1}\n"), line_hash(b"{\"a\":1}"));
        assert_ne!(line_hash(b"{\"a\":1}"), line_hash(b"{\"a\": 1}"));
        assert_eq!(GENESIS.len(), 64);
    }
}
