//! The typed Rust API: common operations with Rust types in and out, for applications
//! that link the engine. Each call runs the same handler as the wire command, so the
//! semantics (and errors) are Redis's.

use crate::engine::Engine;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

/// An error reply as an error, anything else as it is.
pub(super) fn check(reply: Reply) -> OpResult<Reply> {
    match reply {
        Reply::Error(text) => Err(OpError::Custom(text.into())),
        other => Ok(other),
    }
}

fn int(reply: Reply) -> OpResult<i64> {
    match check(reply)? {
        Reply::Integer(n) => Ok(n),
        other => Err(OpError::custom(format!("ERR unexpected reply {other:?}"))),
    }
}

fn opt_bytes(reply: Reply) -> OpResult<Option<Vec<u8>>> {
    match check(reply)? {
        Reply::Bulk(b) => Ok(Some(b)),
        Reply::Null | Reply::NullArray => Ok(None),
        other => Err(OpError::custom(format!("ERR unexpected reply {other:?}"))),
    }
}

fn bytes_list(reply: Reply) -> OpResult<Vec<Vec<u8>>> {
    match check(reply)? {
        Reply::Array(items) | Reply::Set(items) => items
            .into_iter()
            .map(|r| opt_bytes(r).map(Option::unwrap_or_default))
            .collect(),
        other => Err(OpError::custom(format!("ERR unexpected reply {other:?}"))),
    }
}

impl Engine {
    /// `GET key`.
    pub fn get(&self, db: usize, key: &[u8]) -> OpResult<Option<Vec<u8>>> {
        opt_bytes(self.execute(db, &[&b"GET"[..], key]))
    }

    /// `SET key value`.
    pub fn set(&self, db: usize, key: &[u8], value: &[u8]) -> OpResult<()> {
        check(self.execute(db, &[&b"SET"[..], key, value])).map(drop)
    }

    /// `SET key value PX ttl_ms`.
    pub fn set_px(&self, db: usize, key: &[u8], value: &[u8], ttl_ms: u64) -> OpResult<()> {
        let ttl = ttl_ms.to_string();
        check(self.execute(db, &[&b"SET"[..], key, value, b"PX", ttl.as_bytes()])).map(drop)
    }

    /// `DEL key …`: number of keys removed.
    pub fn del(&self, db: usize, keys: &[&[u8]]) -> OpResult<i64> {
        let mut args: Vec<&[u8]> = vec![b"DEL"];
        args.extend_from_slice(keys);
        int(self.execute(db, &args))
    }

    /// `PEXPIRE key ms`: whether the timeout was set.
    pub fn pexpire(&self, db: usize, key: &[u8], ms: i64) -> OpResult<bool> {
        let ms = ms.to_string();
        Ok(int(self.execute(db, &[&b"PEXPIRE"[..], key, ms.as_bytes()]))? == 1)
    }

    /// `PTTL key`: -2 missing, -1 no expiry, else milliseconds left.
    pub fn pttl(&self, db: usize, key: &[u8]) -> OpResult<i64> {
        int(self.execute(db, &[&b"PTTL"[..], key]))
    }

    /// `INCRBY key n`.
    pub fn incr_by(&self, db: usize, key: &[u8], n: i64) -> OpResult<i64> {
        let n = n.to_string();
        int(self.execute(db, &[&b"INCRBY"[..], key, n.as_bytes()]))
    }

    /// `HSET key field value`: whether the field is new.
    pub fn hset(&self, db: usize, key: &[u8], field: &[u8], value: &[u8]) -> OpResult<bool> {
        Ok(int(self.execute(db, &[&b"HSET"[..], key, field, value]))? == 1)
    }

    /// `HGET key field`.
    pub fn hget(&self, db: usize, key: &[u8], field: &[u8]) -> OpResult<Option<Vec<u8>>> {
        opt_bytes(self.execute(db, &[&b"HGET"[..], key, field]))
    }

    /// `HGETALL key` as pairs.
    pub fn hgetall(&self, db: usize, key: &[u8]) -> OpResult<Vec<(Vec<u8>, Vec<u8>)>> {
        match check(self.execute(db, &[&b"HGETALL"[..], key]))? {
            Reply::Map(pairs) => pairs
                .into_iter()
                .map(|(k, v)| {
                    Ok((
                        opt_bytes(k)?.unwrap_or_default(),
                        opt_bytes(v)?.unwrap_or_default(),
                    ))
                })
                .collect(),
            Reply::Array(flat) => {
                let items = bytes_list(Reply::Array(flat))?;
                Ok(items
                    .chunks(2)
                    .filter(|c| c.len() == 2)
                    .map(|c| (c[0].clone(), c[1].clone()))
                    .collect())
            }
            other => Err(OpError::custom(format!("ERR unexpected reply {other:?}"))),
        }
    }

    /// `RPUSH key value …`: the new length.
    pub fn rpush(&self, db: usize, key: &[u8], values: &[&[u8]]) -> OpResult<i64> {
        let mut args: Vec<&[u8]> = vec![b"RPUSH", key];
        args.extend_from_slice(values);
        int(self.execute(db, &args))
    }

    /// `LPUSH key value …`: the new length.
    pub fn lpush(&self, db: usize, key: &[u8], values: &[&[u8]]) -> OpResult<i64> {
        let mut args: Vec<&[u8]> = vec![b"LPUSH", key];
        args.extend_from_slice(values);
        int(self.execute(db, &args))
    }

    /// `LRANGE key start stop`.
    pub fn lrange(&self, db: usize, key: &[u8], start: i64, stop: i64) -> OpResult<Vec<Vec<u8>>> {
        let (a, b) = (start.to_string(), stop.to_string());
        bytes_list(self.execute(db, &[&b"LRANGE"[..], key, a.as_bytes(), b.as_bytes()]))
    }

    /// `SADD key member …`: members added.
    pub fn sadd(&self, db: usize, key: &[u8], members: &[&[u8]]) -> OpResult<i64> {
        let mut args: Vec<&[u8]> = vec![b"SADD", key];
        args.extend_from_slice(members);
        int(self.execute(db, &args))
    }

    /// `SMEMBERS key`.
    pub fn smembers(&self, db: usize, key: &[u8]) -> OpResult<Vec<Vec<u8>>> {
        bytes_list(self.execute(db, &[&b"SMEMBERS"[..], key]))
    }

    /// `ZADD key score member`: whether the member is new.
    pub fn zadd(&self, db: usize, key: &[u8], score: f64, member: &[u8]) -> OpResult<bool> {
        let s = crate::util::num::fmt_g17(score);
        Ok(int(self.execute(db, &[&b"ZADD"[..], key, s.as_bytes(), member]))? == 1)
    }

    /// `ZSCORE key member`.
    pub fn zscore(&self, db: usize, key: &[u8], member: &[u8]) -> OpResult<Option<f64>> {
        match check(self.execute(db, &[&b"ZSCORE"[..], key, member]))? {
            Reply::Double(d) | Reply::ShortDouble(d) | Reply::HumanDouble(d) => Ok(Some(d)),
            Reply::Null => Ok(None),
            other => Err(OpError::custom(format!("ERR unexpected reply {other:?}"))),
        }
    }

    /// `ZRANGE key start stop`: members by rank.
    pub fn zrange(&self, db: usize, key: &[u8], start: i64, stop: i64) -> OpResult<Vec<Vec<u8>>> {
        let (a, b) = (start.to_string(), stop.to_string());
        bytes_list(self.execute(db, &[&b"ZRANGE"[..], key, a.as_bytes(), b.as_bytes()]))
    }
}
