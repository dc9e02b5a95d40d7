//! SHA-256 as a `const fn` (FIPS 180-4), so that the built-in default policy's
//! hash is computed by the compiler rather than by every airlock process on
//! its cold path (~0.3M instructions under callgrind, where SHA-NI is hidden).
//! Being computed from the text, it cannot go stale when the text is edited;
//! a unit test checks it against `sha2` on texts of every padding shape.
//! Not meant for runtime use: `sha2` is faster there.

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const H0: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// Byte `i` of the padded message: the data, 0x80, zeros, then the length in
/// bits as a big-endian u64 ending at `total` (a multiple of 64).
const fn padded_byte(data: &[u8], i: usize, total: usize) -> u8 {
    if i < data.len() {
        data[i]
    } else if i == data.len() {
        0x80
    } else if i >= total - 8 {
        let bits = (data.len() as u64).wrapping_mul(8);
        (bits >> (8 * (total - 1 - i))) as u8
    } else {
        0
    }
}

/// The SHA-256 digest of `data`.
pub const fn sha256(data: &[u8]) -> [u8; 32] {
    // The data, at least 9 bytes of padding (0x80 and the length), rounded up
    // to whole 64-byte blocks.
    let total = (data.len() + 9).div_ceil(64) * 64;
    let mut h = H0;
    let mut block = 0;
    while block < total {
        let mut w = [0u32; 64];
        let mut t = 0;
        while t < 16 {
            let at = block + 4 * t;
            w[t] = u32::from_be_bytes([
                padded_byte(data, at, total),
                padded_byte(data, at + 1, total),
                padded_byte(data, at + 2, total),
                padded_byte(data, at + 3, total),
            ]);
            t += 1;
        }
        while t < 64 {
            let s0 = w[t - 15].rotate_right(7) ^ w[t - 15].rotate_right(18) ^ (w[t - 15] >> 3);
            let s1 = w[t - 2].rotate_right(17) ^ w[t - 2].rotate_right(19) ^ (w[t - 2] >> 10);
            w[t] = w[t - 16]
                .wrapping_add(s0)
                .wrapping_add(w[t - 7])
                .wrapping_add(s1);
            t += 1;
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        let mut t = 0;
        while t < 64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[t])
                .wrapping_add(w[t]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
            t += 1;
        }
        let add = [a, b, c, d, e, f, g, hh];
        let mut i = 0;
        while i < 8 {
            h[i] = h[i].wrapping_add(add[i]);
            i += 1;
        }
        block += 64;
    }
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 8 {
        let bytes = h[i].to_be_bytes();
        out[4 * i] = bytes[0];
        out[4 * i + 1] = bytes[1];
        out[4 * i + 2] = bytes[2];
        out[4 * i + 3] = bytes[3];
        i += 1;
    }
    out
}

/// A digest in lower-case hex, as `hex::encode` writes it.
pub const fn hex(digest: [u8; 32]) -> [u8; 64] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 64];
    let mut i = 0;
    while i < 32 {
        out[2 * i] = DIGITS[(digest[i] >> 4) as usize];
        out[2 * i + 1] = DIGITS[(digest[i] & 0xf) as usize];
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    /// Every length from 0 to 200 crosses each padding case: the length field
    /// fitting in the last block (<= 55 bytes over a multiple of 64) or
    /// spilling into a new one (56..=63 over).
    #[test]
    fn const_sha256_agrees_with_sha2() {
        let data: Vec<u8> = (0..200u32).map(|i| (i * 7 + 3) as u8).collect();
        for len in 0..=data.len() {
            let text = &data[..len];
            assert_eq!(
                hex(sha256(text)).as_slice(),
                hex::encode(Sha256::digest(text)).as_bytes(),
                "length {len}"
            );
        }
    }

    #[test]
    fn const_sha256_known_answers() {
        // FIPS 180-4 examples.
        assert_eq!(
            &hex(sha256(b"abc")),
            b"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            &hex(sha256(b"")),
            b"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
