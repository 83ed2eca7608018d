//! Doubles as Redis 7.2+ prints them in replies: Grisu2 (Loitsch, "Printing
//! Floating-Point Numbers Quickly and Accurately with Integers", 2010). Grisu2 gives
//! digits that always read back as the same double and are nearly always the
//! shortest; where they are not, clients still see Redis's exact text, so Pion
//! reproduces the algorithm rather than printing the true shortest form.

/// Normalised 64-bit significands and binary exponents of `10^k` for
/// `k = -348, -340, …, 340`, rounded to nearest.
const CACHED_POWERS: [(u64, i32); 87] = [
    (0xfa8fd5a0081c0288, -1220),
    (0xbaaee17fa23ebf76, -1193),
    (0x8b16fb203055ac76, -1166),
    (0xcf42894a5dce35ea, -1140),
    (0x9a6bb0aa55653b2d, -1113),
    (0xe61acf033d1a45df, -1087),
    (0xab70fe17c79ac6ca, -1060),
    (0xff77b1fcbebcdc4f, -1034),
    (0xbe5691ef416bd60c, -1007),
    (0x8dd01fad907ffc3c, -980),
    (0xd3515c2831559a83, -954),
    (0x9d71ac8fada6c9b5, -927),
    (0xea9c227723ee8bcb, -901),
    (0xaecc49914078536d, -874),
    (0x823c12795db6ce57, -847),
    (0xc21094364dfb5637, -821),
    (0x9096ea6f3848984f, -794),
    (0xd77485cb25823ac7, -768),
    (0xa086cfcd97bf97f4, -741),
    (0xef340a98172aace5, -715),
    (0xb23867fb2a35b28e, -688),
    (0x84c8d4dfd2c63f3b, -661),
    (0xc5dd44271ad3cdba, -635),
    (0x936b9fcebb25c996, -608),
    (0xdbac6c247d62a584, -582),
    (0xa3ab66580d5fdaf6, -555),
    (0xf3e2f893dec3f126, -529),
    (0xb5b5ada8aaff80b8, -502),
    (0x87625f056c7c4a8b, -475),
    (0xc9bcff6034c13053, -449),
    (0x964e858c91ba2655, -422),
    (0xdff9772470297ebd, -396),
    (0xa6dfbd9fb8e5b88f, -369),
    (0xf8a95fcf88747d94, -343),
    (0xb94470938fa89bcf, -316),
    (0x8a08f0f8bf0f156b, -289),
    (0xcdb02555653131b6, -263),
    (0x993fe2c6d07b7fac, -236),
    (0xe45c10c42a2b3b06, -210),
    (0xaa242499697392d3, -183),
    (0xfd87b5f28300ca0e, -157),
    (0xbce5086492111aeb, -130),
    (0x8cbccc096f5088cc, -103),
    (0xd1b71758e219652c, -77),
    (0x9c40000000000000, -50),
    (0xe8d4a51000000000, -24),
    (0xad78ebc5ac620000, 3),
    (0x813f3978f8940984, 30),
    (0xc097ce7bc90715b3, 56),
    (0x8f7e32ce7bea5c70, 83),
    (0xd5d238a4abe98068, 109),
    (0x9f4f2726179a2245, 136),
    (0xed63a231d4c4fb27, 162),
    (0xb0de65388cc8ada8, 189),
    (0x83c7088e1aab65db, 216),
    (0xc45d1df942711d9a, 242),
    (0x924d692ca61be758, 269),
    (0xda01ee641a708dea, 295),
    (0xa26da3999aef774a, 322),
    (0xf209787bb47d6b85, 348),
    (0xb454e4a179dd1877, 375),
    (0x865b86925b9bc5c2, 402),
    (0xc83553c5c8965d3d, 428),
    (0x952ab45cfa97a0b3, 455),
    (0xde469fbd99a05fe3, 481),
    (0xa59bc234db398c25, 508),
    (0xf6c69a72a3989f5c, 534),
    (0xb7dcbf5354e9bece, 561),
    (0x88fcf317f22241e2, 588),
    (0xcc20ce9bd35c78a5, 614),
    (0x98165af37b2153df, 641),
    (0xe2a0b5dc971f303a, 667),
    (0xa8d9d1535ce3b396, 694),
    (0xfb9b7cd9a4a7443c, 720),
    (0xbb764c4ca7a44410, 747),
    (0x8bab8eefb6409c1a, 774),
    (0xd01fef10a657842c, 800),
    (0x9b10a4e5e9913129, 827),
    (0xe7109bfba19c0c9d, 853),
    (0xac2820d9623bf429, 880),
    (0x80444b5e7aa7cf85, 907),
    (0xbf21e44003acdd2d, 933),
    (0x8e679c2f5e44ff8f, 960),
    (0xd433179d9c8cb841, 986),
    (0x9e19db92b4e31ba9, 1013),
    (0xeb96bf6ebadf77d9, 1039),
    (0xaf87023b9bf0ee6b, 1066),
];

