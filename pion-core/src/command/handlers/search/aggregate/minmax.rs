//! The min-max heap RediSearch's `SORTBY` keeps its best rows in, for the order it
//! gives rows that tie.
//!
//! RediSearch breaks a tie between two rows by their document ids, and rows after a
//! `GROUPBY` have none: its comparison then calls each row greater than the other,
//! so which tied row comes first depends on exactly which comparisons its heap makes.
//! This heap makes the same ones (same levels, same child and grandchild choices),
//! so tied rows come out in RediSearch's order. With a consistent comparison it is
//! simply a bounded min-max heap.

/// A min-max heap ordered by `cmp` (positive: the first is greater); index 1 is the
/// root, as in RediSearch's.
pub struct MinMaxHeap<T, F: Fn(&T, &T) -> i32> {
    /// `data[0]` is unused, so that indexes match the algorithm's.
    data: Vec<Option<T>>,
    cmp: F,
}

fn is_min(n: usize) -> bool {
    (n as u32).leading_zeros() & 1 == 1
}

impl<T, F: Fn(&T, &T) -> i32> MinMaxHeap<T, F> {
    /// An empty heap.
    pub fn new(cmp: F) -> Self {
        MinMaxHeap {
            data: vec![None],
            cmp,
        }
    }

    /// How many items it holds.
    pub fn len(&self) -> usize {
        self.data.len() - 1
    }

    fn at(&self, i: usize) -> &T {
        // Indexes 1..=len hold items: every caller stays in that range.
        self.data[i].as_ref().expect("a heap slot in range")
    }

    fn gt(&self, x: usize, y: usize) -> bool {
        (self.cmp)(self.at(x), self.at(y)) > 0
    }

    fn lt(&self, x: usize, y: usize) -> bool {
        (self.cmp)(self.at(x), self.at(y)) < 0
    }

    /// Adds an item.
    pub fn insert(&mut self, item: T) {
        self.data.push(Some(item));
        let n = self.len();
        self.bubble_up(n);
    }

    /// The least item.
    pub fn peek_min(&self) -> Option<&T> {
        self.data.get(1).and_then(Option::as_ref)
    }

    /// Replaces the least item with `item`, returning it.
    pub fn exchange_min(&mut self, item: T) -> Option<T> {
        if self.len() == 0 {
            return None;
        }
        let min = self.data[1].replace(item);
        self.trickle_down(1, false);
        min
    }

    /// Takes the greatest item.
    pub fn pop_max(&mut self) -> Option<T> {
        let n = self.len();
        if n > 2 {
            let idx = if self.lt(2, 3) { 3 } else { 2 };
            if idx == n {
                return self.data.pop().flatten();
            }
            let last = self.data.pop().flatten();
            let d = std::mem::replace(&mut self.data[idx], last);
            self.trickle_down(idx, true);
            return d;
        }
        // One item is the root; of two, the second is the greater.
        self.data.pop().flatten()
    }

    fn bubble_up(&mut self, i: usize) {
        let p = i / 2;
        if p == 0 {
            return;
        }
        if is_min(i) {
            if self.gt(i, p) {
                self.data.swap(i, p);
                self.bubble_up_to(p, true);
            } else {
                self.bubble_up_to(i, false);
            }
        } else if self.lt(i, p) {
            self.data.swap(i, p);
            self.bubble_up_to(p, false);
        } else {
            self.bubble_up_to(i, true);
        }
    }

    /// Moves `i` up its own kind of levels (max levels when `max`).
    fn bubble_up_to(&mut self, i: usize, max: bool) {
        let pp = i / 4;
        if pp == 0 {
            return;
        }
        let moves = if max { self.gt(i, pp) } else { self.lt(i, pp) };
        if moves {
            self.data.swap(i, pp);
            self.bubble_up_to(pp, max);
        }
    }

    /// The best of `i`'s children and grandchildren by `order` (greatest when
    /// `max`), chosen as RediSearch chooses: only among those present, comparing
    /// in its order.
    fn best_descendant(&self, i: usize, max: bool) -> Option<usize> {
        let order = |x: usize, y: usize| if max { self.gt(x, y) } else { self.lt(x, y) };
        let of3 = |a, b, c| {
            if order(a, b) {
                if order(a, c) {
                    a
                } else {
                    c
                }
            } else if order(b, c) {
                b
            } else {
                c
            }
        };
        let (a, b) = (2 * i, 2 * i + 1);
        let (c, d, e, f) = (2 * a, 2 * a + 1, 2 * b, 2 * b + 1);
        let n = self.len();
        Some(if f <= n {
            if order(c, d) {
                of3(c, e, f)
            } else {
                of3(d, e, f)
            }
        } else if e <= n {
            of3(c, d, e)
        } else if d <= n {
            of3(b, c, d)
        } else if c <= n {
            if order(b, c) {
                b
            } else {
                c
            }
        } else if b <= n {
            if order(a, b) {
                a
            } else {
                b
            }
        } else if a <= n {
            a
        } else {
            return None;
        })
    }

    fn trickle_down(&mut self, i: usize, max: bool) {
        let Some(m) = self.best_descendant(i, max) else {
            return;
        };
        let better = |h: &Self, x, y| if max { h.gt(x, y) } else { h.lt(x, y) };
        let worse = |h: &Self, x, y| if max { h.lt(x, y) } else { h.gt(x, y) };
        if m > 2 * i + 1 {
            // A grandchild.
            if better(self, m, i) {
                self.data.swap(i, m);
                if worse(self, m, m / 2) {
                    self.data.swap(m, m / 2);
                }
                self.trickle_down(m, max);
            }
        } else if better(self, m, i) {
            self.data.swap(i, m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_a_consistent_order_it_gives_the_greatest_first() {
        let mut h = MinMaxHeap::new(|a: &i32, b: &i32| a.cmp(b) as i32);
        for x in [5, 1, 9, 3, 7, 2, 8, 6, 4, 0] {
            h.insert(x);
        }
        assert_eq!(h.peek_min(), Some(&0));
        assert_eq!(h.exchange_min(10), Some(0));
        let mut out = Vec::new();
        while let Some(x) = h.pop_max() {
            out.push(x);
        }
        assert_eq!(out, vec![10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
    }

    #[test]
    fn keeping_the_best_of_a_stream_as_a_bounded_sort_does() {
        // RediSearch's sorter: insert until full, then replace the least when a new
        // item is greater.
        let items: Vec<i32> = (0..200).map(|i| (i * 37) % 101).collect();
        let mut h = MinMaxHeap::new(|a: &i32, b: &i32| a.cmp(b) as i32);
        for &x in &items {
            if h.len() < 10 {
                h.insert(x);
            } else if h.peek_min().is_some_and(|m| x > *m) {
                h.exchange_min(x);
            }
        }
        let mut got = Vec::new();
        while let Some(x) = h.pop_max() {
            got.push(x);
        }
        let mut want = items.clone();
        want.sort_unstable_by(|a, b| b.cmp(a));
        want.truncate(10);
        assert_eq!(got, want);
    }
}
