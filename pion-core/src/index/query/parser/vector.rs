//! The vector parts of the grammar (DIALECT 2): `=>[KNN …]` clauses and
//! `[VECTOR_RANGE …]` filters, with RediSearch's validation of their options.

use super::super::ast::{Hybrid, HybridPolicy, VectorClause, VectorOption, VectorRange};
use super::super::lexer::Kind;
use super::super::params::{invalid_numeric, parse_count, parse_double};
use super::super::QueryError;
use super::{invalid_attribute, vector_params_error, PResult, Parser};
use crate::index::query::Node;

impl Parser<'_> {
    /// `[VECTOR_RANGE radius $blob]` and its `=>{…}` attributes.
    pub(super) fn vector_range(&mut self, field: Vec<u8>) -> PResult<Node> {
        let cmd_idx = self.at;
        let cmd = self.bump();
        let r_idx = self.at;
        let r_tok = self.bump();
        let (radius_raw, from_param) = match r_tok.kind {
            Kind::Number => (r_tok.raw.clone(), false),
            Kind::Param => (self.param(r_idx)?, true),
            _ => return Err(self.syntax_at(r_idx, "")),
        };
        let b_idx = self.at;
        let blob_tok = self.expect(Kind::Param)?;
        let blob = self.param(b_idx)?;
        self.expect(Kind::RBracket)?;
        if !cmd.raw.eq_ignore_ascii_case(b"VECTOR_RANGE") {
            return Err(self.syntax_at(cmd_idx, ": expecting vector similarity range command"));
        }
        let radius = match parse_double(&radius_raw) {
            Some(r) => r,
            None if from_param => return Err(invalid_numeric(&r_tok.raw, &radius_raw)),
            None => return Err(self.syntax_at(r_idx, "")),
        };
        if radius < 0.0 {
            return Err(QueryError::new(format!(
                "Error parsing vector similarity query: negative radius ({}) given in a range query",
                crate::util::num::fmt_g(radius, 6)
            )));
        }
        let mut range = VectorRange {
            field,
            radius,
            blob,
            blob_param: blob_tok.raw,
            epsilon: None,
            written: Vec::new(),
            yield_distance_as: None,
        };
        if self.kind() == Kind::Arrow && self.peek_at(1).kind == Kind::LBrace {
            self.bump();
            self.bump();
            for (name, value) in self.attribute_list()? {
                let lower = name.to_ascii_lowercase();
                match lower.as_slice() {
                    b"yield_distance_as" => range.yield_distance_as = Some(value),
                    b"epsilon" => {
                        if range.epsilon.is_some() {
                            return Err(vector_params_error("Parameter was specified twice"));
                        }
                        range.written.push((name.clone(), value.clone()));
                        range.epsilon = Some(positive_option(name, value, false)?);
                    }
                    b"ef_runtime" => return Err(vector_params_error("Invalid option")),
                    b"hybrid_policy" | b"batch_size" => range.written.push((name, value)),
                    _ => return Err(invalid_attribute(&name)),
                }
            }
        }
        Ok(Node::VectorRange(range))
    }

    /// `KNN k @field $blob [EF_RUNTIME n] [HYBRID_POLICY p [BATCH_SIZE n]] [AS name] ]`
    /// after `=>[`, then optional `=>{…}` attributes.
    pub(super) fn knn(&mut self) -> PResult<VectorClause> {
        let cmd_idx = self.at;
        let cmd = self.bump();
        if cmd.kind != Kind::Term || !cmd.raw.eq_ignore_ascii_case(b"KNN") {
            return Err(self.syntax_at(cmd_idx, ": Expecting Vector Similarity command"));
        }
        let k_idx = self.at;
        let k_tok = self.bump();
        let k = match k_tok.kind {
            Kind::Number => parse_count(&k_tok.raw).ok_or_else(|| self.syntax_at(k_idx, ""))?,
            Kind::Param => {
                let v = self.param(k_idx)?;
                parse_count(&v).ok_or_else(|| invalid_numeric(&k_tok.raw, &v))?
            }
            _ => return Err(self.syntax_at(k_idx, "")),
        };
        let field = self.expect(Kind::Modifier)?.raw;
        let b_idx = self.at;
        let blob_param = self.expect(Kind::Param)?.raw;
        let blob = self.param(b_idx)?;
        let mut options: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut alias = None;
        while self.kind() != Kind::RBracket {
            let i = self.at;
            let t = self.bump();
            if t.kind != Kind::Term || alias.is_some() {
                return Err(self.syntax_at(i, ""));
            }
            let j = self.at;
            let v = self.bump();
            let value = match v.kind {
                Kind::Term | Kind::Number => v.raw,
                Kind::Param => self.param(j)?,
                _ => return Err(self.syntax_at(j, "")),
            };
            if t.raw.eq_ignore_ascii_case(b"AS") {
                alias = Some(value);
            } else {
                options.push((t.raw, value));
            }
        }
        self.bump();
        let mut clause = VectorClause {
            field,
            k,
            blob,
            blob_param,
            ef_runtime: None,
            written: Vec::new(),
            yield_distance_as: alias,
        };
        for (name, value) in options {
            knn_option(&mut clause, name, value)?;
        }
        if self.kind() == Kind::Arrow && self.peek_at(1).kind == Kind::LBrace {
            self.bump();
            self.bump();
            for (name, value) in self.attribute_list()? {
                if name.eq_ignore_ascii_case(b"YIELD_DISTANCE_AS") {
                    if let Some(prev) = &clause.yield_distance_as {
                        return Err(QueryError::new(format!(
                            "Distance field was specified twice for vector query: {} and {}",
                            String::from_utf8_lossy(prev),
                            String::from_utf8_lossy(&value)
                        )));
                    }
                    clause.yield_distance_as = Some(value);
                } else if [
                    &b"EF_RUNTIME"[..],
                    b"EPSILON",
                    b"HYBRID_POLICY",
                    b"BATCH_SIZE",
                ]
                .iter()
                .any(|o| name.eq_ignore_ascii_case(o))
                {
                    knn_option(&mut clause, name, value)?;
                } else {
                    return Err(invalid_attribute(&name));
                }
            }
        }
        Ok(clause)
    }
}

