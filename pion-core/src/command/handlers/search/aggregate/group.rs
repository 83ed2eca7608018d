//! `GROUPBY … REDUCE …`: the grouping stage and its reducers.
//!
//! RediSearch lists groups in the iteration order of its hash table (klib's khash,
//! keyed by the 64-bit hash of the group values), and `TOLIST` values in the order of
//! a Redis `dict`. Clients show these orders as they come, so both tables are
//! reproduced here: [`KhashOrder`] and [`DictOrder`] place keys exactly as those
//! tables do (bucket index, probing, growth, rehashing) and give the same iteration
//! order. Groups are keyed by the hash alone, as in RediSearch.

use std::collections::HashMap;

use rand::Rng;

use super::pipeline::{Env, Row, Stage, StageError, State};
use super::sketches::{Hll, QuantileStream};
use super::value::Value;

/// khash's integer hash of a 64-bit key.
fn kh_hash(key: u64) -> u32 {
    ((key >> 33) ^ key ^ (key << 11)) as u32
}

/// The slots of a khash set of 64-bit keys (insertions only).
#[derive(Debug, Default)]
pub struct KhashOrder {
    keys: Vec<u64>,
    /// 0 empty, 1 deleted, 2 used.
    flags: Vec<u8>,
    size: usize,
    occupied: usize,
    upper: usize,
}

impl KhashOrder {
    fn upper_bound(buckets: usize) -> usize {
        (buckets as f64 * 0.77 + 0.5) as usize
    }

    fn resize(&mut self, wanted: usize) {
        let buckets = wanted.next_power_of_two().max(4);
        if self.size >= Self::upper_bound(buckets) {
            return;
        }
        let old = self.flags.len();
        let mut new_flags = vec![0u8; buckets];
        if buckets > old {
            self.keys.resize(buckets, 0);
            self.flags.resize(buckets, 0);
        }
        let mask = buckets - 1;
        for j in 0..old {
            if self.flags[j] != 2 {
                continue;
            }
            let mut key = self.keys[j];
            self.flags[j] = 1;
            loop {
                let mut i = kh_hash(key) as usize & mask;
                let mut step = 0;
                while new_flags[i] != 0 {
                    step += 1;
                    i = (i + step) & mask;
                }
                new_flags[i] = 2;
                if i < old && self.flags[i] == 2 {
                    std::mem::swap(&mut self.keys[i], &mut key);
                    self.flags[i] = 1;
                } else {
                    self.keys[i] = key;
                    break;
                }
            }
        }
        self.keys.truncate(buckets);
        self.flags = new_flags;
        self.occupied = self.size;
        self.upper = Self::upper_bound(buckets);
    }

    fn contains(&self, key: u64) -> bool {
        let n = self.flags.len();
        if n == 0 {
            return false;
        }
        let mask = n - 1;
        let mut i = kh_hash(key) as usize & mask;
        let last = i;
        let mut step = 0;
        while self.flags[i] != 0 && (self.flags[i] == 1 || self.keys[i] != key) {
            step += 1;
            i = (i + step) & mask;
            if i == last {
                return false;
            }
        }
        self.flags[i] == 2
    }

    /// Adds a key (no-op when present). RediSearch looks a group up before adding
    /// it, so a present key never grows the table.
    pub fn insert(&mut self, key: u64) {
        if self.contains(key) {
            return;
        }
        if self.occupied >= self.upper {
            let n = self.flags.len();
            if n > self.size << 1 {
                self.resize(n - 1);
            } else {
                self.resize(n + 1);
            }
        }
        let n = self.flags.len();
        let mask = n - 1;
        let mut i = kh_hash(key) as usize & mask;
        let (mut x, mut site) = (n, n);
        if self.flags[i] == 0 {
            x = i;
        } else {
            let last = i;
            let mut step = 0;
            while self.flags[i] != 0 && (self.flags[i] == 1 || self.keys[i] != key) {
                if self.flags[i] == 1 {
                    site = i;
                }
                step += 1;
                i = (i + step) & mask;
                if i == last {
                    x = site;
                    break;
                }
            }
            if x == n {
                x = if self.flags[i] == 0 && site != n {
                    site
                } else {
                    i
                };
            }
        }
        match self.flags[x] {
            0 => {
                self.keys[x] = key;
                self.flags[x] = 2;
                self.size += 1;
                self.occupied += 1;
            }
            1 => {
                self.keys[x] = key;
                self.flags[x] = 2;
                self.size += 1;
            }
            _ => {}
        }
    }

