//! Vector data for the search harnesses: TEXMEX `.fvecs`/`.ivecs` readers, exact
//! cosine top-k by brute force (the ground truth for subsets and filters), recall, and
//! the "QPS at matched recall" pairing used to compare two engines' sweeps.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

fn read_vecs(path: &Path) -> Result<(usize, Vec<[u8; 4]>), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() < 4 {
        return Err(format!("{}: empty", path.display()));
    }
    let dim = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
    let rec = 4 * (dim + 1);
    if dim == 0 || !bytes.len().is_multiple_of(rec) {
        return Err(format!("{}: not a vecs file", path.display()));
    }
    let mut out = Vec::with_capacity(bytes.len() / rec * dim);
    for r in bytes.chunks_exact(rec) {
        out.extend(r[4..].chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]));
    }
    Ok((dim, out))
}

/// Reads an `.fvecs` file: its dimension and the rows, concatenated.
pub fn fvecs(path: &Path) -> Result<(usize, Vec<f32>), String> {
    let (d, raw) = read_vecs(path)?;
    Ok((d, raw.into_iter().map(f32::from_le_bytes).collect()))
}

/// Reads an `.ivecs` file: its row length and the rows, concatenated.
pub fn ivecs(path: &Path) -> Result<(usize, Vec<u32>), String> {
    let (d, raw) = read_vecs(path)?;
    Ok((d, raw.into_iter().map(u32::from_le_bytes).collect()))
}

/// A vector as the little-endian FLOAT32 blob that `HSET`, `FT.SEARCH … PARAMS` and
/// `VADD … FP32` take.
pub fn blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight independent sums let the compiler vectorise without reassociating.
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Runs `f(i)` for `i` in `0..n` from `threads` threads and collects the results in
/// order.
pub fn par_map<T: Send + Default + Clone>(
    n: usize,
    threads: usize,
    f: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let parts: Vec<Vec<(usize, T)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.max(1))
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            return out;
                        }
                        out.push((i, f(i)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a brute-force worker panicked"))
            .collect()
    });
    let mut all = vec![T::default(); n];
    for (i, v) in parts.into_iter().flatten() {
        all[i] = v;
    }
    all
}

/// Exact top-`k` rows by cosine similarity for every query, over the candidate
/// `rows` of `base` (row-major, `dim` wide), best first.
pub fn exact_top_k(
    base: &[f32],
    dim: usize,
    rows: &[u32],
    queries: &[f32],
    k: usize,
    threads: usize,
) -> Vec<Vec<u32>> {
    let norms: Vec<f32> = rows
        .iter()
        .map(|&r| {
            let v = &base[r as usize * dim..(r as usize + 1) * dim];
            dot(v, v).sqrt().max(f32::MIN_POSITIVE)
        })
        .collect();
    let nq = queries.len() / dim;
    par_map(nq, threads, |qi| {
        let q = &queries[qi * dim..(qi + 1) * dim];
        // (similarity, row), kept sorted best first.
        let mut best: Vec<(f32, u32)> = Vec::with_capacity(k + 1);
        for (j, &r) in rows.iter().enumerate() {
            let v = &base[r as usize * dim..(r as usize + 1) * dim];
            let s = dot(q, v) / norms[j];
            if best.len() == k && best.last().is_some_and(|&(w, _)| s <= w) {
                continue;
            }
            let at = best.partition_point(|&(w, _)| w >= s);
            best.insert(at, (s, r));
            best.truncate(k);
        }
        best.into_iter().map(|(_, r)| r).collect()
    })
}

/// Mean recall@k: the share of each truth list's first `k` ids found in the answer's
/// first `k`, over all queries that have an answer.
pub fn recall_at(answers: &[Vec<u32>], truth: &[Vec<u32>], k: usize) -> f64 {
    let (mut hits, mut total) = (0usize, 0usize);
    for (a, t) in answers.iter().zip(truth) {
        let t = &t[..k.min(t.len())];
        hits += a.iter().take(k).filter(|id| t.contains(id)).count();
        total += t.len();
    }
    if total == 0 {
        0.0
    } else {
        hits as f64 / total as f64
    }
}

/// One point of a sweep: a search effort, the recall it reached and its throughput.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// The `ef` sent.
    pub ef: usize,
    /// Recall at the sweep's k (10 unless it says otherwise) against the exact answer.
    pub recall: f64,
    /// Queries per second.
    pub qps: f64,
}

/// QPS at matched recall: for each anchor point with recall ≥ `floor`, the candidate
/// point with the lowest recall that is still ≥ the anchor's (`None` if the candidate
/// never gets there), as `(anchor, candidate)` pairs.
pub fn matched(anchor: &[Point], candidate: &[Point], floor: f64) -> Vec<(Point, Option<Point>)> {
    anchor
        .iter()
        .filter(|a| a.recall >= floor)
        .map(|a| {
            let best = candidate
                .iter()
                .filter(|c| c.recall >= a.recall)
                .min_by(|x, y| x.recall.total_cmp(&y.recall).then(y.qps.total_cmp(&x.qps)));
            (*a, best.copied())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brute_force_finds_nearest_by_cosine() {
        // Rows: along x, along y, diagonal, and a long one in the query's direction.
        let base = [1.0, 0.0, 0.0, 1.0, 0.7, 0.7, 5.0, 0.25];
        let q = [1.0, 0.05];
        let top = exact_top_k(&base, 2, &[0, 1, 2, 3], &q, 2, 2);
        assert_eq!(top, vec![vec![3, 0]]);
        let only = exact_top_k(&base, 2, &[1, 2], &q, 1, 1);
        assert_eq!(only, vec![vec![2]]);
    }

    #[test]
    fn recall_and_matching() {
        let r = recall_at(&[vec![1, 2, 9]], &[vec![1, 2, 3, 4]], 3);
        assert!((r - 2.0 / 3.0).abs() < 1e-9);
        let p = |ef, recall, qps| Point { ef, recall, qps };
        let anchor = [p(10, 0.90, 100.0), p(20, 0.96, 50.0), p(40, 0.99, 30.0)];
        let cand = [p(10, 0.95, 200.0), p(20, 0.97, 150.0), p(40, 0.98, 90.0)];
        let m = matched(&anchor, &cand, 0.95);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].1.map(|c| c.ef), Some(20));
        assert_eq!(m[1].1, None);
    }
}
