// decode_partial / sparse_partial: one workgroup per (entry of a KV head's block list,
// KV head). The head's query rows (positions × its GQA group) share every K/V load:
// in tiles of 64 tokens, each thread scores one token against all rows, the rows'
// online-softmax state is updated, then each thread accumulates its dimensions of V
// into all rows. Each workgroup writes its block's partial state; merge.wgsl joins
// them in block order.

@group(0) @binding(1) var<storage, read> blocks: array<BlockRef>;
@group(0) @binding(2) var<storage, read> lists: array<u32>;
@group(0) @binding(3) var<storage, read> counts: array<u32>;
@group(0) @binding(4) var<storage, read> q: array<f32>;
@group(0) @binding(5) var<storage, read_write> part_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> part_lse: array<f32>;

const TILE: u32 = 64u;
const MAX_ROWS: u32 = 32u;
// head_dim <= 256: each thread owns up to 4 of a row's dimensions.
const MAX_DIMS: u32 = 4u;

var<workgroup> weights: array<f32, 2048>;
var<workgroup> row_max: array<f32, 32>;
var<workgroup> row_sum: array<f32, 32>;
var<workgroup> row_corr: array<f32, 32>;
var<workgroup> wg_tokens: u32;
var<workgroup> wg_active: u32;

// The query row `r` of KV head `head` starts here in `q`.
fn query_base(head: u32, r: u32) -> u32 {
    let pos = r / p.group;
    let g = r % p.group;
    return (pos * p.q_heads + head * p.group + g) * p.head_dim;
}

@compute @workgroup_size(64)
fn attend(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let item = wg.x;
    let head = wg.y;
    let rows = p.rows;
    let d = p.head_dim;
    if (lid == 0u) {
        var live = 0u;
        var tokens = 0u;
        if (item < counts[head]) {
            live = 1u;
            tokens = blocks[lists[head * p.max_list + item]].tokens;
        }
        wg_active = live;
        wg_tokens = tokens;
    }
    if (lid < MAX_ROWS) {
        row_max[lid] = NONE;
        row_sum[lid] = 0.0;
        row_corr[lid] = 0.0;
    }
    let live = workgroupUniformLoad(&wg_active);
    let tokens = workgroupUniformLoad(&wg_tokens);
    let out_row = (head * p.max_list + item) * rows;
    if (live == 0u) {
        for (var r = 0u; r < rows; r++) {
            for (var j = lid; j < d; j += TILE) {
                part_out[(out_row + r) * d + j] = 0.0;
            }
            if (lid == 0u) {
                part_lse[out_row + r] = NONE;
            }
        }
        return;
    }
    let blk = blocks[lists[head * p.max_list + item]];
    var acc: array<f32, 128>;
    for (var t0 = 0u; t0 < tokens; t0 += TILE) {
        let tok = t0 + lid;
        let n = min(TILE, tokens - t0);
        // Scores of this thread's token against every row.
        var s: array<f32, 32>;
        if (tok < tokens) {
            for (var j = 0u; j < d; j++) {
                let k = load(blk.keys, tokens, head, tok, j);
                for (var r = 0u; r < rows; r++) {
                    s[r] += q[query_base(head, r) + j] * k;
                }
            }
        }
        for (var r = 0u; r < rows; r++) {
            weights[r * TILE + lid] = select(NONE, s[r], tok < tokens);
        }
        workgroupBarrier();
        // Each row's running maximum and sum; the tile's scores become weights.
        if (lid < rows) {
            let r = lid;
            let old = row_max[r];
            var m = old;
            for (var t = 0u; t < n; t++) {
                m = max(m, weights[r * TILE + t]);
            }
            let corr = select(exp(old - m), 0.0, old == NONE);
            var sum = 0.0;
            for (var t = 0u; t < TILE; t++) {
                var e = 0.0;
                if (t < n) {
                    e = exp(weights[r * TILE + t] - m);
                }
                weights[r * TILE + t] = e;
                sum += e;
            }
            row_sum[r] = row_sum[r] * corr + sum;
            row_max[r] = m;
            row_corr[r] = corr;
        }
        workgroupBarrier();
        // This thread's dimensions of V, into every row.
        for (var dd = 0u; dd < MAX_DIMS; dd++) {
            let j = lid + dd * TILE;
            if (j < d) {
                for (var r = 0u; r < rows; r++) {
                    acc[r * MAX_DIMS + dd] *= row_corr[r];
                }
                for (var t = 0u; t < n; t++) {
                    let v = load(blk.values, tokens, head, t0 + t, j);
                    for (var r = 0u; r < rows; r++) {
                        acc[r * MAX_DIMS + dd] += weights[r * TILE + t] * v;
                    }
                }
            }
        }
        workgroupBarrier();
    }
    for (var r = 0u; r < rows; r++) {
        let l = row_sum[r];
        for (var dd = 0u; dd < MAX_DIMS; dd++) {
            let j = lid + dd * TILE;
            if (j < d) {
                part_out[(out_row + r) * d + j] = select(acc[r * MAX_DIMS + dd] / l, 0.0, l == 0.0);
            }
        }
        if (lid == 0u) {
            // An entry with no keys has LSE NONE: merge.wgsl gives it weight 0.
            part_lse[out_row + r] = select(row_max[r] + log(l), NONE, l == 0.0);
        }
    }
}