    /// The keys in iteration order.
    pub fn order(&self) -> Vec<u64> {
        (0..self.flags.len())
            .filter(|&i| self.flags[i] == 2)
            .map(|i| self.keys[i])
            .collect()
    }
}

/// A Redis `dict` used as a set of values (`TOLIST`): chained buckets, new entries
/// at the head, incremental rehashing into a table twice the size.
#[derive(Debug, Default, Clone)]
pub struct DictOrder {
    tables: [Vec<Vec<Value>>; 2],
    used: [usize; 2],
    rehash: Option<usize>,
}

impl DictOrder {
    fn index(v: &Value, table: &[Vec<Value>]) -> usize {
        (v.hash(0) as usize) & (table.len() - 1)
    }

    fn step(&mut self) {
        let Some(mut at) = self.rehash else {
            return;
        };
        let mut empty = 10;
        while self.tables[0][at].is_empty() {
            at += 1;
            empty -= 1;
            if empty == 0 || at >= self.tables[0].len() {
                self.rehash = Some(at.min(self.tables[0].len() - 1));
                return;
            }
        }
        let chain = std::mem::take(&mut self.tables[0][at]);
        for v in chain {
            let i = Self::index(&v, &self.tables[1]);
            self.tables[1][i].insert(0, v);
            self.used[0] -= 1;
            self.used[1] += 1;
        }
        self.rehash = Some(at + 1);
        if self.used[0] == 0 {
            self.tables[0] = std::mem::take(&mut self.tables[1]);
            self.used = [self.used[1], 0];
            self.rehash = None;
        }
    }

    fn expand(&mut self, size: usize) {
        let n = size.next_power_of_two().max(4);
        if self.tables[0].is_empty() {
            self.tables[0] = vec![Vec::new(); n];
        } else {
            self.tables[1] = vec![Vec::new(); n];
            self.rehash = Some(0);
        }
    }

    /// Adds a value (no-op when an equal one is present).
    pub fn insert(&mut self, v: Value) {
        if self.rehash.is_some() {
            self.step();
        }
        if self.rehash.is_none() {
            if self.tables[0].is_empty() {
                self.expand(4);
            } else if self.used[0] >= self.tables[0].len() {
                self.expand(self.used[0] * 2);
            }
        }
        for t in 0..2 {
            if self.tables[t].is_empty() {
                continue;
            }
            if self.tables[t][Self::index(&v, &self.tables[t])].contains(&v) {
                return;
            }
            if self.rehash.is_none() {
                break;
            }
        }
        let t = usize::from(self.rehash.is_some());
        let i = Self::index(&v, &self.tables[t]);
        self.tables[t][i].insert(0, v);
        self.used[t] += 1;
    }

    /// The values in iteration order.
    pub fn into_values(self) -> Vec<Value> {
        self.tables.into_iter().flatten().flatten().collect()
    }
}

/// A reducer as requested.
#[derive(Debug, Clone)]
pub enum ReducerKind {
    /// `COUNT 0`
    Count,
    /// `COUNT_DISTINCT 1 @p`
    CountDistinct,
    /// `SUM 1 @p`
    Sum,
    /// `AVG 1 @p`
    Avg,
    /// `MIN 1 @p`
    Min,
    /// `MAX 1 @p`
    Max,
    /// `STDDEV 1 @p`
    StdDev,
    /// `TOLIST 1 @p`
    ToList,
    /// `FIRST_VALUE n @p [BY @q [ASC|DESC]]`: the sort slot and direction.
    FirstValue(Option<(usize, bool)>),
    /// `COUNT_DISTINCTISH 1 @p`: distinct values, estimated with a HyperLogLog.
    CountDistinctish,
    /// `HLL 1 @p`: that HyperLogLog itself, serialised.
    Hll,
    /// `HLL_SUM 1 @p`: the estimate of the merged serialised HyperLogLogs.
    HllSum,
    /// `QUANTILE 2|3 @p q [resolution]`.
    Quantile {
        /// The quantile, 0 to 1.
        q: f64,
        /// Values buffered before the summary is compressed.
        resolution: usize,
    },
    /// `RANDOM_SAMPLE 2 @p n`: up to `n` values drawn uniformly.
    RandomSample(usize),
}

