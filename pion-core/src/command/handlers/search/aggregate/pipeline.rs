//! The steps of an `FT.AGGREGATE` pipeline as pull-based stages: each asks its
//! upstream for rows one at a time, so a reply (or a cursor's chunk) reads only as far
//! as it needs, which is what RediSearch's `total_results` reflects (see
//! [`State::total`]).
//!
//! Rows name their values through a [`Lookup`]: the keys of one pipeline segment in
//! the order they were created, which is the order fields are replied in. A `GROUPBY`
//! starts a new segment with its own lookup (the group keys, then the reducers).
//!
//! Locking: the root takes the index's document lock for one document at a time and
//! releases it before anything reads the keyspace (`LOAD` of fields outside the
//! schema), keeping the engine's lock order (shards before documents).

use std::sync::Arc;

use super::value::Value;
use crate::index::schema::{FieldKind, KeyType};
use crate::index::{Document, IndexDef, Read, SearchIndex};
use crate::Engine;

/// A document as the pipeline sees it: id, key, and the schema fields' raw values.
#[derive(Debug)]
pub struct DocRow {
    /// The document id (ties in `SORTBY` are broken by it).
    pub id: u64,
    /// The hash's key.
    pub key: Vec<u8>,
    /// One slot per schema field, as stored in the hash.
    pub values: Vec<Option<Vec<u8>>>,
}

/// One row: its document (until a `GROUPBY`), and the values set so far.
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// The document the row comes from.
    pub doc: Option<Arc<DocRow>>,
    /// Values by lookup slot.
    pub slots: Vec<Option<Value>>,
}

impl Row {
    /// Sets a slot, growing the row as needed.
    pub fn set(&mut self, slot: usize, v: Value) {
        if self.slots.len() <= slot {
            self.slots.resize(slot + 1, None);
        }
        self.slots[slot] = Some(v);
    }
}

/// How a sortable schema field's value reads when it was not loaded: RediSearch
/// reads it from its sorting vector, where text is lower-cased.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norm {
    /// A number.
    Number,
    /// Lower-cased text.
    Lower,
    /// Text as stored (`CASESENSITIVE` tags).
    Keep,
}

/// A named value of a segment.
#[derive(Debug, Clone)]
pub struct Key {
    /// The name it is replied under.
    pub name: Vec<u8>,
    /// A sortable schema field that gives the value when the row has none.
    pub sortable: Option<(usize, Norm)>,
    /// A value rows carry for expressions and sorting but do not reply unless
    /// loaded (`FT.HYBRID`'s `__score` and vector score).
    pub hidden: bool,
}

/// The keys of one segment, in creation order.
#[derive(Debug, Clone, Default)]
pub struct Lookup {
    /// The keys.
    pub keys: Vec<Key>,
}

impl Lookup {
    /// The slot of a key.
    pub fn find(&self, name: &[u8]) -> Option<usize> {
        self.keys.iter().position(|k| k.name == name)
    }

    /// The slot of a key, created when missing.
    pub fn add(&mut self, name: &[u8]) -> usize {
        self.find(name).unwrap_or_else(|| {
            self.keys.push(Key {
                name: name.to_vec(),
                sortable: None,
                hidden: false,
            });
            self.keys.len() - 1
        })
    }

    /// A new replied key, even when a hidden one has the name (a hidden value loaded
    /// under its own name is replied where the `LOAD` puts it).
    pub fn add_shown(&mut self, name: &[u8]) -> usize {
        match self.keys.iter().position(|k| k.name == name && !k.hidden) {
            Some(slot) => slot,
            None => {
                self.keys.push(Key {
                    name: name.to_vec(),
                    sortable: None,
                    hidden: false,
                });
                self.keys.len() - 1
            }
        }
    }
}

/// What a run needs from the engine.
pub struct Env<'a> {
    /// The engine (for the keyspace).
    pub engine: &'a Engine,
    /// The index.
    pub index: &'a SearchIndex,
    /// The command's clock.
    pub now_ms: i64,
}

