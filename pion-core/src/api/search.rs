//! Search indexes with Rust types: an `FT.SEARCH` described by a [`SearchQuery`] and
//! its reply read into [`SearchResults`]. Indexes are made with `FT.CREATE` through
//! [`Engine::execute`]; the call is the command it stands for, through the same
//! admission as every command, so its errors are RediSearch's.

use super::typed::check;
use crate::engine::Engine;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

/// An `FT.SEARCH` request: the query and the options that shape its results.
#[derive(Debug, Clone, Default)]
pub struct SearchQuery<'a> {
    /// The query text (`"@title:redis"`, `"*=>[KNN 5 @v $blob]"` …).
    pub query: &'a str,
    /// `PARAMS`: the values the query names as `$name` (vector blobs are bytes).
    pub params: Vec<(&'a str, &'a [u8])>,
    /// `LIMIT offset count` (RediSearch's default: the first 10).
    pub limit: Option<(usize, usize)>,
    /// `RETURN`: only these fields (empty: every field).
    pub return_fields: Vec<&'a str>,
    /// `NOCONTENT`: keys only, no fields.
    pub no_content: bool,
    /// `WITHSCORES`: each hit's score.
    pub with_scores: bool,
    /// `SORTBY field ASC|DESC` (`true`: ascending).
    pub sort_by: Option<(&'a str, bool)>,
    /// `DIALECT` (2 for vector queries with `PARAMS`, as RediSearch asks).
    pub dialect: Option<u32>,
}

/// One document found.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The document's key.
    pub key: Vec<u8>,
    /// Its score, when asked for (`with_scores`).
    pub score: Option<f64>,
    /// Its fields as returned (none with `no_content`).
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
}

/// What `FT.SEARCH` found.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResults {
    /// How many documents match in all (not only those returned).
    pub total: u64,
    /// The documents returned, in order.
    pub hits: Vec<SearchHit>,
}

fn unexpected(what: &str, r: &Reply) -> OpError {
    OpError::custom(format!("ERR unexpected {what} in FT.SEARCH's reply: {r:?}"))
}

fn bytes(r: Reply) -> OpResult<Vec<u8>> {
    match r {
        Reply::Bulk(b) | Reply::Verbatim(_, b) => Ok(b),
        Reply::Status(s) => Ok(s.as_bytes().to_vec()),
        Reply::Null => Ok(Vec::new()),
        other => Err(unexpected("value", &other)),
    }
}

impl SearchQuery<'_> {
    fn argv(&self, index: &str) -> Vec<Vec<u8>> {
        let mut argv: Vec<Vec<u8>> = vec![b"FT.SEARCH".to_vec(), index.into(), self.query.into()];
        let mut word = |w: &str| argv.push(w.as_bytes().to_vec());
        if self.no_content {
            word("NOCONTENT");
        }
        if self.with_scores {
            word("WITHSCORES");
        }
        if !self.return_fields.is_empty() {
            word("RETURN");
            word(&self.return_fields.len().to_string());
            for f in &self.return_fields {
                word(f);
            }
        }
        if let Some((field, ascending)) = self.sort_by {
            word("SORTBY");
            word(field);
            word(if ascending { "ASC" } else { "DESC" });
        }
        if let Some((offset, count)) = self.limit {
            word("LIMIT");
            word(&offset.to_string());
            word(&count.to_string());
        }
        if !self.params.is_empty() {
            argv.push(b"PARAMS".to_vec());
            argv.push((self.params.len() * 2).to_string().into_bytes());
            for (name, value) in &self.params {
                argv.push(name.as_bytes().to_vec());
                argv.push(value.to_vec());
            }
        }
        if let Some(d) = self.dialect {
            argv.push(b"DIALECT".to_vec());
            argv.push(d.to_string().into_bytes());
        }
        argv
    }

    /// Reads the (RESP2-shaped) reply: the total, then per hit its key, its score
    /// when asked for, and its fields unless `no_content`.
    fn read(&self, reply: Reply) -> OpResult<SearchResults> {
        let Reply::Array(items) = check(reply)? else {
            return Err(OpError::custom("ERR FT.SEARCH gave no array"));
        };
        let mut items = items.into_iter();
        let total = match items.next() {
            Some(Reply::Integer(n)) => u64::try_from(n).unwrap_or(0),
            other => return Err(unexpected("total", &other.unwrap_or(Reply::Null))),
        };
        let mut hits = Vec::new();
        while let Some(key) = items.next() {
            let key = bytes(key)?;
            let score = if self.with_scores {
                let s = items
                    .next()
                    .ok_or_else(|| OpError::custom("ERR FT.SEARCH's reply was cut short"))?;
                Some(score_of(&s)?)
            } else {
                None
            };
            let fields = if self.no_content {
                Vec::new()
            } else {
                fields_of(items.next())?
            };
            hits.push(SearchHit { key, score, fields });
        }
        Ok(SearchResults { total, hits })
    }
}

