//! Vector search with Rust types: a vector set (Redis 8's `V*` commands, an HNSW
//! index under one key) filled from `f32` slices and searched for the `k` nearest
//! elements. Each call is the command it stands for (`VADD`, `VSIM … WITHSCORES`,
//! `VREM`), through the same admission as every command.

use super::typed::check;
use crate::engine::Engine;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

/// How a vector set stores its vectors, chosen by its first element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantization {
    /// Full-precision `f32` (`NOQUANT`).
    None,
    /// 8-bit integers (`Q8`, Redis's default).
    Q8,
    /// One bit per component (`BIN`).
    Binary,
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Neighbor {
    /// The element's name.
    pub element: Vec<u8>,
    /// Its similarity to the query: 1 identical, 0 opposite.
    pub similarity: f64,
}

fn fp32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn flag(reply: Reply) -> OpResult<bool> {
    match check(reply)? {
        Reply::Integer(n) => Ok(n == 1),
        Reply::Bool(b) => Ok(b),
        other => Err(OpError::custom(format!("ERR unexpected reply {other:?}"))),
    }
}

fn score(r: &Reply) -> Option<f64> {
    match r {
        Reply::Double(x) | Reply::ShortDouble(x) | Reply::HumanDouble(x) => Some(*x),
        other => std::str::from_utf8(other.as_bytes()?).ok()?.parse().ok(),
    }
}

impl Engine {
    /// `VADD key FP32 vector element [NOQUANT|Q8|BIN]`: adds (or moves) `element`,
    /// creating the set with `quantization` (`None`: the default); whether it is new.
    ///
    /// ```
    /// use pion_core::{Engine, EngineOptions, Quantization};
    ///
    /// let engine = Engine::in_memory(EngineOptions::default());
    /// let q = Some(Quantization::None);
    /// engine.vadd(0, b"docs", b"cat", &[1.0, 0.0, 0.0], q).unwrap();
    /// engine.vadd(0, b"docs", b"dog", &[0.9, 0.1, 0.0], q).unwrap();
    /// engine.vadd(0, b"docs", b"car", &[0.0, 0.0, 1.0], q).unwrap();
    ///
    /// let near = engine.vsim(0, b"docs", &[1.0, 0.05, 0.0], 2, None).unwrap();
    /// let names: Vec<&[u8]> = near.iter().map(|n| n.element.as_slice()).collect();
    /// assert_eq!(names, [&b"cat"[..], &b"dog"[..]]);
    /// assert!(engine.vrem(0, b"docs", b"car").unwrap());
    /// ```
    pub fn vadd(
        &self,
        db: usize,
        key: &[u8],
        element: &[u8],
        vector: &[f32],
        quantization: Option<Quantization>,
    ) -> OpResult<bool> {
        let mut argv = vec![
            b"VADD".to_vec(),
            key.to_vec(),
            b"FP32".to_vec(),
            fp32(vector),
            element.to_vec(),
        ];
        if let Some(q) = quantization {
            let word: &[u8] = match q {
                Quantization::None => b"NOQUANT",
                Quantization::Q8 => b"Q8",
                Quantization::Binary => b"BIN",
            };
            argv.push(word.to_vec());
        }
        flag(self.execute_argv(db, &argv, false).0)
    }

    /// `VSIM key FP32 query WITHSCORES COUNT k [EF ef]`: the `k` elements nearest
    /// `query`, nearest first (a missing key has none).
    pub fn vsim(
        &self,
        db: usize,
        key: &[u8],
        query: &[f32],
        k: usize,
        ef: Option<usize>,
    ) -> OpResult<Vec<Neighbor>> {
        let mut argv = vec![
            b"VSIM".to_vec(),
            key.to_vec(),
            b"FP32".to_vec(),
            fp32(query),
        ];
        argv.extend([
            b"WITHSCORES".to_vec(),
            b"COUNT".to_vec(),
            k.to_string().into_bytes(),
        ]);
        if let Some(ef) = ef {
            argv.extend([b"EF".to_vec(), ef.to_string().into_bytes()]);
        }
        match check(self.execute_argv(db, &argv, false).0)? {
            Reply::Map(pairs) | Reply::Pairs(pairs) => pairs
                .into_iter()
                .map(|(e, s)| match (e.as_bytes(), score(&s)) {
                    (Some(e), Some(similarity)) => Ok(Neighbor {
                        element: e.to_vec(),
                        similarity,
                    }),
                    _ => Err(OpError::custom("ERR unexpected VSIM result")),
                })
                .collect(),
            Reply::Array(items) if items.is_empty() => Ok(Vec::new()),
            Reply::Null | Reply::NullArray => Ok(Vec::new()),
            other => Err(OpError::custom(format!("ERR unexpected reply {other:?}"))),
        }
    }

    /// `VREM key element`: whether it was there.
    pub fn vrem(&self, db: usize, key: &[u8], element: &[u8]) -> OpResult<bool> {
        flag(
            self.execute_argv(
                db,
                &[b"VREM".to_vec(), key.to_vec(), element.to_vec()],
                false,
            )
            .0,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineOptions;

    #[test]
    fn refusals_and_missing_sets() {
        let e = Engine::in_memory(EngineOptions::default());
        assert!(e
            .vsim(0, b"none", &[1.0], 3, Some(10))
            .expect("search")
            .is_empty());
        assert!(e
            .vadd(0, b"v", b"a", &[1.0, 2.0], Some(Quantization::Q8))
            .expect("add"));
        assert!(!e.vadd(0, b"v", b"a", &[2.0, 1.0], None).expect("move"));
        assert!(
            e.vadd(0, b"v", b"b", &[1.0], None).is_err(),
            "another dimension"
        );
        e.set(0, b"s", b"x").expect("set");
        let err = e.vsim(0, b"s", &[1.0], 1, None).expect_err("a string key");
        assert!(
            err.wire_text().starts_with("WRONGTYPE"),
            "{}",
            err.wire_text()
        );
        assert!(!e.vrem(0, b"v", b"zzz").expect("rem"));
    }
}
