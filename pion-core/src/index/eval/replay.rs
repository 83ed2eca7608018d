//! RediSearch's query iterators, replayed over document lists for `FT.PROFILE`.
//!
//! Pion evaluates a query a node at a time (each node's documents as a set); RediSearch
//! reads its iterator tree a document at a time, and `FT.PROFILE` reports how often
//! each iterator was read. To report the same counters, the profile builds
//! RediSearch's tree over the documents each leaf matches and reads it here the way
//! RediSearch's iterators read each other: `Read` and `SkipTo` with their return codes,
//! each intersection's children ordered by their estimated sizes, a union's children
//! kept apart, a `-x` or `~x` walking every document id. The counters then follow.

use std::time::{Duration, Instant};

use crate::index::docs::DocSet;

/// What a read or a skip answers, with the id of the record it leaves current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rc {
    /// The id asked for (or the next one, for a read).
    Found(u64),
    /// A skip landed past the id asked for, on this one.
    Past(u64),
    /// Nothing more.
    End,
}

/// An iterator's kind and its own state.
pub(super) enum Kind {
    /// A term's, tag's or range's documents (`READ_ITERATOR`), or a vector range's
    /// (`METRIC_ITERATOR`).
    List { ids: Vec<u64>, pos: usize },
    /// Every id up to the highest given (`*`), over an index of `docs` documents.
    Wildcard { top: u64, at: u64, docs: u64 },
    /// Nothing (`EMPTY`).
    Empty,
    /// All children (`INTERSECT`); `None` children are terms the index lacks.
    Intersect {
        its: Vec<Option<Iter>>,
        ids: Vec<u64>,
        last: u64,
        last_found: u64,
        /// The documents an ordered or phrase intersection keeps (`None`: all).
        accept: Option<DocSet>,
    },
    /// Any child (`UNION`).
    Union {
        orig: Vec<Iter>,
        /// Indexes into `orig` of the children not yet at their end.
        active: Vec<usize>,
        min_doc: u64,
        quick_exit: bool,
        /// More than [`MIN_UNION_HEAP`] children: RediSearch reads them from a heap.
        heap: bool,
    },
    /// Ids the child lacks (`NOT`).
    Not {
        child: Box<Iter>,
        max: u64,
        last: u64,
    },
    /// Every id, the child's real where it has them (`OPTIONAL`).
    Optional {
        child: Box<Iter>,
        max: u64,
        last: u64,
        next_real: u64,
    },
}

/// RediSearch's `MIN_UNION_ITER_HEAP`: unions of more children read from a heap.
pub(super) const MIN_UNION_HEAP: usize = 20;

/// How an iterator is shown: RediSearch's type name, and what it reads.
#[derive(Debug, Clone, Default)]
pub(super) struct Label {
    /// `TEXT`, `TAG`, `NUMERIC`, `UNION`, `INTERSECT`…
    pub name: &'static str,
    /// A leaf's term (`Term`).
    pub term: Option<Vec<u8>>,
    /// A union's `Query type`.
    pub query_type: Option<String>,
    /// A leaf's `Size`: the documents its whole posting list holds.
    pub size: Option<u64>,
    /// An expansion that stands for as many terms as `MAXEXPANSIONS` allows.
    pub capped: bool,
}

/// One iterator of the replayed tree, with its profile counters.
pub(super) struct Iter {
    pub kind: Kind,
    pub label: Label,
    /// Reads and skips asked of it.
    pub calls: u64,
    /// Whether it has answered that it is at the end.
    pub ended: bool,
    /// Time spent in its reads and skips, its children's included.
    pub elapsed: Duration,
    /// The id of its current record.
    current: u64,
    /// A union's note of where this child stands (`minId`).
    min_id: u64,
    /// RediSearch's `isValid`.
    valid: bool,
}

impl Iter {
    /// A new iterator.
    pub fn new(kind: Kind, label: Label) -> Iter {
        let valid = !matches!(
            kind,
            Kind::Wildcard { .. } | Kind::Empty | Kind::Optional { .. }
        );
        Iter {
            kind,
            label,
            calls: 0,
            ended: false,
            elapsed: Duration::ZERO,
            current: 0,
            min_id: 0,
            valid,
        }
    }

