//! The int8 and q4 tiers against mlx itself: the stored bytes are those of
//! `mx.quantize`, decoding is `mx.dequantize`, and q4 reads and writes mlx's packing
//! (vectors computed once with mlx and kept here as hashes and hex).

use super::tests::{eps, errors, shape, ROLES};
use super::*;

/// FNV-1a (64 bits) of `bytes`: a fingerprint for golden bytes too long to spell
/// out.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

/// Twelve groups of 32, as `[2, 3, 64]`, one case of mlx's quantiser each.
fn mlx_edge_cases() -> Vec<f32> {
    let groups: [fn(f32) -> f32; 12] = [
        // Mixed signs, |max| > |min|: anchored at the maximum, negative scale.
        |j| (j - 12.0) / 4.0,
        // Mixed signs, |min| > |max|: anchored at the minimum.
        |j| (12.0 - j) / 4.0,
        // All negative.
        |j| -1.0 - j * j / 64.0,
        // All positive.
        |j| 0.5 + (j * 29.0 % 32.0) / 8.0,
        // Constant.
        |_| 1.5,
        // Zeros, some of them negative.
        |j| if j % 3.0 == 0.0 { -0.0 } else { 0.0 },
        // Constant, negative, not exact in f16 or bf16.
        |_| -0.3,
        // A range below mlx's smallest scale (1e-7 per step).
        |j| j * 1e-8,
        // Scrambled, over about [-3.1, 3.1].
        |j| ((j * 37.0 % 101.0) - 50.0) / 16.0,
        // Small values and one large negative outlier.
        |j| if j == 7.0 { -20.0 } else { 0.1 * (j % 5.0) },
        // Whole numbers -8..=7: codes land on ties.
        |j| j % 16.0 - 8.0,
        // Large magnitudes.
        |j| (j - 16.0) * 100.0 + 3.0,
    ];
    groups
        .iter()
        .flat_map(|f| (0..GROUP).map(move |j| f(j as f32)))
        .collect()
}

/// `[4, 64, 128]` from a fixed xorshift generator: every group has its own
/// range and offset, so both anchors, positive and negative scales and all codes
/// occur.
fn mlx_mixed() -> Vec<f32> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut x = Vec::with_capacity(4 * 64 * 128);
    for _ in 0..4 * 64 * 128 / GROUP {
        let spread = (1u64 << (next() % 8)) as f32 / 16.0;
        let offset = ((next() % 9) as f32 - 4.0) * 0.75;
        for _ in 0..GROUP {
            x.push(((next() % 8192) as f32 - 4096.0) / 4096.0 * spread + offset);
        }
    }
    x
}

/// `mx.quantize(x, group_size=32, bits=4)` of [`mlx_edge_cases`] in f16, as bytes
/// (mlx 0.32.4, CPU): `w_q` (two groups a line), then the 12 `scales`, then the 12
/// `biases`.
const MLX_EDGE_F16_Q4: &str = concat!(
    "efdecdbcab9a99887766554433221100efdecdbcab9a99887766554433221100",
    "ffffffeeeeddcdbcab9a8977564423011f4275a8db0e316497cafd205386b9ec",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000033232222222222121111111111010000",
    "afe4387db1f54a8ec2065b9fd3286ca0ffffff0fffffffffffffffffffffffff",
    "1032547698badcfe1032547698badcfe102132435465768798a9bacbdcedfeff",
    "39b83938013c1eb4028002800280028040b6553d003c3d5a",
    "c044c0c401cc6044003e0000cdb40500404200cd00c83de6",
);
/// The same with `bits=8`: one group's codes a line.
const MLX_EDGE_F16_INT8: &str = concat!(
    "fff6eee6ded5cdc5bdb5aca49c948c837b736b635a524a423931292119100800",
    "fff6eee6ded5cdc5bdb5aca49c948c837b736b635a524a423931292119100800",
    "fffffefdfbf8f5f2eeeae4dfd9d2cbc3bbb2a99f958a7f7366594c3e2f201000",
    "ff1029425b738ca5bdd6ef0019314a637b94adc5def708213a526b849cb5cee6",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0303030202020202020202020202020101010101010101010101010000000000",
    "ffa143e68829cd6e0fb354f89a3bdf8021c56608ac4df19233d7781abd5f00a4",
    "fafbfcfefffafb00fefffafbfcfefffafbfcfefffafbfcfefffafbfcfefffafb",
    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
    "0008101921293139424a525a626b737b838b949ca4acb4bdc5cdd5dde6eef6fe",
    "cba7cb27892bc7a3028002800280028040a61f2d882b184a",
    "c044c0c401cc6044003e0000cdb40500404200cd00c83de6",
);

