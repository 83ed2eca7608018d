//! `FT.SEARCH`'s filters outside the query string, as redis-py's `Query` emits them:
//! `FILTER field min max` (a numeric range), `GEOFILTER field lon lat radius unit`,
//! `INKEYS n key…`, and `INFIELDS n field…`, which keeps the query's text terms to
//! those fields (within any `@field:` a term already has). `FILTER` and `GEOFILTER`
//! join the query tree as `@field:[min max]` and `@field:[lon lat radius unit]` would,
//! so matches and text scores come out as RediSearch's (a field that is not of the
//! filter's kind matches nothing, as there); `INKEYS` narrows the matches before a KNN
//! clause picks from them.

use crate::error::{OpError, OpResult};
use crate::index::eval::Matches;
use crate::index::query::{FieldScope, GeoUnit, Node, NumericRange};
use crate::index::schema::FieldKind;
use crate::index::{DocSet, Docs, IndexDef};

/// `n item…` from `argv[*i]` on, with RediSearch's errors for option `what`.
fn counted_list(argv: &[Vec<u8>], i: &mut usize, what: &str) -> OpResult<Vec<Vec<u8>>> {
    let missing = || {
        err(format!(
            "Bad arguments for {what}: Expected an argument, but none provided"
        ))
    };
    let n: usize = argv.get(*i).ok_or_else(missing).and_then(|a| {
        std::str::from_utf8(a)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| {
                err(format!(
                    "Bad arguments for {what}: Could not convert argument to expected type"
                ))
            })
    })?;
    let items = argv.get(*i + 1..*i + 1 + n).ok_or_else(missing)?;
    *i += 1 + n;
    Ok(items.to_vec())
}

/// A scope narrowed to the `allowed` fields (`text_fields`: the schema's TEXT
/// fields in order, what an unrestricted scope covers).
fn narrow(scope: FieldScope, text_fields: &[Vec<u8>], allowed: &[Vec<u8>]) -> FieldScope {
    let from = match scope {
        FieldScope::All => text_fields.to_vec(),
        FieldScope::Fields(list) => list,
    };
    FieldScope::Fields(from.into_iter().filter(|f| allowed.contains(f)).collect())
}

/// Every text node of a query tree with its scope narrowed to `allowed`.
fn restrict(node: Node, text_fields: &[Vec<u8>], allowed: &[Vec<u8>]) -> Node {
    let n = |scope| narrow(scope, text_fields, allowed);
    let all = |children: Vec<Node>| -> Vec<Node> {
        children
            .into_iter()
            .map(|c| restrict(c, text_fields, allowed))
            .collect()
    };
    match node {
        Node::Term {
            fields,
            term,
            expanded,
        } => Node::Term {
            fields: n(fields),
            term,
            expanded,
        },
        Node::Prefix { fields, prefix } => Node::Prefix {
            fields: n(fields),
            prefix,
        },
        Node::Suffix { fields, suffix } => Node::Suffix {
            fields: n(fields),
            suffix,
        },
        Node::Fuzzy {
            fields,
            term,
            distance,
        } => Node::Fuzzy {
            fields: n(fields),
            term,
            distance,
        },
        Node::Phrase { fields, terms } => Node::Phrase {
            fields: n(fields),
            terms,
        },
        Node::Intersect { fields, children } => Node::Intersect {
            fields,
            children: all(children),
        },
        Node::Union { fields, children } => Node::Union {
            fields,
            children: all(children),
        },
        Node::Not { fields, child } => Node::Not {
            fields,
            child: Box::new(restrict(*child, text_fields, allowed)),
        },
        Node::Optional { fields, child } => Node::Optional {
            fields,
            child: Box::new(restrict(*child, text_fields, allowed)),
        },
        other => other,
    }
}

fn err(text: impl Into<String>) -> OpError {
    OpError::custom(text.into())
}

/// The filters of one `FT.SEARCH`.
#[derive(Debug, Default)]
pub(super) struct ResultFilters {
    /// `FILTER` ranges by field name.
    numeric: Vec<(Vec<u8>, NumericRange)>,
    /// `GEOFILTER`, as the radius clause it is (the last one given counts, as in
    /// RediSearch; several `FILTER`s all apply).
    geo: Option<Node>,
    /// `INKEYS`: only these keys (a later `INKEYS` replaces an earlier one).
    keys: Option<Vec<Vec<u8>>>,
    /// `INFIELDS`: text terms match in these fields only (the last one given counts).
    in_fields: Option<Vec<Vec<u8>>>,
}