/// A pipeline's state between pulls.
#[derive(Debug, Clone)]
pub struct State {
    /// The index definition the request was compiled against.
    pub def: IndexDef,
    /// One lookup per segment.
    pub lookups: Vec<Lookup>,
    /// RediSearch's `total_results`: documents read so far (a `GROUPBY` sets it to
    /// its number of groups). Reset at the start of each chunk.
    pub total: usize,
    /// `TIMEOUT`: past it the root gives [`TIMED_OUT`] instead of its next document
    /// (a cursor's later reads have none).
    pub deadline: Option<std::time::Instant>,
    /// Documents the root has read (those gone since the query included), and
    /// whether it read them all: how far `FT.PROFILE` reads the query's iterators.
    pub ids_read: usize,
    /// See [`State::ids_read`].
    pub ids_done: bool,
    /// The id of the last document the root gave: RediSearch's result object keeps
    /// it, and rows after a `GROUPBY` that it writes into carry it (a sort breaks
    /// ties by it).
    pub last_id: u64,
}

/// RediSearch's text for a request past its `TIMEOUT`: the rows so far are the reply,
/// with this as a warning.
pub const TIMED_OUT: &str = crate::index::eval::TIMED_OUT;

impl State {
    /// A row's value in slot `slot` of segment `seg`.
    pub fn get(&self, seg: usize, row: &Row, slot: usize) -> Option<Value> {
        if let Some(Some(v)) = row.slots.get(slot) {
            return Some(v.clone());
        }
        let (field, norm) = self.lookups.get(seg)?.keys.get(slot)?.sortable?;
        let raw = row.doc.as_ref()?.values.get(field)?.as_ref()?;
        Some(normalized(raw, norm))
    }
}

/// A sortable value as RediSearch's sorting vector holds it.
pub fn normalized(raw: &[u8], norm: Norm) -> Value {
    match norm {
        Norm::Number => number_or_text(raw),
        Norm::Keep => Value::str(raw),
        Norm::Lower => match std::str::from_utf8(raw) {
            Ok(s) => Value::str(s.to_lowercase()),
            Err(_) => Value::Str(raw.to_ascii_lowercase()),
        },
    }
}

fn number_or_text(raw: &[u8]) -> Value {
    match crate::util::num::parse_f64(raw.trim_ascii()) {
        Some(n) => Value::Num(n),
        None => Value::str(raw),
    }
}

/// How a sortable field of kind `kind` reads from the sorting vector.
pub fn norm_of(kind: &FieldKind) -> Norm {
    match kind {
        FieldKind::Numeric => Norm::Number,
        FieldKind::Tag {
            case_sensitive: true,
            ..
        } => Norm::Keep,
        _ => Norm::Lower,
    }
}

/// Why a pull failed: RediSearch's text.
pub type StageError = String;

/// One step of the pipeline.
pub trait Stage: Send {
    /// The next row, `None` at the end.
    fn next(&mut self, env: &Env<'_>, st: &mut State) -> Result<Option<Row>, StageError>;

    /// The stage it pulls from (`None` for the root), so `FT.PROFILE` can wrap each.
    fn upstream(&mut self) -> Option<&mut Box<dyn Stage>>;

    /// What `FT.PROFILE` calls it: RediSearch's name for its result processor.
    fn profile_name(&self) -> String;

    /// A page without an offset right after a sort, which RediSearch's sorter
    /// applies itself (`FT.PROFILE` shows the two as one `Sorter`).
    fn part_of_sort(&self) -> bool {
        false
    }
}

/// The matching documents: in id order, or nearest first for a KNN query.
pub struct Root {
    /// The ids still to read, with the vector distance a KNN or range clause gave.
    pub ids: std::vec::IntoIter<(u64, Option<f32>)>,
    /// The slot the distance goes in.
    pub distance_slot: Option<usize>,
    /// Numbers each document brings (`ADDSCORES`' `__score`, `FT.HYBRID`'s scores):
    /// the slot, each document's value, and the value of a document without one
    /// (`None`: the row has no such field).
    pub columns: Vec<(usize, crate::index::IdMap<f64>, Option<f64>)>,
    /// The slot of each document's matched terms (`matched_terms()`), and the terms.
    pub terms: Option<(usize, crate::index::IdMap<Vec<Vec<u8>>>)>,
}

impl Stage for Root {
    fn next(&mut self, env: &Env<'_>, st: &mut State) -> Result<Option<Row>, StageError> {
        if st.deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Err(TIMED_OUT.to_string());
        }
        let fields = st.def.fields.len();
        for (id, distance) in self.ids.by_ref() {
            st.ids_read += 1;
            let doc = {
                let docs = env.index.docs.read();
                let Some(key) = docs.key(id) else {
                    continue;
                };
                DocRow {
                    id,
                    key: key.to_vec(),
                    values: (0..fields)
                        .map(|f| docs.value(id, f).map(<[u8]>::to_vec))
                        .collect(),
                }
            };
            st.total += 1;
            st.last_id = id;
            let mut row = Row {
                doc: Some(Arc::new(doc)),
                slots: Vec::new(),
            };
            if let (Some(slot), Some(d)) = (self.distance_slot, distance) {
                row.set(slot, Value::Num(f64::from(d)));
            }
            for (slot, values, absent) in &self.columns {
                if let Some(v) = values.get(&id).copied().or(*absent) {
                    row.set(*slot, Value::Num(v));
                }
            }
            if let Some((slot, terms)) = &self.terms {
                if let Some(t) = terms.get(&id) {
                    let t = t.iter().map(|term| Value::Str(term.clone())).collect();
                    row.set(*slot, Value::Array(t));
                }
            }
            return Ok(Some(row));
        }
        st.ids_done = true;
        Ok(None)
    }

