// Declarations every kernel shares: the parameters, the block table, and how an
// element of a stored tensor is loaded (dequantised in the load, never copied).
// The host prepends this file to each kernel's source.

struct Params {
    kv_heads: u32,
    head_dim: u32,
    q_heads: u32,
    positions: u32,
    group: u32,
    rows: u32,
    max_list: u32,
    // 0: as given, 1: int8, 2: q4.
    tier: u32,
    // 0: f16, 1: bf16, 2: f32 (the elements', and the scales' and biases').
    dtype: u32,
    code_row_bytes: u32,
    param_row_bytes: u32,
    // 0: Quest's bound, 1: the mean key (block scores).
    score_mode: u32,
    blocks: u32,
    // Rows of the tensor dequantise reads (it sees one head of that many tokens).
    tensor_rows: u32,
    pad0: u32,
    pad1: u32,
}

struct BlockRef {
    tokens: u32,
    // Word offsets of the block's stored K and V in `kv`.
    keys: u32,
    values: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> kv: array<u32>;
@group(0) @binding(7) var<uniform> p: Params;

// "No maximum yet": below any score, and never fed to exp() as an infinity (shaders
// may assume finite arithmetic).
const NONE: f32 = -1.0e30;
const NEG_INF_BITS: u32 = 0xff800000u;

fn dtype_size(dtype: u32) -> u32 {
    return select(2u, 4u, dtype == 2u);
}

// The element of `dtype` at byte `at` (a multiple of its size) of the tensor at word
// `base`.
fn element(dtype: u32, base: u32, at: u32) -> f32 {
    let w = kv[base + at / 4u];
    if (dtype == 2u) {
        return bitcast<f32>(w);
    }
    let high = (at & 2u) != 0u;
    if (dtype == 1u) {
        let bits = select(w & 0xffffu, w >> 16u, high);
        return bitcast<f32>(bits << 16u);
    }
    let v = unpack2x16float(w);
    return select(v.x, v.y, high);
}

// Element `j` of token `tok` of KV head `head` of a stored tensor of `tokens` rows per
// head at word `base`, in f32.
fn load(base: u32, tokens: u32, head: u32, tok: u32, j: u32) -> f32 {
    let d = p.head_dim;
    let row = head * tokens + tok;
    if (p.tier == 0u) {
        return element(p.dtype, base, (row * d + j) * dtype_size(p.dtype));
    }
    var code: u32;
    if (p.tier == 1u) {
        let at = row * p.code_row_bytes + j;
        code = (kv[base + at / 4u] >> (8u * (at % 4u))) & 0xffu;
    } else {
        let bit = row * p.code_row_bytes * 8u + 4u * j;
        code = (kv[base + bit / 32u] >> (bit % 32u)) & 0xfu;
    }
    let all_rows = p.kv_heads * tokens;
    let scales = all_rows * p.code_row_bytes;
    let biases = scales + all_rows * p.param_row_bytes;
    let size = dtype_size(p.dtype);
    let g = row * (d / 32u) + j / 32u;
    let s = element(p.dtype, base, scales + g * size);
    let b = element(p.dtype, base, biases + g * size);
    return s * f32(code) + b;
}