const FIRST_POWER: i32 = -348;
const POWER_STEP: i32 = 8;
const HIDDEN_BIT: u64 = 1 << 52;
const FRAC_MASK: u64 = HIDDEN_BIT - 1;
const EXP_BIAS: i32 = 1075;

#[derive(Clone, Copy)]
struct Fp {
    frac: u64,
    exp: i32,
}

fn build(d: f64) -> Fp {
    let bits = d.to_bits();
    let frac = bits & FRAC_MASK;
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp != 0 {
        Fp {
            frac: frac + HIDDEN_BIT,
            exp: exp - EXP_BIAS,
        }
    } else {
        Fp {
            frac,
            exp: 1 - EXP_BIAS,
        }
    }
}

fn normalize(mut fp: Fp) -> Fp {
    while fp.frac & HIDDEN_BIT == 0 {
        fp.frac <<= 1;
        fp.exp -= 1;
    }
    Fp {
        frac: fp.frac << 11,
        exp: fp.exp - 11,
    }
}

/// The neighbours' midpoints below and above `fp`, normalised to one exponent.
fn boundaries(fp: Fp) -> (Fp, Fp) {
    let mut upper = Fp {
        frac: (fp.frac << 1) + 1,
        exp: fp.exp - 1,
    };
    while upper.frac & (HIDDEN_BIT << 1) == 0 {
        upper.frac <<= 1;
        upper.exp -= 1;
    }
    upper.frac <<= 10;
    upper.exp -= 10;
    let l_shift = if fp.frac == HIDDEN_BIT { 2 } else { 1 };
    let lower = Fp {
        frac: ((fp.frac << l_shift) - 1) << ((fp.exp - l_shift) - upper.exp),
        exp: upper.exp,
    };
    (lower, upper)
}

fn multiply(a: Fp, b: Fp) -> Fp {
    let lo = 0xFFFF_FFFFu64;
    let ah_bl = (a.frac >> 32) * (b.frac & lo);
    let al_bh = (a.frac & lo) * (b.frac >> 32);
    let al_bl = (a.frac & lo) * (b.frac & lo);
    let ah_bh = (a.frac >> 32) * (b.frac >> 32);
    let mut tmp = (ah_bl & lo) + (al_bh & lo) + (al_bl >> 32);
    tmp += 1 << 31;
    Fp {
        frac: ah_bh + (ah_bl >> 32) + (al_bh >> 32) + (tmp >> 32),
        exp: a.exp + b.exp + 64,
    }
}

/// The cached power that brings a number of binary exponent `exp` into range, and
/// its decimal exponent.
fn cached_power(exp: i32) -> (Fp, i32) {
    let approx = (-(f64::from(exp) + 87.0) * 0.301_029_995_663_981_14) as i32;
    let mut idx = ((approx - FIRST_POWER) / POWER_STEP).clamp(0, 86) as usize;
    loop {
        let (frac, e) = CACHED_POWERS[idx];
        let current = exp + e + 64;
        if current < -60 && idx < 86 {
            idx += 1;
        } else if current > -32 && idx > 0 {
            idx -= 1;
        } else {
            return (Fp { frac, exp: e }, FIRST_POWER + idx as i32 * POWER_STEP);
        }
    }
}

fn round_digit(digits: &mut [u8], delta: u64, mut rem: u64, kappa: u64, frac: u64) {
    let Some(last) = digits.last_mut() else {
        return;
    };
    while rem < frac
        && delta - rem >= kappa
        && (rem.wrapping_add(kappa) < frac || frac - rem > rem.wrapping_add(kappa) - frac)
    {
        *last -= 1;
        rem += kappa;
    }
}

const TENS: [u64; 20] = [
    10_000_000_000_000_000_000,
    1_000_000_000_000_000_000,
    100_000_000_000_000_000,
    10_000_000_000_000_000,
    1_000_000_000_000_000,
    100_000_000_000_000,
    10_000_000_000_000,
    1_000_000_000_000,
    100_000_000_000,
    10_000_000_000,
    1_000_000_000,
    100_000_000,
    10_000_000,
    1_000_000,
    100_000,
    10_000,
    1_000,
    100,
    10,
    1,
];

