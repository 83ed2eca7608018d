// block_select's scores: one invocation per (block, KV head) scores the block's
// summary against every query row the head serves (Quest's bound or the mean key's
// score) and keeps the largest, laid out [kv_heads, blocks]. The host ranks them.

@group(0) @binding(2) var<storage, read> summaries: array<f32>;
@group(0) @binding(4) var<storage, read> q: array<f32>;
@group(0) @binding(5) var<storage, read_write> scores: array<f32>;

@compute @workgroup_size(64)
fn score(@builtin(global_invocation_id) gid: vec3<u32>) {
    let d = p.head_dim;
    let b = gid.x % p.blocks;
    let head = gid.x / p.blocks;
    if (head >= p.kv_heads) {
        return;
    }
    let at = ((b * p.kv_heads + head) * 3u) * d;
    var best = NONE;
    for (var r = 0u; r < p.rows; r++) {
        let qb = ((r / p.group) * p.q_heads + head * p.group + r % p.group) * d;
        var s = 0.0;
        for (var j = 0u; j < d; j++) {
            let x = q[qb + j];
            if (p.score_mode == 0u) {
                s += max(x * summaries[at + d + j], x * summaries[at + 2u * d + j]);
            } else {
                s += x * summaries[at + j];
            }
        }
        best = max(best, s);
    }
    scores[head * p.blocks + b] = best;
}