/// For each input ([`mlx_edge_cases`] as `[2, 3, 64]`, [`mlx_mixed`] as
/// `[4, 64, 128]`), dtype and bit width: the FNV-1a of the bytes of
/// `mx.quantize(x, group_size=32, bits)` (`w_q`, `scales`, `biases`, one after
/// the other) and of `mx.dequantize` of them (mlx 0.32.4, CPU).
const MLX_GOLDEN: [(&str, DType, u32, u64, u64); 12] = [
    (
        "edge",
        DType::F16,
        4,
        0x0ca5c1f14cc05857,
        0x4b4d82f0f0f13db8,
    ),
    (
        "edge",
        DType::F16,
        8,
        0xd4b12695a3673ee7,
        0xebb371fb05e3dcf6,
    ),
    (
        "edge",
        DType::BF16,
        4,
        0x948da2bfb5925d5d,
        0xc24bffd3597a155b,
    ),
    (
        "edge",
        DType::BF16,
        8,
        0x3e77cd9d55d8b84f,
        0xcb2c124311d320c5,
    ),
    (
        "edge",
        DType::F32,
        4,
        0xcfeaae2e02ef3ce4,
        0xe4aaaac94199375d,
    ),
    (
        "edge",
        DType::F32,
        8,
        0xc52007fb47885158,
        0x97743faa5c9a7faa,
    ),
    (
        "mixed",
        DType::F16,
        4,
        0xc457e51fff9ab41d,
        0x5e9993edec47e7ee,
    ),
    (
        "mixed",
        DType::F16,
        8,
        0xa19dcde1b1178c42,
        0x9b4a3c4acedfc640,
    ),
    (
        "mixed",
        DType::BF16,
        4,
        0x7efa2b39335977ea,
        0xbd263f4c358ae5de,
    ),
    (
        "mixed",
        DType::BF16,
        8,
        0x5b798d42e09e7133,
        0xf6b4e4ec0d71f7c2,
    ),
    (
        "mixed",
        DType::F32,
        4,
        0x6444e033b0e57942,
        0x2fb57eadeae903a1,
    ),
    (
        "mixed",
        DType::F32,
        8,
        0xd5546be067b01905,
        0x50c7995ca820e4a2,
    ),
];

fn mlx_input(name: &str) -> (Shape, Vec<f32>) {
    match name {
        "edge" => (shape(2, 3, 64), mlx_edge_cases()),
        _ => (shape(4, 64, 128), mlx_mixed()),
    }
}

fn tier_of_bits(bits: u32) -> Tier {
    if bits == 8 {
        Tier::Int8
    } else {
        Tier::Q4
    }
}

/// `int8` and `q4` store exactly the bytes of `mx.quantize`, for every input dtype
/// and for keys and values alike.
#[test]
fn int8_and_q4_store_the_bytes_of_mx_quantize() {
    let s = shape(2, 3, 64);
    let x = from_f32(DType::F16, &mlx_edge_cases());
    for (tier, expected) in [(Tier::Q4, MLX_EDGE_F16_Q4), (Tier::Int8, MLX_EDGE_F16_INT8)] {
        for role in ROLES {
            let enc = encode(tier, DType::F16, s, role, &x).expect("encodes");
            assert_eq!(hex(&enc), expected, "{} {}", tier.name(), role.name());
        }
    }
    for (name, dtype, bits, quantized, _) in MLX_GOLDEN {
        let (s, x) = mlx_input(name);
        let tier = tier_of_bits(bits);
        for role in ROLES {
            let enc = encode(tier, dtype, s, role, &from_f32(dtype, &x)).expect("encodes");
            assert_eq!(
                fnv1a(&enc),
                quantized,
                "{name} {} {} {}: {}",
                dtype.name(),
                tier.name(),
                role.name(),
                hex(&enc)
            );
        }
    }
}

/// `decode` computes what `mx.dequantize` does, `scale * q + bias`: bit for bit
/// for f32. For f16 and bf16 mlx rounds the product to the dtype before adding the
/// bias, where `decode` rounds once, at the end; with that extra rounding
/// reproduced the bytes are mlx's exactly, and without it `decode` is within the
/// rounding of the product.
#[test]
fn decode_is_mx_dequantize() {
    for (name, dtype, bits, _, dequantized) in MLX_GOLDEN {
        let (s, x) = mlx_input(name);
        let tier = tier_of_bits(bits);
        let enc = encode(tier, dtype, s, Role::Keys, &from_f32(dtype, &x)).expect("encodes");
        let dec = decode(tier, dtype, s, Role::Keys, &enc).expect("decodes");
        let ours = to_f32(dtype, &dec).expect("whole elements");
        // mlx's arithmetic: the product, then the sum, each rounded to the dtype.
        let layout = layout(tier, bits, dtype, s, Role::Keys).expect("layout");
        let (packed, params) = enc.split_at(layout.code_bytes);
        let (scales, biases) = params.split_at(layout.param_bytes);
        let scales = to_f32(dtype, scales).expect("whole elements");
        let biases = to_f32(dtype, biases).expect("whole elements");
        let codes = unpack(packed, bits, layout.elements);
        let mlx: Vec<f32> = codes
            .iter()
            .enumerate()
            .map(|(i, &q)| {
                let g = i / GROUP;
                round_to(dtype, round_to(dtype, scales[g] * f32::from(q)) + biases[g])
            })
            .collect();
        assert_eq!(
            fnv1a(&from_f32(dtype, &mlx)),
            dequantized,
            "{name} {} {}",
            dtype.name(),
            tier.name()
        );
        if dtype == DType::F32 {
            assert_eq!(fnv1a(&dec), dequantized, "{name} f32 {}", tier.name());
        }
        for (i, (&a, &b)) in ours.iter().zip(&mlx).enumerate() {
            let g = i / GROUP;
            // Both are within half a unit of the dtype of the exact value; mlx's
            // product is also off by half a unit of the product.
            let product = (scales[g] * f32::from(codes[i])).abs();
            let tol = (a.abs() + b.abs() + product) * eps(dtype) / 2.0;
            assert!(
                (a - b).abs() <= tol,
                "{name} {} {} element {i}: {a} vs mlx {b}",
                dtype.name(),
                tier.name()
            );
        }
    }
}