fn score_of(r: &Reply) -> OpResult<f64> {
    match r {
        Reply::Double(x) | Reply::ShortDouble(x) | Reply::HumanDouble(x) => Ok(*x),
        other => other
            .as_bytes()
            .and_then(|b| std::str::from_utf8(b).ok())
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| unexpected("score", other)),
    }
}

fn fields_of(r: Option<Reply>) -> OpResult<Vec<(Vec<u8>, Vec<u8>)>> {
    match r {
        Some(Reply::Array(pairs)) => {
            let mut out = Vec::with_capacity(pairs.len() / 2);
            let mut it = pairs.into_iter();
            while let (Some(name), Some(value)) = (it.next(), it.next()) {
                out.push((bytes(name)?, bytes(value)?));
            }
            Ok(out)
        }
        Some(Reply::Null | Reply::NullArray) => Ok(Vec::new()),
        other => Err(unexpected("fields", &other.unwrap_or(Reply::Null))),
    }
}

impl Engine {
    /// `FT.SEARCH index query …` with the options of `q`, its reply as Rust values.
    ///
    /// ```
    /// use pion_core::api::search::SearchQuery;
    /// use pion_core::{Engine, EngineOptions};
    ///
    /// let engine = Engine::in_memory(EngineOptions::default());
    /// engine.execute(0, &["FT.CREATE", "docs", "PREFIX", "1", "doc:", "SCHEMA",
    ///     "title", "TEXT", "year", "NUMERIC", "SORTABLE"]);
    /// engine.execute(0, &["HSET", "doc:1", "title", "prefix caching", "year", "2024"]);
    /// engine.execute(0, &["HSET", "doc:2", "title", "caching K/V blocks", "year", "2025"]);
    ///
    /// let q = SearchQuery { query: "caching", sort_by: Some(("year", false)),
    ///     return_fields: vec!["title"], ..Default::default() };
    /// let found = engine.ft_search("docs", &q).unwrap();
    /// assert_eq!(found.total, 2);
    /// assert_eq!(found.hits[0].key, b"doc:2");
    /// assert_eq!(found.hits[0].fields, vec![(b"title".to_vec(), b"caching K/V blocks".to_vec())]);
    /// ```
    pub fn ft_search(&self, index: &str, q: &SearchQuery<'_>) -> OpResult<SearchResults> {
        let (reply, _) = self.execute_argv(0, &q.argv(index), false);
        q.read(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineOptions;

    fn engine() -> Engine {
        let e = Engine::in_memory(EngineOptions::default());
        let create = [
            "FT.CREATE",
            "i",
            "PREFIX",
            "1",
            "d:",
            "SCHEMA",
            "t",
            "TEXT",
            "n",
            "NUMERIC",
            "SORTABLE",
            "v",
            "VECTOR",
            "FLAT",
            "6",
            "TYPE",
            "FLOAT32",
            "DIM",
            "2",
            "DISTANCE_METRIC",
            "L2",
        ];
        assert_eq!(e.execute(0, &create), Reply::ok());
        for (key, t, n, v) in [
            ("d:1", "red fox", "1", [0.0f32, 0.0]),
            ("d:2", "red hen", "2", [1.0, 0.0]),
        ] {
            let blob: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            let argv: Vec<Vec<u8>> = ["HSET", key, "t", t, "n", n, "v"]
                .iter()
                .map(|s| s.as_bytes().to_vec())
                .chain([blob])
                .collect();
            e.execute(0, &argv);
        }
        e
    }

    #[test]
    fn scores_keys_only_and_knn_with_params() {
        let e = engine();
        let scored = SearchQuery {
            query: "red",
            with_scores: true,
            no_content: true,
            sort_by: Some(("n", true)),
            ..Default::default()
        };
        let found = e.ft_search("i", &scored).expect("search");
        assert_eq!(found.total, 2);
        let keys: Vec<&[u8]> = found.hits.iter().map(|h| h.key.as_slice()).collect();
        assert_eq!(keys, [&b"d:1"[..], b"d:2"]);
        assert!(found
            .hits
            .iter()
            .all(|h| h.score.is_some() && h.fields.is_empty()));

        let query: Vec<u8> = [0.9f32, 0.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let knn = SearchQuery {
            query: "*=>[KNN 1 @v $q]",
            params: vec![("q", &query)],
            return_fields: vec!["t"],
            dialect: Some(2),
            ..Default::default()
        };
        let found = e.ft_search("i", &knn).expect("knn");
        assert_eq!(found.hits.len(), 1);
        assert_eq!(found.hits[0].key, b"d:2");
        assert_eq!(
            found.hits[0].fields,
            vec![(b"t".to_vec(), b"red hen".to_vec())]
        );
    }

    #[test]
    fn errors_are_redisearchs() {
        let e = engine();
        let q = SearchQuery {
            query: "red",
            ..Default::default()
        };
        let err = e.ft_search("nope", &q).expect_err("no index");
        assert!(
            err.wire_text().contains("no such index"),
            "{}",
            err.wire_text()
        );
        let bad = SearchQuery {
            query: "@t:(",
            ..Default::default()
        };
        assert!(e.ft_search("i", &bad).is_err());
    }
}
