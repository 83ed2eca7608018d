// quantise: a tensor in its dtype to the int8 or q4 tier, as the store's encoder does
// (mlx's affine quantiser step for step in f32: the group's range anchored at its
// larger end, divisions, ties rounded to even), one invocation per group of 32. It
// writes every group's packed codes, then each group's scale and bias as f32, which
// the host rounds to the dtype with the store's own rounding.

@group(0) @binding(5) var<storage, read_write> words: array<u32>;

const EPS: f32 = 1.0e-7;

// Element `i` of the input tensor (its dtype) at word 0 of `kv`.
fn input(i: u32) -> f32 {
    return element(p.dtype, 0u, i * dtype_size(p.dtype));
}

// Quantises group `g`: writes its codes; returns its (scale, bias) in f32.
fn group(g: u32, levels: f32) -> vec2<f32> {
    var lo = 3.4028235e38;
    var hi = -3.4028235e38;
    for (var j = 0u; j < 32u; j++) {
        let v = input(g * 32u + j);
        if (hi < v) {
            hi = v;
        }
        if (v < lo) {
            lo = v;
        }
    }
    let anchor_lo = abs(lo) > abs(hi);
    let step = (hi - lo) / levels;
    var scale = select(step, EPS, step < EPS);
    if (!anchor_lo) {
        scale = -scale;
    }
    let edge = select(hi, lo, anchor_lo);
    let q0 = round(edge / scale);
    var bias = 0.0;
    if (q0 != 0.0) {
        scale = edge / q0;
        bias = edge;
    }
    let per_word = select(4u, 8u, p.tier == 2u);
    let bits = select(8u, 4u, p.tier == 2u);
    let base = g * (32u / per_word);
    for (var w = 0u; w < 32u / per_word; w++) {
        var word = 0u;
        for (var k = 0u; k < per_word; k++) {
            let v = input(g * 32u + w * per_word + k);
            let q = clamp(round((v - bias) / scale), 0.0, levels);
            word |= u32(q) << (bits * k);
        }
        words[base + w] = word;
    }
    return vec2<f32>(scale, bias);
}

@compute @workgroup_size(64)
fn quantise(@builtin(global_invocation_id) gid: vec3<u32>) {
    let groups = p.tensor_rows * p.head_dim / 32u;
    let g = gid.x;
    if (g >= groups) {
        return;
    }
    let levels = select(255.0, 15.0, p.tier == 2u);
    let code_words = groups * select(8u, 4u, p.tier == 2u);
    let params = group(g, levels);
    // The f32 scale and bias; the host rounds them to the dtype (as the store does).
    words[code_words + g] = bitcast<u32>(params.x);
    words[code_words + groups + g] = bitcast<u32>(params.y);
}