    /// A union of `children` (`quick_exit`: it stops at the first child holding a
    /// document, as a union of expansions does), read from a heap past
    /// [`MIN_UNION_HEAP`] children.
    pub fn union(children: Vec<Iter>, quick_exit: bool, query_type: String) -> Iter {
        let n = children.len();
        Iter::new(
            Kind::Union {
                orig: children,
                active: (0..n).collect(),
                min_doc: 0,
                quick_exit,
                heap: n > MIN_UNION_HEAP,
            },
            Label {
                name: "UNION",
                query_type: Some(query_type),
                ..Label::default()
            },
        )
    }

    /// An intersection of `its` in that order; `accept` (an ordered or phrase
    /// intersection's) keeps only those documents.
    pub fn intersect(its: Vec<Option<Iter>>, accept: Option<DocSet>) -> Iter {
        let n = its.len();
        Iter::new(
            Kind::Intersect {
                its,
                ids: vec![0; n],
                last: 0,
                last_found: 0,
                accept,
            },
            Label {
                name: "INTERSECT",
                ..Label::default()
            },
        )
    }

    /// The counter RediSearch reports: answers given, less one if any was the end.
    pub fn counter(&self) -> u64 {
        self.calls - u64::from(self.ended)
    }

    /// How many documents it expects to give (`NumEstimated`), which orders an
    /// intersection's children.
    pub fn estimate(&self) -> u64 {
        match &self.kind {
            Kind::List { ids, .. } => self.label.size.unwrap_or(ids.len() as u64),
            Kind::Wildcard { docs, .. } => *docs,
            Kind::Empty => 0,
            Kind::Intersect { its, .. } => its
                .iter()
                .map(|i| i.as_ref().map_or(u64::from(u32::MAX), Iter::estimate))
                .min()
                .unwrap_or(u64::from(u32::MAX)),
            Kind::Union { orig, .. } => orig.iter().map(Iter::estimate).sum(),
            Kind::Not { max, .. } | Kind::Optional { max, .. } => *max,
        }
    }

    /// Whether it gives document `id` when read to its end (RediSearch's `~x` gives
    /// every id up to the highest).
    pub fn contains(&self, id: u64) -> bool {
        match &self.kind {
            Kind::List { ids, .. } => ids.binary_search(&id).is_ok(),
            Kind::Wildcard { top, .. } => (1..=*top).contains(&id),
            Kind::Empty => false,
            Kind::Intersect { its, accept, .. } => {
                its.iter()
                    .all(|c| c.as_ref().is_some_and(|c| c.contains(id)))
                    && accept.as_ref().is_none_or(|a| a.contains(id))
            }
            Kind::Union { orig, .. } => orig.iter().any(|c| c.contains(id)),
            Kind::Not { child, max, .. } => (1..=*max).contains(&id) && !child.contains(id),
            Kind::Optional { max, .. } => (1..=*max).contains(&id),
        }
    }

    fn has_next(&self) -> bool {
        self.valid
            || match &self.kind {
                Kind::Wildcard { top, at, .. } => at <= top,
                Kind::Not { max, last, .. } | Kind::Optional { max, last, .. } => last <= max,
                _ => false,
            }
    }

    fn last_doc_id(&self) -> u64 {
        match &self.kind {
            Kind::Intersect { last_found, .. } => *last_found,
            Kind::Union { min_doc, .. } => *min_doc,
            Kind::Not { last, .. } | Kind::Optional { last, .. } => *last,
            _ => self.current,
        }
    }

    /// `Read`: the next document.
    pub fn read(&mut self) -> Rc {
        self.counted(|it| it.read_inner())
    }

    /// `SkipTo`: the first document at or past `id`.
    pub fn skip_to(&mut self, id: u64) -> Rc {
        self.counted(|it| it.skip_inner(id))
    }

    fn counted(&mut self, f: impl FnOnce(&mut Iter) -> Rc) -> Rc {
        self.calls += 1;
        let start = Instant::now();
        let rc = f(self);
        match rc {
            Rc::Found(id) | Rc::Past(id) => self.current = id,
            // RediSearch's note of an end stays; a union's or an intersection's
            // record is cleared at each read, so at the end it holds no id.
            Rc::End => {
                self.ended = true;
                if matches!(self.kind, Kind::Intersect { .. } | Kind::Union { .. }) {
                    self.current = 0;
                }
            }
        }
        self.elapsed += start.elapsed();
        rc
    }

