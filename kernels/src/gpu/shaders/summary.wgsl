// block_summary: one invocation per (block, KV head, dimension) walks the block's
// keys and writes the mean, minimum and maximum of that dimension, laid out
// [blocks, kv_heads, 3, head_dim].

@group(0) @binding(1) var<storage, read> blocks: array<BlockRef>;
@group(0) @binding(5) var<storage, read_write> summaries: array<f32>;

@compute @workgroup_size(64)
fn summarise(@builtin(global_invocation_id) gid: vec3<u32>) {
    let d = p.head_dim;
    let j = gid.x % d;
    let head = (gid.x / d) % p.kv_heads;
    let b = gid.x / (d * p.kv_heads);
    if (b >= p.blocks) {
        return;
    }
    let blk = blocks[b];
    var sum = 0.0;
    var lo = 0.0;
    var hi = 0.0;
    for (var t = 0u; t < blk.tokens; t++) {
        let k = load(blk.keys, blk.tokens, head, t, j);
        sum += k;
        if (t == 0u) {
            lo = k;
            hi = k;
        } else {
            lo = min(lo, k);
            hi = max(hi, k);
        }
    }
    let at = ((b * p.kv_heads + head) * 3u) * d + j;
    summaries[at] = select(sum / f32(blk.tokens), 0.0, blk.tokens == 0u);
    summaries[at + d] = lo;
    summaries[at + 2u * d] = hi;
}
