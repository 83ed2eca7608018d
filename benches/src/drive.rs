//! Pipelined workloads over several connections, shared by the wire harnesses: bulk
//! loads in write-a-batch/read-its-replies rounds, and query runs that keep a fixed
//! number of requests in flight per connection.

use crate::resp::{Conn, Value};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// How long one reply may take before a run counts the server as stuck.
pub const TIMEOUT: Duration = Duration::from_secs(300);

/// The outcome of pipelined work: time taken and error replies.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Wall-clock seconds, up to the last reply.
    pub secs: f64,
    /// Replies read.
    pub replies: usize,
    /// Error replies among them.
    pub errors: usize,
    /// The first error's text.
    pub first_error: Option<String>,
}

impl Outcome {
    fn add(&mut self, o: Outcome) {
        self.replies += o.replies;
        self.errors += o.errors;
        self.first_error = self.first_error.take().or(o.first_error);
    }
}

/// Sends `n` commands (`frame(i, buf)` appends command `i`) from `conns` connections,
/// `batch` at a time per connection (write the batch, then read its replies).
pub fn load(
    port: u16,
    conns: usize,
    n: usize,
    batch: usize,
    frame: impl Fn(usize, &mut Vec<u8>) + Sync,
) -> Result<Outcome, String> {
    let next = AtomicUsize::new(0);
    let t = Instant::now();
    let parts: Vec<Result<Outcome, String>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..conns)
            .map(|_| {
                s.spawn(|| {
                    let mut c = Conn::connect(port, TIMEOUT).map_err(|e| e.to_string())?;
                    let mut out = Outcome::default();
                    let mut buf = Vec::new();
                    loop {
                        let first = next.fetch_add(batch, Ordering::Relaxed);
                        if first >= n {
                            return Ok(out);
                        }
                        let end = (first + batch).min(n);
                        buf.clear();
                        (first..end).for_each(|i| frame(i, &mut buf));
                        c.send(&buf).map_err(|e| e.to_string())?;
                        for _ in first..end {
                            let v = c.read().map_err(|e| format!("load: {e}"))?;
                            out.replies += 1;
                            if let Some(e) = v.error() {
                                out.errors += 1;
                                out.first_error.get_or_insert(e);
                            }
                        }
                    }
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or(Err("loader panicked".into())))
            .collect()
    });
    let mut total = Outcome {
        secs: t.elapsed().as_secs_f64(),
        ..Outcome::default()
    };
    for p in parts {
        total.add(p?);
    }
    Ok(total)
}

/// The row ids in a reply listing keys or elements named `<prefix><row>`.
pub fn ids(v: &Value, prefix: &[u8]) -> Vec<u32> {
    let Value::Array(items) = v else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|i| match i {
            Value::Bulk(k) => k.strip_prefix(prefix),
            _ => None,
        })
        .filter_map(|r| std::str::from_utf8(r).ok()?.parse().ok())
        .collect()
}

/// Runs the pre-encoded queries `frames` from `conns` connections, each keeping `depth`
/// requests in flight, cycling through them until every query ran once and at least
/// `secs` passed. Returns the outcome and each query's first answer (row ids).
pub fn queries(
    port: u16,
    conns: usize,
    depth: usize,
    secs: f64,
    frames: &[Vec<u8>],
    prefix: &[u8],
) -> Result<(Outcome, Vec<Vec<u32>>), String> {
    let nq = frames.len();
    let next = AtomicUsize::new(0);
    let ready = Barrier::new(conns + 1);
    let min = Duration::from_secs_f64(secs);
    type Part = Result<(Outcome, Vec<(usize, Vec<u32>)>), String>;
    let (parts, elapsed): (Vec<Part>, Duration) = std::thread::scope(|s| {
        let hs: Vec<_> = (0..conns)
            .map(|_| {
                s.spawn(|| -> Part {
                    let conn = Conn::connect(port, TIMEOUT);
                    ready.wait();
                    let start = Instant::now();
                    let mut c = conn.map_err(|e| e.to_string())?;
                    let mut out = Outcome::default();
                    let mut answers = Vec::new();
                    let mut inflight = VecDeque::with_capacity(depth);
                    let mut more = true;
                    loop {
                        while more && inflight.len() < depth {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= nq && start.elapsed() >= min {
                                more = false;
                                break;
                            }
                            c.queue(&frames[i % nq]).map_err(|e| e.to_string())?;
                            inflight.push_back(i);
                        }
                        c.flush().map_err(|e| e.to_string())?;
                        let Some(i) = inflight.pop_front() else {
                            return Ok((out, answers));
                        };
                        let v = c.read().map_err(|e| format!("query: {e}"))?;
                        out.replies += 1;
                        if let Some(e) = v.error() {
                            out.errors += 1;
                            out.first_error.get_or_insert(e);
                        } else if i < nq {
                            answers.push((i, ids(&v, prefix)));
                        }
                    }
                })
            })
            .collect();
        ready.wait();
        let t = Instant::now();
        let parts = hs
            .into_iter()
            .map(|h| h.join().unwrap_or(Err("query thread panicked".into())))
            .collect();
        (parts, t.elapsed())
    });
    let mut total = Outcome {
        secs: elapsed.as_secs_f64(),
        ..Outcome::default()
    };
    let mut answers = vec![Vec::new(); nq];
    for p in parts {
        let (o, a) = p?;
        total.add(o);
        for (i, ids) in a {
            answers[i] = ids;
        }
    }
    Ok((total, answers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_numbered_names() {
        let v = Value::Array(vec![
            Value::Int(2),
            Value::Bulk(b"d:17".to_vec()),
            Value::Bulk(b"d:3".to_vec()),
            Value::Bulk(b"x:4".to_vec()),
        ]);
        assert_eq!(ids(&v, b"d:"), vec![17, 3]);
        assert!(ids(&Value::Int(0), b"d:").is_empty());
    }
}