fn non_hybrid() -> QueryError {
    vector_params_error("hybrid query attributes were sent for a non-hybrid query")
}

impl VectorRange {
    /// Fails if the range has hybrid attributes, as RediSearch does when it runs one.
    pub fn check_not_hybrid(&self) -> Result<(), QueryError> {
        let hybrid = self.written.iter().any(|(name, _)| {
            name.eq_ignore_ascii_case(b"HYBRID_POLICY") || name.eq_ignore_ascii_case(b"BATCH_SIZE")
        });
        if hybrid {
            return Err(non_hybrid());
        }
        Ok(())
    }
}

impl VectorClause {
    /// The hybrid options, checked as RediSearch checks them when the query runs
    /// (the parser, like `FT.EXPLAIN … VERBATIM`, takes them as written). `filtered`:
    /// the query has a filter other than `*`, which the options need.
    pub fn hybrid(&self, filtered: bool) -> Result<Hybrid, QueryError> {
        let twice = || vector_params_error("Parameter was specified twice");
        let mut h = Hybrid::default();
        for (name, value) in &self.written {
            let policy = name.eq_ignore_ascii_case(b"HYBRID_POLICY");
            if !policy && !name.eq_ignore_ascii_case(b"BATCH_SIZE") {
                continue;
            }
            if !filtered {
                return Err(non_hybrid());
            }
            if policy {
                if h.policy.is_some() {
                    return Err(twice());
                }
                h.policy = Some(if value.eq_ignore_ascii_case(b"ADHOC_BF") {
                    HybridPolicy::AdhocBf
                } else if value.eq_ignore_ascii_case(b"BATCHES") {
                    HybridPolicy::Batches
                } else {
                    return Err(vector_params_error("invalid hybrid policy was given"));
                });
            } else {
                if h.batch_size.is_some() {
                    return Err(twice());
                }
                let size = positive_option(name.clone(), value.clone(), true)?;
                h.batch_size = Some(size.value as u64);
            }
        }
        if h.policy == Some(HybridPolicy::AdhocBf) {
            if h.batch_size.is_some() {
                return Err(vector_params_error(
                    "'batch size' is irrelevant for 'ADHOC_BF' policy",
                ));
            }
            if self.ef_runtime.is_some() {
                return Err(vector_params_error(
                    "'EF_RUNTIME' is irrelevant for 'ADHOC_BF' policy",
                ));
            }
        }
        Ok(h)
    }
}

/// Applies one KNN option (`EF_RUNTIME n`; `HYBRID_POLICY p` and `BATCH_SIZE n`, kept
/// as written for [`VectorClause::hybrid`]; `EPSILON` belongs to range queries).
fn knn_option(clause: &mut VectorClause, name: Vec<u8>, value: Vec<u8>) -> PResult<()> {
    let written = (name.clone(), value.clone());
    if name.eq_ignore_ascii_case(b"EF_RUNTIME") {
        if clause.ef_runtime.is_some() {
            return Err(vector_params_error("Parameter was specified twice"));
        }
        clause.ef_runtime = Some(positive_option(name, value, true)?);
    } else if name.eq_ignore_ascii_case(b"EPSILON") {
        return Err(vector_params_error(
            "range query attributes were sent for a non-range query",
        ));
    } else if !name.eq_ignore_ascii_case(b"HYBRID_POLICY")
        && !name.eq_ignore_ascii_case(b"BATCH_SIZE")
    {
        return Err(vector_params_error("Invalid option"));
    }
    clause.written.push(written);
    Ok(())
}

/// A vector option's value: a positive integer (`integer`) or a positive number.
fn positive_option(name: Vec<u8>, raw: Vec<u8>, integer: bool) -> PResult<VectorOption> {
    let value = if integer {
        parse_count(&raw).filter(|&n| n > 0).map(|n| n as f64)
    } else {
        parse_double(&raw).filter(|&v| v > 0.0)
    };
    let value = value.ok_or_else(|| vector_params_error("Invalid value was given"))?;
    Ok(VectorOption { name, raw, value })
}
