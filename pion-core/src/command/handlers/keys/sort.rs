//! `SORT` and `SORT_RO`: sort the elements of a list, set or sorted set, numerically
//! or lexicographically, optionally by weights read from other keys (`BY pattern`),
//! returning other keys' values (`GET pattern`) and storing the result (`STORE`).
//!
//! `BY` and `GET` patterns name arbitrary keys, so the commands hold the whole keyspace
//! while they run; the declared keys (the sorted key and the `STORE` destination) are
//! still reported for `COMMAND GETKEYS` and settled after the write.

use std::cmp::Ordering;

use crate::command::ctx::Ctx;
use crate::command::handlers::util::{int, is_kw};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::value::{ListValue, Value};

/// Finds `SORT`'s keys: the sorted key and the last `STORE` destination, skipping the
/// arguments of `LIMIT`, `GET` and `BY` as Redis's key extraction does.
pub(super) fn sort_keys(argv: &[Vec<u8>]) -> OpResult<Vec<usize>> {
    let mut store = None;
    let mut i = 2;
    while i < argv.len() {
        let arg = &argv[i];
        if is_kw(arg, "limit") {
            i += 2;
        } else if is_kw(arg, "get") || is_kw(arg, "by") {
            i += 1;
        } else if is_kw(arg, "store") && i + 1 < argv.len() {
            store = Some(i + 1);
            i += 1;
        }
        i += 1;
    }
    Ok(std::iter::once(1).chain(store).collect())
}

/// Finds `SORT_RO`'s only key.
pub(super) fn sort_ro_keys(_: &[Vec<u8>]) -> OpResult<Vec<usize>> {
    Ok(vec![1])
}

/// The parsed options of one `SORT` call.
#[derive(Debug, Default)]
struct Options<'a> {
    desc: bool,
    alpha: bool,
    /// `LIMIT offset count`.
    limit: Option<(i64, i64)>,
    store: Option<&'a [u8]>,
    by: Option<&'a [u8]>,
    /// Set by any `BY` pattern without `*` (`BY nosort`); later patterns do not undo it.
    dont_sort: bool,
    get: Vec<&'a [u8]>,
}

impl<'a> Options<'a> {
    /// `full_key_access`: the user may read every key; BY and GET patterns read keys
    /// the ACL cannot check in advance, so without it they are refused, as in Redis.
    fn parse(argv: &'a [Vec<u8>], read_only: bool, full_key_access: bool) -> OpResult<Options<'a>> {
        let mut o = Options::default();
        let mut j = 2;
        while j < argv.len() {
            let (arg, left) = (&argv[j], argv.len() - j - 1);
            if is_kw(arg, "asc") {
                o.desc = false;
            } else if is_kw(arg, "desc") {
                o.desc = true;
            } else if is_kw(arg, "alpha") {
                o.alpha = true;
            } else if is_kw(arg, "limit") && left >= 2 {
                o.limit = Some((int(&argv[j + 1])?, int(&argv[j + 2])?));
                j += 2;
            } else if is_kw(arg, "store") && left >= 1 && !read_only {
                o.store = Some(&argv[j + 1]);
                j += 1;
            } else if is_kw(arg, "by") && left >= 1 {
                let pattern = argv[j + 1].as_slice();
                if !pattern.contains(&b'*') {
                    o.dont_sort = true;
                } else if !full_key_access {
                    return Err(OpError::custom(
                        "ERR BY option of SORT denied due to insufficient ACL permissions.",
                    ));
                }
                o.by = Some(pattern);
                j += 1;
            } else if is_kw(arg, "get") && left >= 1 {
                if !full_key_access {
                    return Err(OpError::custom(
                        "ERR GET option of SORT denied due to insufficient ACL permissions.",
                    ));
                }
                o.get.push(&argv[j + 1]);
                j += 1;
            } else {
                return Err(OpError::Syntax);
            }
            j += 1;
        }
        Ok(o)
    }
}

/// Which type of value is being sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    List,
    Set,
    ZSet,
}

/// The inclusive output range `LIMIT` selects from `len` elements, Redis-style: a
/// negative offset is 0, a negative count means "to the end". `None` when empty.
fn limit_range(limit: Option<(i64, i64)>, len: usize) -> Option<(usize, usize)> {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let (offset, count) = limit.unwrap_or((0, -1));
    let start = offset.max(0);
    let mut end = if count < 0 {
        len - 1
    } else {
        start.saturating_add(count) - 1
    };
    if start >= len {
        return None;
    }
    end = end.min(len - 1);
    if end < start {
        return None;
    }
    // Both bounds are within 0..len here.
    Some((start as usize, end as usize))
}