    fn read_inner(&mut self) -> Rc {
        let valid = &mut self.valid;
        match &mut self.kind {
            Kind::List { ids, pos } => match ids.get(*pos) {
                Some(&id) => {
                    *pos += 1;
                    Rc::Found(id)
                }
                None => {
                    *valid = false;
                    Rc::End
                }
            },
            Kind::Wildcard { top, at, .. } => {
                *at += 1;
                if *at > *top {
                    return Rc::End;
                }
                Rc::Found(*at)
            }
            Kind::Empty => Rc::End,
            Kind::Intersect { .. } => self.intersect_read(),
            Kind::Union { .. } => self.union_read(),
            Kind::Not { .. } => self.not_read(),
            Kind::Optional { .. } => self.optional_read(),
        }
    }

    fn skip_inner(&mut self, id: u64) -> Rc {
        match &mut self.kind {
            Kind::List { ids, pos } => {
                if id == 0 {
                    return self.read_inner();
                }
                if !self.valid {
                    return Rc::End;
                }
                while ids.get(*pos).is_some_and(|&d| d < id) {
                    *pos += 1;
                }
                match ids.get(*pos) {
                    Some(&d) => {
                        *pos += 1;
                        if d == id {
                            Rc::Found(d)
                        } else {
                            Rc::Past(d)
                        }
                    }
                    None => {
                        self.valid = false;
                        Rc::End
                    }
                }
            }
            Kind::Wildcard { top, at, .. } => {
                if *at > *top {
                    return Rc::End;
                }
                if id == 0 {
                    return self.read_inner();
                }
                *at = id;
                Rc::Found(id)
            }
            Kind::Empty => Rc::End,
            Kind::Intersect { .. } => self.intersect_skip(id),
            Kind::Union { .. } => self.union_skip(id),
            Kind::Not { .. } => self.not_skip(id),
            Kind::Optional { .. } => self.optional_skip(id),
        }
    }

    fn intersect_read(&mut self) -> Rc {
        let Kind::Intersect {
            its,
            ids,
            last,
            last_found,
            accept,
        } = &mut self.kind
        else {
            return Rc::End;
        };
        if its.is_empty() {
            return Rc::End;
        }
        loop {
            let mut hits = 0;
            let mut doc = 0;
            for i in 0..its.len() {
                let Some(it) = its[i].as_mut() else {
                    self.valid = false;
                    return Rc::End;
                };
                let mut found = true;
                if ids[i] != *last || *last == 0 {
                    let rc = if i == 0 && ids[i] >= *last {
                        it.read()
                    } else {
                        it.skip_to(*last)
                    };
                    match rc {
                        Rc::End => {
                            self.valid = false;
                            return Rc::End;
                        }
                        Rc::Found(d) => ids[i] = d,
                        Rc::Past(d) => {
                            ids[i] = d;
                            found = false;
                        }
                    }
                }
                if ids[i] > *last {
                    *last = ids[i];
                    break;
                }
                if found {
                    hits += 1;
                    doc = ids[i];
                } else {
                    *last += 1;
                }
            }
            if hits == its.len() {
                *last_found = doc;
                *last += 1;
                if accept.as_ref().is_some_and(|a| !a.contains(doc)) {
                    continue;
                }
                return Rc::Found(doc);
            }
        }
    }