fn generate(fp: Fp, upper: Fp, lower: Fp, k: &mut i32) -> Vec<u8> {
    let wfrac = upper.frac - fp.frac;
    let mut delta = upper.frac - lower.frac;
    let shift = -upper.exp;
    let one = 1u64 << shift;
    let mut part1 = upper.frac >> shift;
    let mut part2 = upper.frac & (one - 1);
    let mut digits = Vec::with_capacity(18);
    let mut kappa = 10;
    for &div in &TENS[10..] {
        if kappa <= 0 {
            break;
        }
        let digit = part1 / div;
        if digit != 0 || !digits.is_empty() {
            digits.push(b'0' + digit as u8);
        }
        part1 -= digit * div;
        kappa -= 1;
        let tmp = (part1 << shift) + part2;
        if tmp <= delta {
            *k += kappa;
            round_digit(&mut digits, delta, tmp, div << shift, wfrac);
            return digits;
        }
    }
    let mut unit = 18;
    loop {
        part2 = part2.wrapping_mul(10);
        delta = delta.wrapping_mul(10);
        kappa -= 1;
        let digit = part2 >> shift;
        if digit != 0 || !digits.is_empty() {
            digits.push(b'0' + digit as u8);
        }
        part2 &= one - 1;
        if part2 < delta || digits.len() > 24 {
            *k += kappa;
            round_digit(
                &mut digits,
                delta,
                part2,
                one,
                wfrac.wrapping_mul(TENS[unit]),
            );
            return digits;
        }
        unit = unit.saturating_sub(1);
    }
}

fn grisu2(d: f64) -> (Vec<u8>, i32) {
    let w = build(d);
    let (lower, upper) = boundaries(w);
    let w = normalize(w);
    let (cp, k) = cached_power(upper.exp);
    let w = multiply(w, cp);
    let mut upper = multiply(upper, cp);
    let mut lower = multiply(lower, cp);
    lower.frac += 1;
    upper.frac -= 1;
    let mut exp10 = -k;
    let digits = generate(w, upper, lower, &mut exp10);
    (digits, exp10)
}

/// Lays out `digits × 10^k` as plain integer, plain decimal or scientific notation.
fn emit(digits: &[u8], k: i32, neg: bool, out: &mut String) {
    let nd = digits.len() as i32;
    let exp = (k + nd - 1).abs();
    let text = |d: &[u8]| String::from_utf8_lossy(d).into_owned();
    if k >= 0 && exp < nd + 7 {
        out.push_str(&text(digits));
        out.extend(std::iter::repeat_n('0', k as usize));
        return;
    }
    if k < 0 && (k > -7 || exp < 4) {
        let offset = nd - k.abs();
        if offset <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-offset) as usize));
            out.push_str(&text(digits));
        } else {
            let offset = offset as usize;
            out.push_str(&text(&digits[..offset]));
            out.push('.');
            out.push_str(&text(&digits[offset..]));
        }
        return;
    }
    let nd = nd.min(18 - i32::from(neg)) as usize;
    out.push(char::from(digits[0]));
    if nd > 1 {
        out.push('.');
        out.push_str(&text(&digits[1..nd]));
    }
    out.push('e');
    out.push(if k + digits.len() as i32 - 1 < 0 {
        '-'
    } else {
        '+'
    });
    let mut exp = exp;
    let mut cent = 0;
    if exp > 99 {
        cent = exp / 100;
        out.push(char::from(b'0' + cent as u8));
        exp -= cent * 100;
    }
    if exp > 9 {
        let dec = exp / 10;
        out.push(char::from(b'0' + dec as u8));
        exp -= dec * 10;
    } else if cent != 0 {
        out.push('0');
    }
    out.push(char::from(b'0' + exp as u8));
}

/// Formats a double as Redis's replies do (`fpconv_dtoa`): Grisu2 digits, plain
/// notation for moderate exponents, `inf`/`-inf`/`nan` spelled out.
pub fn dtoa(d: f64) -> String {
    if d.is_nan() {
        return "nan".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if d == 0.0 {
        return if d.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let mut out = String::new();
    let neg = d < 0.0;
    if neg {
        out.push('-');
    }
    let (digits, k) = grisu2(d.abs());
    emit(&digits, k, neg, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::dtoa;

    #[test]
    fn matches_redis_on_scores() {
        assert_eq!(dtoa(0.8535533845424652), "0.8535533845424652");
        assert_eq!(dtoa(0.2669215798377991), "0.26692157983779907");
        assert_eq!(dtoa(0.029639601707458496), "0.029639601707458496");
        assert_eq!(dtoa(1.0), "1");
        assert_eq!(dtoa(0.5), "0.5");
        assert_eq!(dtoa(-0.9842519760131836), "-0.9842519760131836");
    }

    #[test]
    fn round_trips() {
        let mut x = 0.000_123_456_789_f64;
        for _ in 0..2000 {
            let s = dtoa(x);
            assert_eq!(s.parse::<f64>().ok(), Some(x), "{x} printed as {s}");
            x = x * 1.618_033_988_7 + 1e-3;
            if x > 1e30 {
                x = x.sqrt().recip();
            }
        }
    }
}