/// The bytes of `mx.quantize(x, group_size=32, bits=4)` for a known `x`, with the
/// codes written as `u32` words (so the bit order of the packing is checked on its
/// own), are what `encode` gives, and decode here to what `mx.dequantize` gives
/// (mlx 0.32, f16), so mlx-packed blocks and blocks from this module are the same
/// thing.
#[test]
fn q4_reads_and_writes_mlx_packing() {
    // x[i] = (((i * 37) % 101) - 50) / 16, exact in f16, as [1, 2, 64].
    let x: Vec<f32> = (0..128)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 16.0)
        .collect();
    let words: [u32; 16] = [
        0x7d38e4af, 0x8e4af5b1, 0x9f5b06c2, 0xa06c28d3, 0xb17d39f4, 0xd28e4af5, 0xe39f5b07,
        0xf4a06c28, 0x0a4f93d7, 0xf93e82c6, 0xe82d70b5, 0xd71b5fa4, 0xc60a4f93, 0xb5f93d82,
        0xa4e82c60, 0x83d71b5f,
    ];
    let scales: [u16; 4] = [0xb640, 0xb620, 0x3620, 0x3640];
    let biases: [u16; 4] = [0x4240, 0x4220, 0xc220, 0xc240];
    let mut mlx = Vec::new();
    for w in words {
        mlx.extend_from_slice(&w.to_le_bytes());
    }
    for p in scales.iter().chain(&biases) {
        mlx.extend_from_slice(&p.to_le_bytes());
    }
    let s = shape(1, 2, 64);
    let enc = encode(
        Tier::Q4,
        DType::F16,
        s,
        Role::Keys,
        &from_f32(DType::F16, &x),
    )
    .expect("encodes");
    assert_eq!(hex(&enc), hex(&mlx));
    let ours = decode(Tier::Q4, DType::F16, s, Role::Keys, &mlx).expect("decodes");
    let ours = to_f32(DType::F16, &ours).expect("whole elements");
    // mx.dequantize of those bytes, as f16 bits.
    let expected = unhex(concat!(
        "78c140ba403eb0c00000d03fd0bf40367841b0bcb03c78c140ba403eb0c00000",
        "b04040be403a4042b0bcb03c78c140b6d03fd0bf0000b04040be403a404240ba",
        "203e5cc120b6a83fa8bf20365c4198bc983c5cc120ba203e98c000009840a8bf",
        "2036204298bc983c5cc120b6a83f98c00000984020be203a204220ba203e5cc1",
        "20b6a83fa8bf20365c4120be203a20c220ba203e98c000009840a8bf20365c41",
        "98bc983c20c220b6a83f98c00000984020be203a5c4198bc983c5cc120b6a83f",
        "d0bf4036784140be403a40c240ba403eb0c00000d03fd0bf40367841b0bcb03c",
        "40c240ba403eb0c00000b04040be403a7841b0bcb03c78c140b6d03fd0bf0000",
    ));
    let expected = to_f32(DType::F16, &expected).expect("whole elements");
    for (i, (&a, &b)) in ours.iter().zip(&expected).enumerate() {
        // mlx rounds once more (to f16 between the multiply and the add).
        assert!(
            (a - b).abs() <= b.abs() / 1024.0,
            "element {i}: {a} vs mlx {b}"
        );
    }
    // Within the error bound of `every_element_within_its_error_bound`, 15/16 of a
    // step, the step of these groups being at most 6.25 / 15; mlx reaches it here
    // (0.390625).
    let (max_abs, _, _) = errors(&x, &ours, 64);
    assert!(max_abs <= 6.25 / 16.0 + 0.01, "{max_abs}");
}