/// One `REDUCE` of a `GROUPBY`.
#[derive(Debug, Clone)]
pub struct Reducer {
    /// What it computes.
    pub kind: ReducerKind,
    /// The input slot (unused by `COUNT`).
    pub input: usize,
}

/// A reducer's running state for one group.
#[derive(Debug, Clone)]
enum Acc {
    Count(u64),
    Distinct(std::collections::HashSet<u64>),
    Sum(f64),
    Avg {
        sum: f64,
        rows: u64,
    },
    Min(Option<f64>),
    Max(Option<f64>),
    /// Welford's running variance, as RediSearch computes it.
    Dev {
        n: u64,
        mean: f64,
        s: f64,
    },
    List(DictOrder),
    First {
        value: Option<Value>,
        sort: Option<Value>,
    },
    Hll(Hll),
    HllSum(Option<Hll>),
    Quantile(Box<QuantileStream>),
    Sample {
        seen: u64,
        items: Vec<Value>,
    },
}

impl Reducer {
    fn start(&self) -> Acc {
        match self.kind {
            ReducerKind::Count => Acc::Count(0),
            ReducerKind::CountDistinct => Acc::Distinct(Default::default()),
            ReducerKind::Sum => Acc::Sum(0.0),
            ReducerKind::Avg => Acc::Avg { sum: 0.0, rows: 0 },
            ReducerKind::Min => Acc::Min(None),
            ReducerKind::Max => Acc::Max(None),
            ReducerKind::StdDev => Acc::Dev {
                n: 0,
                mean: 0.0,
                s: 0.0,
            },
            ReducerKind::ToList => Acc::List(DictOrder::default()),
            ReducerKind::FirstValue(_) => Acc::First {
                value: None,
                sort: None,
            },
            ReducerKind::CountDistinctish | ReducerKind::Hll => Acc::Hll(Hll::default()),
            ReducerKind::HllSum => Acc::HllSum(None),
            ReducerKind::Quantile { resolution, .. } => {
                Acc::Quantile(Box::new(QuantileStream::new(resolution)))
            }
            ReducerKind::RandomSample(_) => Acc::Sample {
                seen: 0,
                items: Vec::new(),
            },
        }
    }