/// One bound of a `FILTER`: a number (`(` makes it exclusive), `-inf` below, `+inf`
/// or `inf` above.
fn bound(raw: &[u8], lower: bool) -> OpResult<(f64, bool)> {
    let (exclusive, text) = match raw.strip_prefix(b"(") {
        Some(rest) => (true, rest),
        None => (false, raw),
    };
    let which = if lower { "lower" } else { "upper" };
    let bad = || {
        err(format!(
            "Bad {which} range: {}",
            String::from_utf8_lossy(text)
        ))
    };
    let value = if lower && text.eq_ignore_ascii_case(b"-inf") {
        f64::NEG_INFINITY
    } else if !lower && (text.eq_ignore_ascii_case(b"+inf") || text.eq_ignore_ascii_case(b"inf")) {
        f64::INFINITY
    } else {
        crate::index::query::parse_number(text)
            .filter(|v| v.is_finite())
            .ok_or_else(bad)?
    };
    Ok((value, exclusive))
}

impl ResultFilters {
    /// `FILTER field min max`, from `argv[*i]` on.
    pub(super) fn parse_numeric(&mut self, argv: &[Vec<u8>], i: &mut usize) -> OpResult<()> {
        let [field, lo, hi] = argv.get(*i..*i + 3).unwrap_or_default() else {
            return Err(err("FILTER requires 3 arguments"));
        };
        let (min, min_excl) = bound(lo, true)?;
        let (max, max_excl) = bound(hi, false)?;
        self.numeric.push((
            field.clone(),
            NumericRange {
                min,
                min_inclusive: !min_excl,
                max,
                max_inclusive: !max_excl,
            },
        ));
        *i += 3;
        Ok(())
    }

    /// `GEOFILTER field lon lat radius m|km|mi|ft`, from `argv[*i]` on.
    pub(super) fn parse_geo(&mut self, argv: &[Vec<u8>], i: &mut usize) -> OpResult<()> {
        let [field, lon, lat, radius, unit] = argv.get(*i..*i + 5).unwrap_or_default() else {
            return Err(err("GEOFILTER requires 5 arguments"));
        };
        let mut nums = [0.0; 3];
        for (slot, (what, v)) in
            nums.iter_mut()
                .zip([("<lon>", lon), ("<lat>", lat), ("<radius>", radius)])
        {
            *slot = crate::index::query::parse_number(v).ok_or_else(|| {
                err(format!(
                    "Bad arguments for {what}: Could not convert argument to expected type"
                ))
            })?;
        }
        let unit = match unit.to_ascii_lowercase().as_slice() {
            b"m" => GeoUnit::M,
            b"km" => GeoUnit::Km,
            b"mi" => GeoUnit::Mi,
            b"ft" => GeoUnit::Ft,
            _ => {
                return Err(err(format!(
                    "Unknown distance unit {}",
                    String::from_utf8_lossy(unit)
                )))
            }
        };
        let [lon, lat, radius] = nums;
        self.geo = Some(Node::Geo {
            field: field.clone(),
            lon,
            lat,
            radius,
            unit,
        });
        *i += 5;
        Ok(())
    }

    /// `INKEYS n key…`, from `argv[*i]` on.
    pub(super) fn parse_keys(&mut self, argv: &[Vec<u8>], i: &mut usize) -> OpResult<()> {
        self.keys = Some(counted_list(argv, i, "INKEYS")?);
        Ok(())
    }

    /// `INFIELDS n field…`, from `argv[*i]` on.
    pub(super) fn parse_fields(&mut self, argv: &[Vec<u8>], i: &mut usize) -> OpResult<()> {
        self.in_fields = Some(counted_list(argv, i, "INFIELDS")?);
        Ok(())
    }

    /// The query tree with `INFIELDS` applied to its text terms and the `FILTER`
    /// ranges intersected into it.
    pub(super) fn wrap(&self, def: &IndexDef, filter: Node) -> Node {
        let filter = match &self.in_fields {
            Some(allowed) => {
                let text_fields: Vec<Vec<u8>> = def
                    .fields
                    .iter()
                    .filter(|f| matches!(f.kind, FieldKind::Text { .. }))
                    .map(|f| f.name.clone())
                    .collect();
                restrict(filter, &text_fields, allowed)
            }
            None => filter,
        };
        if self.numeric.is_empty() && self.geo.is_none() {
            return filter;
        }
        let mut children = vec![filter];
        children.extend(self.numeric.iter().map(|(field, range)| Node::Numeric {
            field: field.clone(),
            range: *range,
        }));
        children.extend(self.geo.iter().cloned());
        Node::Intersect {
            fields: FieldScope::All,
            children,
        }
    }

    /// Narrows `matches` to the documents `INKEYS` keeps.
    pub(super) fn apply(&self, docs: &Docs, matches: &mut Matches) {
        if let Some(keys) = &self.keys {
            let mut kept = DocSet::new();
            for id in keys.iter().filter_map(|k| docs.id_of(k)) {
                kept.insert(id);
            }
            matches.set.and(&kept);
        }
    }
}