/// One element to sort with its weight.
struct Item {
    elem: Vec<u8>,
    score: f64,
    /// The `BY` value for `ALPHA` sorts by pattern (`None` when the key is missing).
    cmp: Option<Vec<u8>>,
}

/// `SORT` and `SORT_RO`.
pub(super) fn sort(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let read_only = is_kw(&argv[0], "sort_ro");
    let full_key_access = crate::acl::reads_every_key(crate::command::access::client_user(
        ctx.engine(),
        ctx.client,
    ));
    let mut o = Options::parse(argv, read_only, full_key_access)?;
    let db = ctx.db();
    let (kind, elements) = load(ctx, db, &argv[1], &o)?;
    // An unsorted set would come out in hash order, which differs between replicas:
    // with STORE, or called from a script, Redis sorts it lexicographically instead.
    let in_script = ctx.client.nested.as_ref().is_some_and(|n| n.in_script);
    if o.dont_sort && kind == Kind::Set && (o.store.is_some() || in_script) {
        o.dont_sort = false;
        o.alpha = true;
        o.by = None;
    }
    let (elements, range) = match elements {
        // Lists and sorted sets left unsorted come back already cut to LIMIT.
        Loaded::Ranged(v) => {
            let range = v.len().checked_sub(1).map(|last| (0, last));
            (v, range)
        }
        Loaded::All(v) if o.dont_sort => {
            let range = limit_range(o.limit, v.len());
            (v, range)
        }
        Loaded::All(v) => {
            let sorted = sort_items(ctx, db, v, &o)?;
            let range = limit_range(o.limit, sorted.len());
            (sorted, range)
        }
    };
    let picked = match range {
        Some((start, end)) => &elements[start..=end],
        None => &[][..],
    };
    let mut out: Vec<Option<Vec<u8>>> = Vec::new();
    for elem in picked {
        if o.get.is_empty() {
            out.push(Some(elem.clone()));
        }
        for pattern in &o.get {
            out.push(lookup_by_pattern(ctx, db, pattern, elem)?);
        }
    }
    match o.store {
        None => Ok(Reply::Array(
            out.into_iter().map(Reply::bulk_or_null).collect(),
        )),
        Some(dst) => {
            let stored = out.len() as i64;
            if out.is_empty() {
                if ctx.ks.remove(db, dst)?.is_some() {
                    ctx.notify(crate::pubsub::notify::GENERIC, "del", dst);
                }
            } else {
                let list: ListValue = out.into_iter().map(Option::unwrap_or_default).collect();
                ctx.ks.set(db, dst, Value::List(list))?;
                ctx.notify(crate::pubsub::notify::LIST, "sortstore", dst);
            }
            Ok(Reply::Integer(stored))
        }
    }
}

/// The elements read from the sorted key.
enum Loaded {
    /// Every element, in the value's own order.
    All(Vec<Vec<u8>>),
    /// Only the `LIMIT` range, in final order (unsorted lists and sorted sets).
    Ranged(Vec<Vec<u8>>),
}

/// Reads the elements of the key to sort (a missing key is an empty list).
fn load(ctx: &mut Ctx<'_>, db: usize, key: &[u8], o: &Options<'_>) -> OpResult<(Kind, Loaded)> {
    // Redis converts a sorted set it sorts to the skiplist encoding, for good (even
    // SORT_RO, even when the sort then fails); OBJECT ENCODING shows it.
    if let Some(Value::ZSet(z)) = ctx.ks.get_mut(db, key)? {
        z.convert_to_skiplist();
    }
    let Some(value) = ctx.ks.get(db, key)? else {
        return Ok((Kind::List, Loaded::All(Vec::new())));
    };
    // Unsorted lists and sorted sets keep their own order, reversed by DESC, and only
    // the LIMIT range is read.
    let ranged = |items: Vec<Vec<u8>>| -> Loaded {
        let mut items = items;
        if o.desc {
            items.reverse();
        }
        match limit_range(o.limit, items.len()) {
            Some((start, end)) => Loaded::Ranged(items.drain(start..=end).collect()),
            None => Loaded::Ranged(Vec::new()),
        }
    };
    Ok(match value {
        Value::List(l) => {
            let items = l.iter().map(<[u8]>::to_vec).collect();
            (
                Kind::List,
                if o.dont_sort {
                    ranged(items)
                } else {
                    Loaded::All(items)
                },
            )
        }
        Value::ZSet(z) => {
            let items = z.iter().map(|m| m.member.to_vec()).collect();
            (
                Kind::ZSet,
                if o.dont_sort {
                    ranged(items)
                } else {
                    Loaded::All(items)
                },
            )
        }
        Value::Set(s) => (Kind::Set, Loaded::All(s.members())),
        _ => return Err(OpError::WrongType),
    })
}

