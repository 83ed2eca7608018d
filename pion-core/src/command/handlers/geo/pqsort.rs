//! Redis's partial quicksort, for searches whose `COUNT` keeps fewer results than
//! were found.
//!
//! Redis sorts the whole result with the C library's (stable) `qsort` when it
//! returns everything, but with its own partial quicksort (Bentley and McIlroy's
//! three-way partition, median-of-three pivots, only the partitions that overlap the
//! wanted ranks sorted further) when `COUNT` cuts it. That sort is not stable, so
//! which of several equally distant points are returned depends on its exact steps:
//! they are repeated here on indices so the same points come back.

use std::cmp::Ordering;

/// Sorts `v` far enough that ranks `lo..=hi` hold what a full sort would put there,
/// making the same swaps as Redis's `pqsort`.
pub fn pqsort<T>(v: &mut [T], cmp: &dyn Fn(&T, &T) -> Ordering, lo: usize, hi: usize) {
    let n = v.len();
    sort(v, 0, n, cmp, lo, hi);
}

/// Whether the elements `s..e` lie wholly before or after the wanted ranks.
fn outside(s: usize, e: usize, lo: usize, hi: usize) -> bool {
    (lo < s && hi < s) || (lo >= e && hi >= e)
}

fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &dyn Fn(&T, &T) -> Ordering) -> usize {
    let lt = |x: usize, y: usize| cmp(&v[x], &v[y]) == Ordering::Less;
    let gt = |x: usize, y: usize| cmp(&v[x], &v[y]) == Ordering::Greater;
    if lt(a, b) {
        if lt(b, c) {
            b
        } else if lt(a, c) {
            c
        } else {
            a
        }
    } else if gt(b, c) {
        b
    } else if lt(a, c) {
        a
    } else {
        c
    }
}

/// Swaps the `r` elements from `a` with the `r` from `b`, pairwise.
fn vecswap<T>(v: &mut [T], a: usize, b: usize, r: usize) {
    for i in 0..r {
        v.swap(a + i, b + i);
    }
}

fn sort<T>(
    v: &mut [T],
    mut a: usize,
    mut n: usize,
    cmp: &dyn Fn(&T, &T) -> Ordering,
    lo: usize,
    hi: usize,
) {
    loop {
        if n < 7 {
            for pm in a + 1..a + n {
                let mut pl = pm;
                while pl > a && cmp(&v[pl - 1], &v[pl]) == Ordering::Greater {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let mut pl = a;
            let mut pn = a + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(a, pm);
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + n - 1, a + n - 1);
        loop {
            while pb <= pc {
                let c = cmp(&v[pb], &v[a]);
                if c == Ordering::Greater {
                    break;
                }
                if c == Ordering::Equal {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let c = cmp(&v[pc], &v[a]);
                if c == Ordering::Less {
                    break;
                }
                if c == Ordering::Equal {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = a + n;
        let r = (pa - a).min(pb - pa);
        vecswap(v, a, pb - r, r);
        let r = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - r, r);
        let r = pb - pa;
        if r > 1 && !outside(a, a + r, lo, hi) {
            sort(v, a, r, cmp, lo, hi);
        }
        let r = pd - pc;
        if r > 1 {
            a = pn - r;
            n = r;
            if !outside(a, a + n, lo, hi) {
                continue;
            }
        }
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wanted_ranks_are_sorted() {
        let mut x: u64 = 7;
        for len in [0usize, 1, 5, 7, 8, 39, 41, 100, 1000] {
            let v: Vec<u32> = (0..len)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((x >> 33) % 50) as u32
                })
                .collect();
            let mut sorted = v.clone();
            sorted.sort();
            for count in [1usize, 3, 10, 60] {
                if count > len {
                    continue;
                }
                let mut w = v.clone();
                pqsort(&mut w, &|a: &u32, b: &u32| a.cmp(b), 0, count - 1);
                assert_eq!(&w[..count], &sorted[..count], "len {len} count {count}");
            }
        }
    }
}