    fn add(&self, acc: &mut Acc, st: &State, seg: usize, row: &Row) {
        let value = || st.get(seg, row, self.input);
        let number = || value().and_then(|v| v.as_number());
        match acc {
            Acc::Count(n) => *n += 1,
            Acc::Distinct(set) => {
                if let Some(v) = value() {
                    set.insert(v.hash(0));
                }
            }
            Acc::Sum(s) => *s += number().unwrap_or(0.0),
            Acc::Avg { sum, rows } => {
                *sum += number().unwrap_or(0.0);
                *rows += 1;
            }
            Acc::Min(m) => {
                if let Some(x) = number() {
                    *m = Some(m.map_or(x, |m| m.min(x)));
                }
            }
            Acc::Max(m) => {
                if let Some(x) = number() {
                    *m = Some(m.map_or(x, |m| m.max(x)));
                }
            }
            Acc::Dev { n, mean, s } => {
                if let Some(x) = number() {
                    *n += 1;
                    if *n == 1 {
                        *mean = x;
                        *s = 0.0;
                    } else {
                        let old = *mean;
                        *mean = old + (x - old) / *n as f64;
                        *s += (x - old) * (x - *mean);
                    }
                }
            }
            Acc::List(d) => {
                if let Some(v) = value() {
                    d.insert(v);
                }
            }
            Acc::Hll(h) => {
                if let Some(v) = value().filter(|v| *v != Value::Null) {
                    // RediSearch's seed, and the 64-bit hash folded to 32.
                    let hash = v.hash(0x5f61_767a);
                    h.add((hash as u32) ^ ((hash >> 32) as u32));
                }
            }
            Acc::HllSum(sum) => {
                if let Some(Value::Str(bytes)) = value() {
                    if let Some(h) = Hll::deserialize(&bytes) {
                        match sum {
                            Some(s) => s.merge(&h),
                            None => *sum = Some(h),
                        }
                    }
                }
            }
            Acc::Quantile(qs) => match value() {
                Some(Value::Array(items)) => {
                    for x in items.iter().filter_map(Value::as_number) {
                        qs.insert(x);
                    }
                }
                Some(v) => {
                    if let Some(x) = v.as_number() {
                        qs.insert(x);
                    }
                }
                None => {}
            },
            Acc::Sample { seen, items } => {
                let ReducerKind::RandomSample(len) = self.kind else {
                    return;
                };
                if let Some(v) = value() {
                    if (items.len() as u64) < len as u64 {
                        items.push(v);
                    } else {
                        // Reservoir sampling: the new value replaces a random one with
                        // probability len / (seen + 1).
                        let i = rand::thread_rng().gen_range(0..=*seen) as usize;
                        if i < len {
                            items[i] = v;
                        }
                    }
                    *seen += 1;
                }
            }
            Acc::First { value: cur, sort } => {
                let ReducerKind::FirstValue(by) = &self.kind else {
                    return;
                };
                let Some((slot, asc)) = by else {
                    if cur.is_none() {
                        *cur = value();
                    }
                    return;
                };
                let key = st.get(seg, row, *slot).unwrap_or(Value::Null);
                let Some(old) = sort else {
                    *cur = value();
                    *sort = Some(key);
                    return;
                };
                // RediSearch's rule, null sort values included: a row replaces the
                // current one when it sorts first, but a null current value only
                // gives way to a row that sorts after it.
                let o = key.order(old);
                let rc = if *asc { o.reverse() } else { o };
                let null = *old == Value::Null;
                if cur.is_none() || (!null && rc.is_gt()) || (null && rc.is_lt()) {
                    *cur = value();
                    *sort = Some(key);
                }
            }
        }
    }
}

fn finish(acc: Acc, kind: &ReducerKind) -> Value {
    match acc {
        Acc::Hll(h) if matches!(kind, ReducerKind::Hll) => Value::Str(h.serialize()),
        Acc::Hll(h) => Value::Num(h.count().trunc()),
        Acc::HllSum(h) => Value::Num(h.map_or(0.0, |h| h.count().trunc())),
        Acc::Quantile(mut qs) => {
            let ReducerKind::Quantile { q, .. } = kind else {
                return Value::Null;
            };
            Value::Num(qs.query(*q))
        }
        Acc::Sample { items, .. } => Value::Array(items),
        Acc::Count(n) => Value::Num(n as f64),
        Acc::Distinct(set) => Value::Num(set.len() as f64),
        Acc::Sum(s) => Value::Num(s),
        Acc::Avg { sum, rows } => Value::Num(if rows == 0 { 0.0 } else { sum / rows as f64 }),
        Acc::Min(m) | Acc::Max(m) => Value::Num(m.unwrap_or(0.0)),
        Acc::Dev { n, s, .. } => Value::Num(if n > 1 {
            (s / (n - 1) as f64).sqrt()
        } else {
            0.0
        }),
        Acc::List(d) => Value::Array(d.into_values()),
        Acc::First { value, .. } => value.unwrap_or(Value::Null),
    }
}

/// The `GROUPBY` stage: reads everything, then yields one row per group (the group
/// values, then each reducer's result) in RediSearch's order.
pub struct Group {
    /// Upstream.
    pub up: Box<dyn Stage>,
    /// The segment rows come from.
    pub seg: usize,
    /// The group-by slots in that segment.
    pub keys: Vec<usize>,
    /// The reducers.
    pub reducers: Vec<Reducer>,
    /// The groups once read.
    pub out: Option<std::vec::IntoIter<Row>>,
}

