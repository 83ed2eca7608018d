//! LZF, the compression of RDB strings: a decoder that checks every byte it is given,
//! and a compressor that makes the same bytes as the liblzf build Redis ships (a
//! 2¹⁶-entry hash table, the "very fast" variant), so a payload Pion `DUMP`s is the
//! payload redis-server makes for the same value.
//!
//! The format is a sequence of runs, each starting with a control byte `c`:
//!
//! | control | meaning |
//! |---|---|
//! | `000LLLLL` | `L + 1` literal bytes follow |
//! | `LLLooooo` `oooooooo` (L < 7) | copy `L + 2` bytes from `o + 1` bytes back |
//! | `111ooooo` `LLLLLLLL` `oooooooo` | copy `L + 9` bytes from `o + 1` bytes back |
//!
//! A copy may overlap what it produces (a run of one repeated byte is a copy from one
//! byte back).
//!
//! ```
//! use pion_core::util::lzf;
//! let text = b"to be or not to be, that is the question: to be or not to be";
//! let packed = lzf::compress(text, text.len() - 4).expect("it repeats itself");
//! assert!(packed.len() < text.len());
//! assert_eq!(lzf::decompress(&packed, text.len()).as_deref(), Some(&text[..]));
//! ```

/// log₂ of the hash table's size.
const HLOG: u32 = 16;
const HSIZE: usize = 1 << HLOG;
/// The longest literal run.
const MAX_LIT: usize = 1 << 5;
/// The farthest a copy reaches back.
const MAX_OFF: usize = 1 << 13;
/// The longest copy.
const MAX_REF: usize = (1 << 8) + (1 << 3);

/// The hash slot of the three bytes whose rolling value is `h` (liblzf's "very fast"
/// hash; only the low 16 bits of `h` matter after the mask).
fn slot(h: u32) -> usize {
    ((h >> (3 * 8 - HLOG)).wrapping_sub(h.wrapping_mul(5)) as usize) & (HSIZE - 1)
}

/// Compresses `input` into at most `max_out` bytes, or `None` when it does not fit
/// there (or either is empty). The output is byte-identical to liblzf's
/// `lzf_compress` with the same limit, including where liblzf gives up early because
/// the next copy might not fit.
pub fn compress(input: &[u8], max_out: usize) -> Option<Vec<u8>> {
    if input.is_empty() || max_out == 0 {
        return None;
    }
    let n = input.len();
    // Positions (0 = empty: a copy never refers to the first byte).
    let mut table = vec![0u32; HSIZE];
    let mut out = vec![0u8; max_out];
    let mut op = 1usize; // out[0] waits for the first run's control byte
    let mut lit = 0usize;
    let mut ip = 0usize;
    let mut hval: u32 = if n >= 2 {
        (u32::from(input[0]) << 8) | u32::from(input[1])
    } else {
        0
    };
    while ip + 2 < n {
        hval = (hval << 8) | u32::from(input[ip + 2]);
        let s = slot(hval);
        let candidate = table[s] as usize;
        table[s] = ip as u32;
        let is_match = candidate > 0
            && candidate < ip
            && ip - candidate - 1 < MAX_OFF
            && input[candidate..candidate + 3] == input[ip..ip + 3];
        if !is_match {
            if op >= max_out {
                return None;
            }
            copy_literal(&mut out, &mut op, &mut lit, input[ip]);
            ip += 1;
            continue;
        }
        let off = ip - candidate - 1;
        let maxlen = (n - ip - 2).min(MAX_REF);
        // Room for this copy (up to 3 bytes) and the next run's control byte.
        if op + 4 >= max_out && op - usize::from(lit == 0) + 4 >= max_out {
            return None;
        }
        out[op - lit - 1] = lit.wrapping_sub(1) as u8;
        op -= usize::from(lit == 0);
        let len = match_length(input, candidate, ip, maxlen);
        let code = len - 2;
        if code < 7 {
            out[op] = ((off >> 8) + (code << 5)) as u8;
            op += 1;
        } else {
            out[op] = ((off >> 8) + (7 << 5)) as u8;
            out[op + 1] = (code - 7) as u8;
            op += 2;
        }
        out[op] = off as u8;
        op += 1;
        lit = 0;
        op += 1;
        ip += len;
        if ip + 2 >= n {
            break;
        }
        // Hash the last two positions the copy covered, as liblzf's fast mode does.
        ip -= 2;
        hval = (u32::from(input[ip]) << 8) | u32::from(input[ip + 1]);
        for _ in 0..2 {
            hval = (hval << 8) | u32::from(input[ip + 2]);
            table[slot(hval)] = ip as u32;
            ip += 1;
        }
    }
    // At most two bytes are left and one control byte may be pending.
    if op + 3 > max_out {
        return None;
    }
    for &b in &input[ip..] {
        copy_literal(&mut out, &mut op, &mut lit, b);
    }
    out[op - lit - 1] = lit.wrapping_sub(1) as u8;
    op -= usize::from(lit == 0);
    out.truncate(op);
    Some(out)
}