    fn upstream(&mut self) -> Option<&mut Box<dyn Stage>> {
        None
    }

    fn profile_name(&self) -> String {
        "Index".into()
    }
}

/// Where a loaded value comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A schema field (numbers typed as numbers).
    Field(usize),
    /// The document's key (`@__key`).
    Key,
    /// A name outside the schema: a hash field, or a JSONPath into a JSON document.
    Named(Vec<u8>),
    /// Another slot of the row (a hidden value made visible by `LOAD`).
    Slot(usize),
}

/// `LOAD` (and the loads RediSearch adds before `SORTBY`/`GROUPBY` for fields that
/// are not sortable): values into slots.
pub struct Load {
    /// Upstream.
    pub up: Box<dyn Stage>,
    /// What goes where.
    pub fields: Vec<(Source, usize)>,
    /// Every field is SORTABLE: RediSearch reads them from its index, with no
    /// loading step (`FT.PROFILE` shows none).
    pub sortable_only: bool,
}

/// Reads the document under `key` (a hash or JSON document, as the index covers).
fn read_doc<T>(
    env: &Env<'_>,
    st: &State,
    key: &[u8],
    f: impl FnOnce(Document<'_>) -> T,
) -> Option<T> {
    let mut ks = env.engine.keyspace().lock_keys(&[key], env.now_ms);
    let value = ks.peek(0, key).ok().flatten().map(|e| &e.value)?;
    Document::of(value, st.def.on).map(f)
}

/// A value read from a document, as the pipeline holds it.
fn loaded(read: Read) -> Value {
    match read {
        Read::Bytes(b) => Value::Str(b),
        Read::Null => Value::Null,
    }
}

impl Stage for Load {
    fn next(&mut self, env: &Env<'_>, st: &mut State) -> Result<Option<Row>, StageError> {
        let Some(mut row) = self.up.next(env, st)? else {
            return Ok(None);
        };
        let Some(doc) = row.doc.clone() else {
            return Ok(Some(row));
        };
        for (source, slot) in &self.fields {
            let value = match source {
                Source::Key => Some(Value::str(&doc.key)),
                // The index keeps no copy of vectors: they are read from the document.
                Source::Field(f) => match st.def.fields.get(*f) {
                    // A JSON field is read from the document too: the index keeps only
                    // its sort key (the first of several values).
                    Some(spec)
                        if matches!(spec.kind, FieldKind::Vector(_))
                            || st.def.on == KeyType::Json =>
                    {
                        let read = read_doc(env, st, &doc.key, |d| d.field(spec, false));
                        read.flatten().map(|r| match (r, &spec.kind) {
                            (Read::Bytes(b), FieldKind::Numeric) => number_or_text(&b),
                            (r, _) => loaded(r),
                        })
                    }
                    _ => doc.values.get(*f).cloned().flatten().map(|raw| {
                        match st.def.fields.get(*f).map(|s| &s.kind) {
                            Some(FieldKind::Numeric) => number_or_text(&raw),
                            _ => Value::Str(raw),
                        }
                    }),
                },
                Source::Named(name) => {
                    read_doc(env, st, &doc.key, |d| d.named(name, false).map(loaded)).flatten()
                }
                Source::Slot(from) => row.slots.get(*from).cloned().flatten(),
            };
            if let Some(v) = value {
                row.set(*slot, v);
            }
        }
        Ok(Some(row))
    }

    fn upstream(&mut self) -> Option<&mut Box<dyn Stage>> {
        Some(&mut self.up)
    }

    fn profile_name(&self) -> String {
        if self.sortable_only { "" } else { "Loader" }.into()
    }
}

/// `LOAD *`: every field of the hash, as strings, under keys created as they appear.
pub struct LoadAll {
    /// Upstream.
    pub up: Box<dyn Stage>,
    /// The segment whose lookup gains the keys.
    pub seg: usize,
}

impl Stage for LoadAll {
    fn next(&mut self, env: &Env<'_>, st: &mut State) -> Result<Option<Row>, StageError> {
        let Some(mut row) = self.up.next(env, st)? else {
            return Ok(None);
        };
        let Some(doc) = row.doc.clone() else {
            return Ok(Some(row));
        };
        let pairs = read_doc(env, st, &doc.key, |d| d.whole(false)).unwrap_or_default();
        for (f, v) in pairs {
            let slot = st.lookups[self.seg].add(&f);
            row.set(slot, loaded(v));
        }
        Ok(Some(row))
    }

    fn upstream(&mut self) -> Option<&mut Box<dyn Stage>> {
        Some(&mut self.up)
    }

    fn profile_name(&self) -> String {
        "Loader".into()
    }
}

/// `APPLY expr AS name`.
pub struct Apply {
    /// Upstream.
    pub up: Box<dyn Stage>,
    /// The expression, resolved against segment `seg`.
    pub expr: super::expr::Expr,
    /// The segment.
    pub seg: usize,
    /// Where the result goes.
    pub slot: usize,
}

impl Stage for Apply {
    fn next(&mut self, env: &Env<'_>, st: &mut State) -> Result<Option<Row>, StageError> {
        let Some(mut row) = self.up.next(env, st)? else {
            return Ok(None);
        };
        let v = self.expr.eval(&|s| st.get(self.seg, &row, s))?;
        row.set(self.slot, v);
        Ok(Some(row))
    }

    fn upstream(&mut self) -> Option<&mut Box<dyn Stage>> {
        Some(&mut self.up)
    }

    fn profile_name(&self) -> String {
        format!("Projector - {}", self.expr.profile_text())
    }
}

/// `FILTER expr`.
pub struct Filter {
    /// Upstream.
    pub up: Box<dyn Stage>,
    /// The predicate.
    pub expr: super::expr::Expr,
    /// The segment.
    pub seg: usize,
}

impl Stage for Filter {
    fn next(&mut self, env: &Env<'_>, st: &mut State) -> Result<Option<Row>, StageError> {
        while let Some(row) = self.up.next(env, st)? {
            if self.expr.eval(&|s| st.get(self.seg, &row, s))?.truthy() {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }

    fn upstream(&mut self) -> Option<&mut Box<dyn Stage>> {
        Some(&mut self.up)
    }

    fn profile_name(&self) -> String {
        format!("Filter - {}", self.expr.profile_text())
    }
}

/// `LIMIT offset num`. `LIMIT 0 0` reads everything and returns nothing (a count).
pub struct Pager {
    /// Upstream.
    pub up: Box<dyn Stage>,
    /// Rows still to skip.
    pub skip: usize,
    /// Rows still to give.
    pub left: usize,
    /// Whether this is a count-only page.
    pub count_only: bool,
}

impl Stage for Pager {
    fn next(&mut self, env: &Env<'_>, st: &mut State) -> Result<Option<Row>, StageError> {
        if self.count_only {
            while self.up.next(env, st)?.is_some() {}
            return Ok(None);
        }
        while self.skip > 0 {
            if self.up.next(env, st)?.is_none() {
                return Ok(None);
            }
            self.skip -= 1;
        }
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        self.up.next(env, st)
    }

    fn upstream(&mut self) -> Option<&mut Box<dyn Stage>> {
        Some(&mut self.up)
    }

    fn profile_name(&self) -> String {
        if self.count_only {
            "Counter"
        } else {
            "Pager/Limiter"
        }
        .into()
    }

    fn part_of_sort(&self) -> bool {
        self.skip == 0 && !self.count_only
    }
}

/// `SORTBY`: reads everything, keeps the best `cap` rows.
pub struct Sorter {
    /// Upstream.
    pub up: Box<dyn Stage>,
    /// Sort keys: slot and ascending.
    pub keys: Vec<(usize, bool)>,
    /// The segment.
    pub seg: usize,
    /// How many rows to keep.
    pub cap: usize,
    /// Ties go in document order whatever the direction (RediSearch's sort by
    /// score); otherwise in the last key's direction.
    pub ties_in_id_order: bool,
    /// The sorted rows, once read.
    pub sorted: Option<std::vec::IntoIter<Row>>,
    /// Whether reading them stopped at the deadline (reported after the last row).
    pub timed_out: bool,
}

impl Sorter {
    /// RediSearch's comparison of two rows for its heap, `ia` and `ib` their
    /// document ids: positive when `a` comes first. Rows that tie on every key are
    /// ordered by id, and two with the same id each compare greater than the other,
    /// as in RediSearch.
    fn heap_order(&self, st: &State, a: &Row, ia: u64, b: &Row, ib: u64) -> i32 {
        let mut ascending = false;
        for &(slot, asc) in &self.keys {
            ascending = asc;
            match (st.get(self.seg, a, slot), st.get(self.seg, b, slot)) {
                (None, None) => continue,
                // A row without the value goes last, whatever the direction.
                (Some(_), None) => return 1,
                (None, Some(_)) => return -1,
                (Some(x), Some(y)) => {
                    let rc = match x.order(&y) {
                        std::cmp::Ordering::Equal => continue,
                        std::cmp::Ordering::Less => -1,
                        std::cmp::Ordering::Greater => 1,
                    };
                    return if ascending { -rc } else { rc };
                }
            }
        }
        if self.ties_in_id_order {
            return if ia > ib { -1 } else { 1 };
        }
        let rc = if ia < ib { -1 } else { 1 };
        if ascending {
            -rc
        } else {
            rc
        }
    }

    /// The first `cap` rows in order, kept as RediSearch keeps them: a heap of
    /// `cap` that a row enters when it beats the least, read greatest first. A row
    /// that is no document (a group) carries the id its result object held, as
    /// RediSearch reuses them: the last document read for the first, none for a
    /// fresh object, the evicted row's for a reused one.
    fn best(&self, st: &State, rows: Vec<Row>) -> Vec<Row> {
        let order = |a: &(Row, u64), b: &(Row, u64)| self.heap_order(st, &a.0, a.1, &b.0, b.1);
        let mut heap = super::minmax::MinMaxHeap::new(order);
        let cap = self.cap.max(1);
        let mut pooled = st.last_id;
        for row in rows {
            let id = row.doc.as_ref().map_or(pooled, |d| d.id);
            let item = (row, id);
            if heap.len() < cap {
                heap.insert(item);
                pooled = 0;
            } else if heap.peek_min().is_some_and(|min| order(&item, min) > 0) {
                pooled = heap.exchange_min(item).map_or(0, |(_, id)| id);
            } else {
                pooled = id;
            }
        }
        let mut out = Vec::with_capacity(heap.len());
        while let Some((row, _)) = heap.pop_max() {
            out.push(row);
        }
        out
    }
}

impl Stage for Sorter {
    fn next(&mut self, env: &Env<'_>, st: &mut State) -> Result<Option<Row>, StageError> {
        if self.sorted.is_none() {
            let mut rows = Vec::new();
            // Past TIMEOUT the rows read so far are sorted and given, then the
            // timeout ends them.
            let mut timed_out = false;
            loop {
                match self.up.next(env, st) {
                    Ok(Some(r)) => rows.push(r),
                    Ok(None) => break,
                    Err(e) if e == TIMED_OUT => {
                        timed_out = true;
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            self.sorted = Some(self.best(st, rows).into_iter());
            self.timed_out = timed_out;
        }
        match self.sorted.as_mut().and_then(Iterator::next) {
            None if std::mem::take(&mut self.timed_out) => Err(TIMED_OUT.to_string()),
            next => Ok(next),
        }
    }

    fn upstream(&mut self) -> Option<&mut Box<dyn Stage>> {
        Some(&mut self.up)
    }

    fn profile_name(&self) -> String {
        "Sorter".into()
    }
}