    fn intersect_skip(&mut self, mut id: u64) -> Rc {
        if id == 0 {
            return self.intersect_read();
        }
        let Kind::Intersect {
            its,
            ids,
            last,
            last_found,
            accept,
        } = &mut self.kind
        else {
            return Rc::End;
        };
        let mut found = 0;
        for i in 0..its.len() {
            let Some(it) = its[i].as_mut().filter(|it| it.has_next()) else {
                return Rc::End;
            };
            let mut rc = Rc::Found(id);
            if ids[i] != id {
                rc = it.skip_to(id);
                if let Rc::Found(d) | Rc::Past(d) = rc {
                    ids[i] = d;
                    id = d;
                }
            }
            match rc {
                Rc::End => {
                    self.valid = false;
                    return Rc::End;
                }
                Rc::Found(_) => {
                    *last = id;
                    found += 1;
                }
                Rc::Past(_) => {
                    if ids[i] > *last {
                        *last = ids[i];
                        break;
                    }
                }
            }
        }
        if found == its.len() && accept.as_ref().is_none_or(|a| a.contains(id)) {
            *last_found = id;
            *last += 1;
            return Rc::Found(id);
        }
        match self.intersect_read() {
            Rc::End => Rc::End,
            Rc::Found(d) | Rc::Past(d) => Rc::Past(d),
        }
    }

    fn union_read(&mut self) -> Rc {
        let has_next = self.valid;
        let Kind::Union {
            orig,
            active,
            min_doc,
            heap,
            ..
        } = &mut self.kind
        else {
            return Rc::End;
        };
        if active.is_empty() || !has_next {
            self.valid = false;
            return Rc::End;
        }
        if *heap {
            return self.union_read_heap();
        }
        loop {
            let mut min: Option<(u64, usize)> = None;
            let mut live = 0;
            let mut i = 0;
            while i < active.len() {
                let it = &mut orig[active[i]];
                let mut rc = Rc::Found(it.current);
                while it.min_id <= *min_doc && rc != Rc::End {
                    rc = it.read();
                    if let Rc::Found(d) | Rc::Past(d) = rc {
                        it.min_id = d;
                    }
                }
                if rc == Rc::End {
                    active.remove(i);
                    continue;
                }
                live += 1;
                if let Rc::Found(d) = rc {
                    if min.is_none_or(|(m, _)| d <= m) {
                        min = Some((d, active[i]));
                    }
                }
                i += 1;
            }
            if let Some((_, which)) = min {
                let target = orig[which].min_id;
                self.union_skip_direct(target);
                if let Kind::Union { min_doc, .. } = &mut self.kind {
                    *min_doc = target;
                }
                return Rc::Found(target);
            }
            if live == 0 {
                self.valid = false;
                return Rc::End;
            }
        }
    }

    /// `UI_SkipTo` called by the union itself (not counted on the union).
    fn union_skip_direct(&mut self, id: u64) -> Rc {
        let Kind::Union {
            orig,
            active,
            min_doc,
            quick_exit,
            ..
        } = &mut self.kind
        else {
            return Rc::End;
        };
        let mut live = 0;
        let mut found = 0;
        let mut least: Option<u64> = None;
        let mut i = 0;
        while i < active.len() {
            let it = &mut orig[active[i]];
            let rc = if it.min_id < id {
                let rc = it.skip_to(id);
                if let Rc::Found(d) | Rc::Past(d) = rc {
                    it.min_id = d;
                }
                rc
            } else if it.min_id == id {
                Rc::Found(id)
            } else {
                Rc::Past(it.min_id)
            };
            if rc == Rc::End {
                active.remove(i);
                continue;
            }
            if it.min_id != 0 && least.is_none_or(|m| it.min_id < m) {
                least = Some(it.min_id);
            }
            if let Rc::Found(_) = rc {
                *min_doc = it.min_id;
                found += 1;
            }
            live += 1;
            i += 1;
            if found > 0 && *quick_exit {
                break;
            }
        }
        if live == 0 {
            self.valid = false;
            return Rc::End;
        }
        if found > 0 {
            return Rc::Found(id);
        }
        let least = least.unwrap_or(0);
        *min_doc = least;
        Rc::Past(least)
    }

    fn union_skip(&mut self, id: u64) -> Rc {
        if id == 0 {
            return self.union_read();
        }
        if !self.valid {
            return Rc::End;
        }
        if matches!(self.kind, Kind::Union { heap: true, .. }) {
            return self.union_skip_heap(id);
        }
        self.union_skip_direct(id)
    }

    /// The heap's order: the child with the lowest note first (ties by position).
    fn heap_top(orig: &[Iter], active: &[usize]) -> Option<usize> {
        active
            .iter()
            .enumerate()
            .min_by_key(|(_, &c)| (orig[c].min_id, c))
            .map(|(i, _)| i)
    }

