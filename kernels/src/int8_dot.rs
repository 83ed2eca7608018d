//! The integer dot product of two int8 code rows: the inner loop of the vector
//! index's graph walk, which compares a query's codes with a few hundred rows per
//! search.
//!
//! AVX2 has no signed 8-bit multiply-add, and widening both rows to 16 bits costs
//! four cross-lane shuffles per 32 codes, all on one port: the walk then waits on
//! the shuffles, not the multiplies. Here the sign of `a` moves onto `b` instead
//! (`|a_i| · (sign(a_i) · b_i) = a_i · b_i`), so one `vpmaddubsw` multiplies 32
//! unsigned-by-signed pairs and sums them in pairs to 16 bits, and one `vpmaddwd`
//! against ones widens those sums to 32 bits: five plain ALU instructions per 32
//! codes, no shuffles.
//!
//! With AVX-512 VNNI the same move feeds `vpdpbusd`, which multiplies 64
//! unsigned-by-signed pairs and adds them in fours straight into 32-bit sums: four
//! instructions per 64 codes (abs, a mask of `a`'s signs, a masked negation, the
//! multiply-add), and the row's tail in one masked load instead of a scalar loop.
//! simsimd's kernel for that CPU widens both rows to 16 bits first (two
//! `vpmovsxbw` per 32 codes, on one port) into a single accumulator, and measured
//! 31 % of the graph walk's time on a Xeon with a 300 MB L3 where the rows are in
//! cache and the walk is bound by arithmetic, not memory (doc/vector-index.md).
//!
//! The one input this does not take exactly is -128 in `b` where `a` is negative
//! (its negation does not fit in a byte); the codes the index makes are symmetric,
//! `-127..=127`, so they never hold it, and [`dot`] documents the case.

/// `Σ a_i·b_i` over the shorter of the two rows, accumulated in 32 bits.
///
/// Exact when `b` holds no -128 (the index's symmetric codes never do) and for any
/// row of up to 65,536 codes (the sum of that many products fits an `i32`). Where
/// `b_i = -128` meets a negative `a_i`, the AVX2 path gets that product's sign wrong:
/// a wrong value, never undefined behaviour.
pub fn dot(a: &[i8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512_vnni() {
            // SAFETY: the check above found every feature `dot_avx512_vnni` is
            // compiled for; the rows are of equal length.
            return unsafe { dot_avx512_vnni(a, b) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the check above found AVX2, the only feature `dot_avx2` is
            // compiled for; the rows are of equal length.
            return unsafe { dot_avx2(a, b) };
        }
    }
    dot_scalar(a, b)
}

/// The plain loop: the reference the SIMD path is tested against, and the path of
/// CPUs without AVX2.
pub fn dot_scalar(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum()
}

/// Whether this CPU has the AVX-512 subsets [`dot`]'s widest path uses.
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx512_vnni() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vnni")
}

