//! The approximate reducers' summaries, computed step for step as RediSearch computes
//! them so that `COUNT_DISTINCTISH` and `QUANTILE` give its very numbers:
//!
//! - [`Hll`]: a HyperLogLog of 2^8 one-byte registers over 32-bit hashes (the register
//!   is the hash's top 8 bits, the rank the position of its lowest set bit), estimated
//!   with the classic bias constant and linear counting for small sets; `HLL` returns
//!   it serialised and `HLL_SUM` merges such values.
//! - [`QuantileStream`]: the biased-quantiles stream of Cormode, Korn, Muthukrishnan
//!   and Srivastava with an error of 1% of the rank: values wait in a buffer of
//!   `resolution` entries, which is merged into the sorted samples and compressed when
//!   full, and merged again before a query.

/// Bits of register index of the counters `COUNT_DISTINCTISH` and `HLL` make: 256
/// registers.
const HLL_BITS: u8 = 8;

/// The serialised counter's header (`HLL`'s value): four zero bytes, then the bits.
const HLL_HEADER: usize = 5;

/// A HyperLogLog counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hll {
    bits: u8,
    registers: Vec<u8>,
}

impl Default for Hll {
    fn default() -> Hll {
        Hll {
            bits: HLL_BITS,
            registers: vec![0; 1 << HLL_BITS],
        }
    }
}

impl Hll {
    /// Counts one 32-bit hash.
    pub fn add(&mut self, hash: u32) {
        let bits = u32::from(self.bits);
        let index = (hash >> (32 - bits)) as usize;
        // The rank: 1 + trailing zeros, at most 32 - bits + 1.
        let mut rank = 1u8;
        let mut h = hash;
        while u32::from(rank) <= 32 - bits && h & 1 == 0 {
            h >>= 1;
            rank += 1;
        }
        if rank > self.registers[index] {
            self.registers[index] = rank;
        }
    }

    /// The counter as the `HLL` reducer returns it (and `HLL_SUM` reads it).
    pub fn serialize(&self) -> Vec<u8> {
        let mut out = vec![0, 0, 0, 0, self.bits];
        out.extend_from_slice(&self.registers);
        out
    }

    /// A counter read back from [`Hll::serialize`]'s bytes; `None` for anything else
    /// (`HLL_SUM` skips such values, as RediSearch does).
    pub fn deserialize(bytes: &[u8]) -> Option<Hll> {
        let bits = *bytes.get(4)?;
        if !(4..=20).contains(&bits) || bytes.len() != HLL_HEADER + (1usize << bits) {
            return None;
        }
        Some(Hll {
            bits,
            registers: bytes[HLL_HEADER..].to_vec(),
        })
    }

    /// Takes each register's larger value from `other`; counters of other sizes are
    /// left out.
    pub fn merge(&mut self, other: &Hll) {
        if other.bits == self.bits {
            for (a, b) in self.registers.iter_mut().zip(&other.registers) {
                *a = (*a).max(*b);
            }
        }
    }

    /// The estimated number of distinct hashes.
    pub fn count(&self) -> f64 {
        let m = self.registers.len() as f64;
        let alpha = match self.bits {
            4 => 0.673,
            5 => 0.697,
            6 => 0.709,
            _ => 0.7213 / (1.0 + 1.079 / m),
        } * m
            * m;
        let sum: f64 = self
            .registers
            .iter()
            .map(|&r| 1.0 / f64::from(1u32 << r))
            .sum();
        let estimate = alpha / sum;
        if estimate <= 2.5 * m {
            let zeros = self.registers.iter().filter(|&&r| r == 0).count();
            if zeros > 0 {
                return m * (m / zeros as f64).ln();
            }
        } else if estimate > 4_294_967_296.0 / 30.0 {
            return -4_294_967_296.0 * (1.0 - estimate / 4_294_967_296.0).ln();
        }
        estimate
    }
}

/// The rank error the stream allows, as a fraction of the rank.
const EPSILON: f64 = 0.01;

/// One sample: a value, the ranks it stands for (`g`) and the uncertainty of its rank
/// (`d`), kept in single precision as RediSearch keeps them.
#[derive(Debug, Clone, Copy)]
struct Sample {
    v: f64,
    g: f32,
    d: f32,
}

/// A quantile summary of a stream of numbers.
#[derive(Debug, Clone)]
pub struct QuantileStream {
    buffer: Vec<f64>,
    capacity: usize,
    samples: Vec<Sample>,
    n: usize,
}

fn max_error(r: f64) -> f64 {
    EPSILON * 2.0 * r
}