    fn union_read_heap(&mut self) -> Rc {
        let next = match &self.kind {
            Kind::Union { min_doc, .. } => *min_doc + 1,
            _ => return Rc::End,
        };
        match self.heap_to(next) {
            None => Rc::End,
            Some(at) => Rc::Found(at),
        }
    }

    fn union_skip_heap(&mut self, id: u64) -> Rc {
        match self.heap_to(id) {
            None => Rc::End,
            Some(at) if at == id => Rc::Found(at),
            Some(at) => Rc::Past(at),
        }
    }

    /// RediSearch's heap union moving to `target` (at least 1): children behind it
    /// skip to it, lowest first, until the lowest is at or past it (or, for a
    /// union of expansions, one lands on it); the child looked at last gives the
    /// answer. `None` at the end.
    fn heap_to(&mut self, target: u64) -> Option<u64> {
        let Kind::Union {
            orig,
            active,
            min_doc,
            quick_exit,
            ..
        } = &mut self.kind
        else {
            return None;
        };
        let mut last = None;
        while let Some(top) = Self::heap_top(orig, active) {
            let child = active[top];
            last = Some(child);
            let it = &mut orig[child];
            if it.min_id >= target && it.min_id != 0 {
                break;
            }
            match it.skip_to(target) {
                Rc::End => {
                    active.remove(top);
                    last = None;
                }
                Rc::Found(d) | Rc::Past(d) => {
                    it.min_id = d;
                    if *quick_exit && d == target {
                        break;
                    }
                }
            }
        }
        match last.filter(|_| !active.is_empty()) {
            None => {
                self.valid = false;
                None
            }
            Some(child) => {
                *min_doc = orig[child].min_id;
                Some(*min_doc)
            }
        }
    }

    fn not_read(&mut self) -> Rc {
        let current = self.current;
        let Kind::Not { child, max, last } = &mut self.kind else {
            return Rc::End;
        };
        if *last > *max {
            self.valid = false;
            return Rc::End;
        }
        if child.current == 0 {
            child.read();
        }
        let mut at = current + 1;
        if child.current <= at && child.has_next() {
            while child.current == at {
                at += 1;
                if child.read() == Rc::End {
                    break;
                }
            }
        }
        if at > *max {
            self.valid = false;
            // The record moves on even at the end.
            self.current = at;
            return Rc::End;
        }
        *last = at;
        Rc::Found(at)
    }

    fn not_skip(&mut self, id: u64) -> Rc {
        let Kind::Not { child, max, last } = &mut self.kind else {
            return Rc::End;
        };
        if id > *max {
            self.valid = false;
            return Rc::End;
        }
        let child_at = if *last != 0 { child.last_doc_id() } else { 0 };
        if child_at > id || !child.has_next() {
            *last = id;
            return Rc::Found(id);
        }
        if child_at == id {
            *last = id;
            return Rc::Past(id);
        }
        if let Rc::Found(_) = child.skip_to(id) {
            return Rc::Past(id);
        }
        *last = id;
        Rc::Found(id)
    }

    fn optional_read(&mut self) -> Rc {
        let Kind::Optional {
            child,
            max,
            last,
            next_real,
        } = &mut self.kind
        else {
            return Rc::End;
        };
        if *last >= *max {
            return Rc::End;
        }
        *last += 1;
        if *last > *next_real {
            *next_real = match child.read() {
                Rc::End => *max + 1,
                Rc::Found(d) | Rc::Past(d) => d,
            };
        }
        Rc::Found(*last)
    }

    fn optional_skip(&mut self, id: u64) -> Rc {
        let current = self.current;
        let Kind::Optional {
            child,
            max,
            last,
            next_real,
        } = &mut self.kind
        else {
            return Rc::End;
        };
        *last = id;
        if id > *max {
            return Rc::End;
        }
        if id == 0 {
            return self.optional_read();
        }
        if id > *next_real {
            *next_real = match child.skip_to(id) {
                Rc::End => current,
                Rc::Found(d) | Rc::Past(d) => d,
            };
        }
        Rc::Found(id)
    }
}

#[cfg(test)]
mod tests;