/// [`dot`] on AVX-512 VNNI, the AVX2 path's sign move on 64 codes a register.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn dot_avx512_vnni(a: &[i8], b: &[i8]) -> i32 {
    use std::arch::x86_64::*;

    /// Codes per 512-bit register.
    const W: usize = 64;
    let n = a.len().min(b.len());
    let zero = _mm512_setzero_si512();
    let step = |acc: __m512i, va: __m512i, vb: __m512i| {
        // b negated where a is negative, then |a| (unsigned; -128 reads 128) times
        // it, four products summed into each 32-bit lane. A lane gains at most
        // 4·128·128 = 65,536 a step, so 65,536 codes stay within an i32.
        let signed_b = _mm512_mask_sub_epi8(vb, _mm512_movepi8_mask(va), zero, vb);
        _mm512_dpbusd_epi32(acc, _mm512_abs_epi8(va), signed_b)
    };
    // SAFETY (every load below): `at + W <= n` for the full loads, and the tail's
    // masked load touches only its first `n - at` bytes (the masked-off ones are
    // neither read nor can fault); both rows hold at least `n` codes, and unaligned
    // loads take any address.
    let load = |row: &[i8], at: usize| unsafe { _mm512_loadu_si512(row.as_ptr().add(at).cast()) };
    // Two accumulators: consecutive multiply-adds do not wait on each other.
    let (mut even, mut odd) = (zero, zero);
    let mut at = 0;
    while at + 2 * W <= n {
        even = step(even, load(a, at), load(b, at));
        odd = step(odd, load(a, at + W), load(b, at + W));
        at += 2 * W;
    }
    if at + W <= n {
        even = step(even, load(a, at), load(b, at));
        at += W;
    }
    if at < n {
        // 0 < n - at < 64, so the shift is in range.
        let mask: __mmask64 = (1u64 << (n - at)) - 1;
        // SAFETY: see above; only the first `n - at` bytes are read.
        let (va, vb) = unsafe {
            (
                _mm512_maskz_loadu_epi8(mask, a.as_ptr().add(at)),
                _mm512_maskz_loadu_epi8(mask, b.as_ptr().add(at)),
            )
        };
        odd = step(odd, va, vb);
    }
    _mm512_reduce_add_epi32(_mm512_add_epi32(even, odd))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_avx2(a: &[i8], b: &[i8]) -> i32 {
    use std::arch::x86_64::*;

    /// Codes per 256-bit register.
    const W: usize = 32;
    let n = a.len().min(b.len());
    let ones = _mm256_set1_epi16(1);
    // Two accumulators: consecutive registers' sums do not wait on each other.
    let mut acc = [_mm256_setzero_si256(); 2];
    let step = |acc: &mut __m256i, at: usize| {
        // SAFETY: callers pass `at + W <= n`, and both rows hold at least `n` codes;
        // unaligned loads take any address.
        let (va, vb) = unsafe {
            (
                _mm256_loadu_si256(a.as_ptr().add(at).cast::<__m256i>()),
                _mm256_loadu_si256(b.as_ptr().add(at).cast::<__m256i>()),
            )
        };
        // |a| as unsigned bytes, b carrying a's sign (0 where a is 0).
        let pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(va), _mm256_sign_epi8(vb, va));
        // |a_i·b_i| ≤ 128·127, so a pair's sum (≤ 32,512) never saturates 16 bits.
        *acc = _mm256_add_epi32(*acc, _mm256_madd_epi16(pairs, ones));
    };
    let mut at = 0;
    while at + 2 * W <= n {
        step(&mut acc[0], at);
        step(&mut acc[1], at + W);
        at += 2 * W;
    }
    if at + W <= n {
        step(&mut acc[0], at);
        at += W;
    }
    let sum = _mm256_add_epi32(acc[0], acc[1]);
    let half = _mm_add_epi32(
        _mm256_castsi256_si128(sum),
        _mm256_extracti128_si256::<1>(sum),
    );
    let quarter = _mm_add_epi32(half, _mm_unpackhi_epi64(half, half));
    let one = _mm_add_epi32(quarter, _mm_shuffle_epi32::<0b01>(quarter));
    _mm_cvtsi128_si32(one) + dot_scalar(&a[at..n], &b[at..n])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn extreme_codes_at_every_length_around_the_register_widths() {
        for n in 0..200 {
            let a: Vec<i8> = (0..n)
                .map(|i| if i % 3 == 0 { -127 } else { 127 })
                .collect();
            let b: Vec<i8> = (0..n)
                .map(|i| if i % 2 == 0 { -127 } else { 127 })
                .collect();
            assert_eq!(dot(&a, &b), dot_scalar(&a, &b), "n = {n}");
            let same: Vec<i8> = vec![-127; n];
            assert_eq!(dot(&same, &same), 127 * 127 * n as i32, "n = {n}");
        }
    }

    #[test]
    fn minus_128_is_exact_in_the_first_row() {
        let a = vec![-128i8; 96];
        let b: Vec<i8> = (0..96).map(|i| (i as i8).wrapping_mul(7) | 1).collect();
        let b: Vec<i8> = b.iter().map(|&x| x.max(-127)).collect();
        assert_eq!(dot(&a, &b), dot_scalar(&a, &b));
    }

    /// Each SIMD path this CPU has, named, against the plain loop: [`dot`] takes
    /// only the widest, so the AVX2 path is called directly too.
    fn every_path(a: &[i8], b: &[i8]) -> Vec<(&'static str, i32)> {
        let mut paths = vec![("dispatch", dot(a, b))];
        #[cfg(target_arch = "x86_64")]
        {
            let n = a.len().min(b.len());
            let (a, b) = (&a[..n], &b[..n]);
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 was found; the rows are of equal length.
                paths.push(("avx2", unsafe { dot_avx2(a, b) }));
            }
            if has_avx512_vnni() {
                // SAFETY: the features were found; the rows are of equal length.
                paths.push(("avx512-vnni", unsafe { dot_avx512_vnni(a, b) }));
            }
        }
        paths
    }

    #[test]
    fn every_path_agrees_at_every_length_around_the_register_widths() {
        for n in 0..300 {
            let a: Vec<i8> = (0..n).map(|i| ((i * 37) % 255) as i8).collect();
            let b: Vec<i8> = (0..n)
                .map(|i| (((i * 91 + 13) % 255) as i8).max(-127))
                .collect();
            for (path, got) in every_path(&a, &b) {
                assert_eq!(got, dot_scalar(&a, &b), "{path}, n = {n}");
            }
        }
    }

    #[test]
    fn rows_of_unequal_length_use_the_shorter() {
        let a = vec![3i8; 70];
        let b = vec![-2i8; 40];
        assert_eq!(dot(&a, &b), -6 * 40);
        assert_eq!(dot(&b, &a), -6 * 40);
    }

    proptest! {
        #[test]
        fn matches_the_plain_loop(
            rows in (0usize..600).prop_flat_map(|n| (
                proptest::collection::vec(any::<i8>(), n),
                proptest::collection::vec(-127i8..=127, n),
            ))
        ) {
            let (a, b) = rows;
            for (path, got) in every_path(&a, &b) {
                prop_assert_eq!(got, dot_scalar(&a, &b), "{}", path);
            }
        }
    }
}
