// dequantise: an int8 or q4 tensor back to its dtype, as the store's decoder does
// (`scale * code + bias` in f32, rounded to the dtype), one invocation per output
// word (two f16/bf16 elements, or one f32). The tensor is read as one head of
// `tensor_rows` rows of head_dim.

@group(0) @binding(5) var<storage, read_write> words: array<u32>;

// f32 to bf16 bits, rounding to nearest even (NaN stays a quiet NaN of its sign).
fn bf16_bits(x: f32) -> u32 {
    let u = bitcast<u32>(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return (u >> 16u) | 0x40u;
    }
    return (u + 0x7fffu + ((u >> 16u) & 1u)) >> 16u;
}

fn value(i: u32) -> f32 {
    return load(0u, p.tensor_rows, 0u, i / p.head_dim, i % p.head_dim);
}

@compute @workgroup_size(64)
fn dequantise(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = gid.x;
    let elements = p.tensor_rows * p.head_dim;
    if (p.dtype == 2u) {
        if (w < elements) {
            words[w] = bitcast<u32>(value(w));
        }
        return;
    }
    if (2u * w >= elements) {
        return;
    }
    // head_dim is a multiple of 32, so elements come in whole pairs.
    let a = value(2u * w);
    let b = value(2u * w + 1u);
    if (p.dtype == 1u) {
        words[w] = bf16_bits(a) | (bf16_bits(b) << 16u);
    } else {
        words[w] = pack2x16float(vec2<f32>(a, b));
    }
}