impl Stage for Group {
    fn next(&mut self, env: &Env<'_>, st: &mut State) -> Result<Option<Row>, StageError> {
        if self.out.is_none() {
            let mut table = KhashOrder::default();
            let mut groups: HashMap<u64, (Vec<Value>, Vec<Acc>)> = HashMap::new();
            while let Some(row) = self.up.next(env, st)? {
                let values: Vec<Value> = self
                    .keys
                    .iter()
                    .map(|&k| st.get(self.seg, &row, k).unwrap_or(Value::Null))
                    .collect();
                let h = values.iter().fold(0u64, |h, v| v.hash(h));
                table.insert(h);
                let reducers = &self.reducers;
                let entry = groups
                    .entry(h)
                    .or_insert_with(|| (values, reducers.iter().map(Reducer::start).collect()));
                for (r, acc) in self.reducers.iter().zip(entry.1.iter_mut()) {
                    r.add(acc, st, self.seg, &row);
                }
            }
            st.total = groups.len();
            let rows: Vec<Row> = table
                .order()
                .into_iter()
                .filter_map(|h| groups.remove(&h))
                .map(|(values, accs)| Row {
                    doc: None,
                    slots: values
                        .into_iter()
                        .chain(
                            accs.into_iter()
                                .zip(&self.reducers)
                                .map(|(acc, r)| finish(acc, &r.kind)),
                        )
                        .map(Some)
                        .collect(),
                })
                .collect();
            self.out = Some(rows.into_iter());
        }
        Ok(self.out.as_mut().and_then(Iterator::next))
    }

    fn upstream(&mut self) -> Option<&mut Box<dyn Stage>> {
        Some(&mut self.up)
    }

    fn profile_name(&self) -> String {
        "Grouper".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group_order(values: &[Value]) -> Vec<Value> {
        let mut t = KhashOrder::default();
        let mut first = HashMap::new();
        for v in values {
            let h = v.hash(0);
            first.entry(h).or_insert_with(|| v.clone());
            t.insert(h);
        }
        t.order().into_iter().map(|h| first[&h].clone()).collect()
    }

    /// Orders RediSearch 2.10 gives for these groups.
    #[test]
    fn groups_come_in_redisearch_order() {
        let s = |v: &[&str]| v.iter().map(Value::str).collect::<Vec<_>>();
        let n = |v: &[f64]| v.iter().map(|x| Value::Num(*x)).collect::<Vec<_>>();
        assert_eq!(
            group_order(&s(&["red", "yellow", "red", "yellow", "green", "green"])),
            s(&["yellow", "green", "red"])
        );
        let g: Vec<String> = (1..31).map(|i| format!("g{}", i % 4)).collect();
        let g: Vec<&str> = g.iter().map(String::as_str).collect();
        assert_eq!(group_order(&s(&g)), s(&["g3", "g1", "g2", "g0"]));
        let seven: Vec<f64> = (1..31).map(|i| f64::from(i % 7)).collect();
        assert_eq!(
            group_order(&n(&seven)),
            n(&[2.0, 4.0, 0.0, 5.0, 3.0, 6.0, 1.0])
        );
        assert_eq!(
            group_order(&s(&["apple", "banana", "cherry", "lemon", "grape", "kiwi"])),
            s(&["kiwi", "cherry", "apple", "banana", "lemon", "grape"])
        );
        let six: Vec<String> = (0..40).map(|i| format!("g{}", i % 6)).collect();
        let six: Vec<&str> = six.iter().map(String::as_str).collect();
        assert_eq!(
            group_order(&s(&six)),
            s(&["g5", "g3", "g4", "g1", "g2", "g0"])
        );
        let mut with_null = n(&[10.0, 20.0, 5.0, 7.0, 3.0]);
        with_null.push(Value::Null);
        let mut want = n(&[3.0]);
        want.push(Value::Null);
        want.extend(n(&[7.0, 10.0, 20.0, 5.0]));
        assert_eq!(group_order(&with_null), want);
    }

    #[test]
    fn tolist_comes_in_dict_order() {
        let mut d = DictOrder::default();
        for v in ["x,y", "y", "z , x"] {
            d.insert(Value::str(v));
        }
        assert_eq!(
            d.into_values(),
            vec![Value::str("z , x"), Value::str("y"), Value::str("x,y")]
        );
        let mut d = DictOrder::default();
        for v in [1.0, 3.0, 1.0] {
            d.insert(Value::Num(v));
        }
        assert_eq!(d.into_values(), vec![Value::Num(3.0), Value::Num(1.0)]);
    }
}