/// Appends one literal byte to the open run, closing the run (its control byte is
/// `lit - 1`) and opening the next when it reaches [`MAX_LIT`].
fn copy_literal(out: &mut [u8], op: &mut usize, lit: &mut usize, b: u8) {
    *lit += 1;
    out[*op] = b;
    *op += 1;
    if *lit == MAX_LIT {
        out[*op - *lit - 1] = (*lit - 1) as u8;
        *lit = 0;
        *op += 1;
    }
}

/// How many bytes at `ip` repeat those at `from` (at least 3, which the caller
/// checked), bounded the way liblzf bounds it: by `maxlen`, except that when more
/// than 16 bytes are allowed the first 16 comparisons run without the bound.
fn match_length(input: &[u8], from: usize, ip: usize, maxlen: usize) -> usize {
    let mut len = 2;
    if maxlen > 16 {
        for _ in 0..16 {
            len += 1;
            if input[from + len] != input[ip + len] {
                return len;
            }
        }
    }
    loop {
        len += 1;
        if !(len < maxlen && input[from + len] == input[ip + len]) {
            return len;
        }
    }
}

/// Decompresses `input`, which must expand to exactly `expected` bytes; `None` when it
/// is not valid LZF or has another length. Allocates no more than `expected`, which
/// the caller bounds (each input byte yields at most 88 output bytes, so a claimed
/// length past that is refused before anything is allocated).
pub fn decompress(input: &[u8], expected: usize) -> Option<Vec<u8>> {
    if expected > input.len().saturating_mul(88) {
        return None;
    }
    let mut out = Vec::with_capacity(expected);
    let mut ip = 0usize;
    while ip < input.len() {
        let ctrl = usize::from(input[ip]);
        ip += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            let bytes = input.get(ip..ip + run)?;
            if out.len() + run > expected {
                return None;
            }
            out.extend_from_slice(bytes);
            ip += run;
            continue;
        }
        let mut len = ctrl >> 5;
        if len == 7 {
            len += usize::from(*input.get(ip)?);
            ip += 1;
        }
        let low = usize::from(*input.get(ip)?);
        ip += 1;
        let back = ((ctrl & 0x1f) << 8) + low + 1;
        len += 2;
        if back > out.len() || out.len() + len > expected {
            return None;
        }
        let start = out.len() - back;
        for k in 0..len {
            let b = out[start + k];
            out.push(b);
        }
    }
    (out.len() == expected).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn compresses_a_score_listpack_as_redis_does() {
        // The listpack of `ZADD z 1.5 a 2 b 0.1 c -0 d`, and the LZF blob redis-server
        // 7.0 put in its DUMP payload.
        let lp = b"1\x00\x00\x00\x08\x00\x81d\x02\x00\x01\x81c\x02\x930.10000000000000001\x14\x81a\x02\x831.5\x04\x81b\x02\x02\x01\xff";
        let want = b"\x12\x31\x00\x00\x00\x08\x00\x81d\x02\x00\x01\x81c\x02\x930.10\xe0\x05\x00\x0f1\x14\x81a\x02\x831.5\x04\x81b\x02\x02\x01\xff";
        assert_eq!(lp.len(), 0x31);
        let got = compress(lp, lp.len() - 4).expect("compressible");
        assert_eq!(got, want.to_vec());
        assert_eq!(decompress(&got, lp.len()).as_deref(), Some(&lp[..]));
    }

    #[test]
    fn refuses_what_does_not_fit_and_bad_input() {
        assert_eq!(compress(b"abcdefghijklmnopqrstuvwxyz", 22), None);
        assert_eq!(compress(b"", 10), None);
        // A copy from before the start, a truncated literal, a wrong length.
        assert_eq!(decompress(b"\x20\x05", 4), None);
        assert_eq!(decompress(b"\x05ab", 6), None);
        assert_eq!(decompress(b"\x01ab", 3), None);
        assert_eq!(decompress(b"\x01ab", 2).as_deref(), Some(&b"ab"[..]));
        // A claimed length no input of this size can reach is refused up front.
        assert_eq!(decompress(b"\x00a", 1 << 40), None);
    }

    #[test]
    fn long_repeats_round_trip() {
        let data = vec![b'x'; 100_000];
        let packed = compress(&data, data.len()).expect("compressible");
        assert!(packed.len() < 2_000);
        assert_eq!(decompress(&packed, data.len()), Some(data));
    }

    proptest! {
        #[test]
        fn round_trips(data in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), any::<u8>()], 0..3000)) {
            if let Some(packed) = compress(&data, data.len() + 64) {
                prop_assert_eq!(decompress(&packed, data.len()), Some(data));
            } else {
                prop_assert!(data.is_empty());
            }
        }

        #[test]
        fn decompress_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200), n in 0usize..5000) {
            let _ = decompress(&data, n);
        }
    }
}