/// Sorts the elements by their weights; fails if a numeric weight is not a number.
fn sort_items(
    ctx: &mut Ctx<'_>,
    db: usize,
    elements: Vec<Vec<u8>>,
    o: &Options<'_>,
) -> OpResult<Vec<Vec<u8>>> {
    let mut items = Vec::with_capacity(elements.len());
    let mut bad_score = false;
    for elem in elements {
        let weight = match o.by {
            Some(pattern) => lookup_by_pattern(ctx, db, pattern, &elem)?,
            None => None,
        };
        let mut item = Item {
            elem,
            score: 0.0,
            cmp: None,
        };
        if o.alpha {
            item.cmp = weight;
        } else {
            let by_value = match (&o.by, &weight) {
                (None, _) => Some(item.elem.as_slice()),
                (Some(_), w) => w.as_deref(),
            };
            // A missing weight key sorts as 0.
            if let Some(v) = by_value {
                match strtod_exact(v) {
                    Some(score) => item.score = score,
                    None => bad_score = true,
                }
            }
        }
        items.push(item);
    }
    if bad_score {
        return Err(OpError::custom(
            "ERR One or more scores can't be converted into double",
        ));
    }
    let by_pattern = o.by.is_some();
    let compare = |a: &Item, b: &Item| -> Ordering {
        let cmp = if !o.alpha {
            // Equal scores fall back to the elements, so the order is defined.
            a.score
                .partial_cmp(&b.score)
                .unwrap_or(Ordering::Equal)
                .then_with(|| a.elem.cmp(&b.elem))
        } else if by_pattern {
            // A missing weight sorts before any present one.
            a.cmp.cmp(&b.cmp)
        } else {
            a.elem.cmp(&b.elem)
        };
        if o.desc {
            cmp.reverse()
        } else {
            cmp
        }
    };
    items.sort_by(compare);
    Ok(items.into_iter().map(|i| i.elem).collect())
}

/// Resolves a `BY`/`GET` pattern for one element: `#` is the element itself; the first
/// `*` is replaced by the element; `key->field` reads a hash field. `None` when the
/// pattern has no `*`, the key is missing, or it holds the wrong type.
fn lookup_by_pattern(
    ctx: &mut Ctx<'_>,
    db: usize,
    pattern: &[u8],
    elem: &[u8],
) -> OpResult<Option<Vec<u8>>> {
    if pattern == b"#" {
        return Ok(Some(elem.to_vec()));
    }
    let Some(star) = pattern.iter().position(|&c| c == b'*') else {
        return Ok(None);
    };
    let arrow = pattern[star + 1..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|p| star + 1 + p)
        .filter(|&p| p + 2 < pattern.len());
    let (key_end, field) = match arrow {
        Some(p) => (p, Some(&pattern[p + 2..])),
        None => (pattern.len(), None),
    };
    let mut key = Vec::with_capacity(key_end + elem.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(elem);
    key.extend_from_slice(&pattern[star + 1..key_end]);
    Ok(match (ctx.ks.get(db, &key)?, field) {
        (Some(Value::Str(s)), None) => Some(s.as_bytes().to_vec()),
        (Some(Value::Hash(h)), Some(f)) => h.get(f).map(<[u8]>::to_vec),
        _ => None,
    })
}

/// Reads a whole byte string as a double the way Redis's `SORT` checks C's `strtod`:
/// leading white space, an optional sign, decimal or hexadecimal (`0x1p3`) notation,
/// `inf`/`infinity`; no trailing bytes (the string ends at a NUL byte, as in C), no
/// NaN, no overflow or underflow. An empty string reads as 0.
pub(crate) fn strtod_exact(s: &[u8]) -> Option<f64> {
    let s = s.split(|&c| c == 0).next().unwrap_or_default();
    let r = crate::util::strtod::strtod(s);
    if r.len != s.len() || r.range_error || r.value.is_nan() {
        return None;
    }
    Some(r.value)
}