impl QuantileStream {
    /// An empty stream whose buffer holds `resolution` values (at least 1).
    pub fn new(resolution: usize) -> QuantileStream {
        let capacity = resolution.max(1);
        QuantileStream {
            buffer: Vec::with_capacity(capacity),
            capacity,
            samples: Vec::new(),
            n: 0,
        }
    }

    /// Adds a value.
    pub fn insert(&mut self, v: f64) {
        self.buffer.push(v);
        if self.buffer.len() == self.capacity {
            self.flush();
            self.compress();
        }
    }

    /// Merges the buffered values into the samples.
    fn flush(&mut self) {
        let mut buffer = std::mem::take(&mut self.buffer);
        buffer.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        let mut merged = Vec::with_capacity(self.samples.len() + buffer.len());
        let mut old = std::mem::take(&mut self.samples).into_iter().peekable();
        // The rank of the samples passed so far (only old samples count).
        let mut r = 0.0f64;
        for v in buffer.drain(..) {
            let mut placed = false;
            while let Some(s) = old.peek() {
                if s.v > v {
                    let d = (max_error(r).floor() - 1.0) as f32;
                    merged.push(Sample { v, g: 1.0, d });
                    placed = true;
                    break;
                }
                r += f64::from(s.g);
                merged.extend(old.next());
            }
            if !placed {
                merged.push(Sample { v, g: 1.0, d: 0.0 });
            }
            self.n += 1;
        }
        merged.extend(old);
        self.samples = merged;
        buffer.clear();
        self.buffer = buffer;
    }

    /// Merges adjacent samples whose combined uncertainty the error allows, from the
    /// end towards the start.
    fn compress(&mut self) {
        if self.samples.len() < 2 {
            return;
        }
        let last = self.samples.len() - 1;
        let mut r = self.n as f64 - 1.0 - f64::from(self.samples[last].g);
        // Walk backwards; `parent` is the next surviving sample after `i`.
        let mut keep = vec![true; self.samples.len()];
        let mut parent = last;
        for i in (0..last).rev() {
            let g = self.samples[i].g;
            let p = self.samples[parent];
            if f64::from(g + p.g + p.d) <= max_error(r) {
                self.samples[parent].g += g;
                keep[i] = false;
            } else {
                parent = i;
            }
            r -= f64::from(g);
        }
        let mut k = keep.into_iter();
        self.samples.retain(|_| k.next().unwrap_or(true));
    }

    /// The value at quantile `q` (0 to 1); 0 for an empty stream.
    pub fn query(&mut self, q: f64) -> f64 {
        if !self.buffer.is_empty() {
            self.flush();
        }
        let mut t = (q * self.n as f64).ceil();
        t += (max_error(t) / 2.0).floor();
        let Some(first) = self.samples.first() else {
            return 0.0;
        };
        let mut prev = first.v;
        let mut r = 0.0f64;
        for s in &self.samples[1..] {
            if r + f64::from(s.g) + f64::from(s.d) >= t {
                break;
            }
            r += f64::from(s.g);
            prev = s.v;
        }
        prev
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_streams_give_exact_order_statistics() {
        let mut q = QuantileStream::new(500);
        for v in [5.0, 1.0, 4.0, 2.0, 3.0] {
            q.insert(v);
        }
        assert_eq!(q.query(0.0), 1.0);
        assert_eq!(q.query(0.5), 3.0);
        assert_eq!(q.query(1.0), 5.0);
    }

    #[test]
    fn large_streams_stay_within_the_rank_error() {
        let mut q = QuantileStream::new(10);
        let n = 10_000;
        for i in 0..n {
            // A shuffled 0..n.
            q.insert(((i * 7919) % n) as f64);
        }
        for p in [0.1, 0.5, 0.9, 0.99] {
            let got = q.query(p);
            let want = p * n as f64;
            assert!(
                (got - want).abs() <= 0.02 * want + 2.0,
                "q{p}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn serialised_counters_merge() {
        let (mut a, mut b) = (Hll::default(), Hll::default());
        a.add(0x8000_0001);
        b.add(0x0100_0004);
        let mut sum = Hll::deserialize(&a.serialize()).expect("round trip");
        sum.merge(&Hll::deserialize(&b.serialize()).expect("round trip"));
        assert_eq!(sum.count().trunc(), 2.0);
        assert_eq!(a.serialize().len(), 5 + 256);
        assert!(Hll::deserialize(b"short").is_none());
    }

    #[test]
    fn hll_counts_small_sets_by_linear_counting() {
        let mut h = Hll::default();
        assert_eq!(h.count(), 0.0);
        for i in 0u64..100 {
            // splitmix64, folded to 32 bits: hashes that behave like random ones.
            let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            h.add((z as u32) ^ ((z >> 32) as u32));
        }
        let c = h.count();
        assert!((90.0..110.0).contains(&c), "{c}");
    }
}
