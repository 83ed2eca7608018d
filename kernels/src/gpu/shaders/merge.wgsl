// merge_states over the partial states attend.wgsl wrote: one invocation per (KV
// head, query row) joins that head's list entries exactly (the largest LSE first
// subtracted, so no exp overflows; entries with no keys, LSE NONE, weigh 0), and
// writes the row of the final state in [positions, q_heads] order, with LSE -inf for
// a row that saw no keys at all.

@group(0) @binding(3) var<storage, read> counts: array<u32>;
@group(0) @binding(4) var<storage, read> part_out: array<f32>;
@group(0) @binding(5) var<storage, read> part_lse: array<f32>;
@group(0) @binding(6) var<storage, read_write> merged: array<f32>;

// An entry's weight against the largest LSE `m`: 0 for an entry with no keys.
fn weight(lse: f32, m: f32) -> f32 {
    return select(exp(lse - m), 0.0, lse == NONE);
}

@compute @workgroup_size(64)
fn merge(@builtin(global_invocation_id) gid: vec3<u32>) {
    let rows = p.rows;
    let d = p.head_dim;
    let head = gid.x / rows;
    let r = gid.x % rows;
    if (head >= p.kv_heads) {
        return;
    }
    let n = counts[head];
    let first = head * p.max_list * rows + r;
    var m = NONE;
    for (var i = 0u; i < n; i++) {
        m = max(m, part_lse[first + i * rows]);
    }
    let pos = r / p.group;
    let g = r % p.group;
    let row = pos * p.q_heads + head * p.group + g;
    // `merged`: [rows of the output, head_dim] outputs, then one LSE per row.
    let lse_at = p.positions * p.q_heads * d + row;
    var total = 0.0;
    for (var i = 0u; i < n; i++) {
        total += weight(part_lse[first + i * rows], m);
    }
    for (var j = 0u; j < d; j++) {
        var x = 0.0;
        for (var i = 0u; i < n; i++) {
            let w = weight(part_lse[first + i * rows], m);
            x += w * part_out[(first + i * rows) * d + j];
        }
        merged[row * d + j] = select(x / total, 0.0, total == 0.0);
    }
    if (total == 0.0) {
        merged[lse_at] = bitcast<f32>(NEG_INF_BITS);
    } else {
        merged[lse_at] = m + log(total);
    }
}
