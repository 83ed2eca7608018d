//! Batching: concurrent embedding requests share one forward pass.
//!
//! There is no embedding thread. A caller queues its texts; if no batch is running
//! it becomes the leader, takes everything queued (up to [`MAX_BATCH_TEXTS`]), runs
//! it, hands each request its vectors, and goes on while requests wait and its own is
//! not done; then it steps down and wakes a waiter, which leads the next batch. So
//! requests that arrive while a batch runs ride together in the next one, and an
//! idle engine costs nothing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use super::{EmbedError, Encode};

/// The most texts one forward pass takes.
pub const MAX_BATCH_TEXTS: usize = 64;

/// Counters for `INFO`.
#[derive(Debug, Default)]
pub struct EmbedStats {
    /// Requests served.
    pub requests: AtomicU64,
    /// Texts embedded.
    pub texts: AtomicU64,
    /// Forward passes run.
    pub batches: AtomicU64,
    /// Tokens encoded.
    pub tokens: AtomicU64,
    /// Microseconds spent in forward passes.
    pub busy_us: AtomicU64,
    /// Semantic-cache lookups that found a response.
    pub cache_hits: AtomicU64,
    /// Semantic-cache lookups that found none.
    pub cache_misses: AtomicU64,
}

type Outcome = Result<Vec<Vec<f32>>, EmbedError>;

struct Request {
    texts: Vec<String>,
    slot: Arc<Mutex<Option<Outcome>>>,
}

#[derive(Default)]
struct Queue {
    waiting: Vec<Request>,
    leading: bool,
}

/// An encoder behind a batching queue, shared by every caller.
pub struct EmbedService {
    encoder: Box<dyn Encode>,
    queue: Mutex<Queue>,
    wake: Condvar,
    stats: EmbedStats,
}

impl EmbedService {
    /// Serves `encoder`.
    pub fn new(encoder: Box<dyn Encode>) -> EmbedService {
        EmbedService {
            encoder,
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            stats: EmbedStats::default(),
        }
    }

    /// The model's name.
    pub fn model(&self) -> &str {
        self.encoder.name()
    }

    /// Dimensions of its vectors.
    pub fn dim(&self) -> usize {
        self.encoder.dim()
    }

    /// Tokens a text is cut to.
    pub fn max_tokens(&self) -> usize {
        self.encoder.max_tokens()
    }

    /// The counters.
    pub fn stats(&self) -> &EmbedStats {
        &self.stats
    }

    /// One vector per text, in order; the texts may ride in a batch with other
    /// callers'.
    pub fn embed(&self, texts: Vec<String>) -> Outcome {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Mutex::new(None));
        let mut q = self.queue.lock();
        q.waiting.push(Request {
            texts,
            slot: slot.clone(),
        });
        loop {
            if let Some(done) = slot.lock().take() {
                return done;
            }
            if q.leading {
                self.wake.wait(&mut q);
                continue;
            }
            // Lead: run batches until this request's is done.
            q.leading = true;
            loop {
                let batch = take_batch(&mut q.waiting);
                drop(q);
                self.run(batch);
                q = self.queue.lock();
                self.wake.notify_all();
                if slot.lock().is_some() {
                    break;
                }
            }
            q.leading = false;
            self.wake.notify_all();
        }
    }

    fn run(&self, batch: Vec<Request>) {
        let texts: Vec<&str> = batch
            .iter()
            .flat_map(|r| r.texts.iter().map(String::as_str))
            .collect();
        let started = Instant::now();
        let result = self.encoder.encode(&texts);
        self.stats
            .busy_us
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        self.stats.batches.fetch_add(1, Ordering::Relaxed);
        self.stats
            .texts
            .fetch_add(texts.len() as u64, Ordering::Relaxed);
        match result {
            Ok((vectors, tokens)) => {
                self.stats
                    .tokens
                    .fetch_add(tokens as u64, Ordering::Relaxed);
                let mut vectors = vectors.into_iter();
                for r in batch {
                    let mine: Vec<Vec<f32>> = vectors.by_ref().take(r.texts.len()).collect();
                    *r.slot.lock() = Some(Ok(mine));
                }
            }
            Err(e) => {
                for r in batch {
                    *r.slot.lock() = Some(Err(e.clone()));
                }
            }
        }
    }
}

/// Takes queued requests, oldest first, up to [`MAX_BATCH_TEXTS`] texts (always at
/// least one request).
fn take_batch(waiting: &mut Vec<Request>) -> Vec<Request> {
    let mut texts = 0;
    let mut n = 0;
    for r in waiting.iter() {
        if n > 0 && texts + r.texts.len() > MAX_BATCH_TEXTS {
            break;
        }
        texts += r.texts.len();
        n += 1;
    }
    waiting.drain(..n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodes a text as [its length, the batch size it rode in].
    struct Lengths {
        batches: Mutex<Vec<usize>>,
    }

    impl Encode for Lengths {
        fn name(&self) -> &str {
            "lengths"
        }
        fn dim(&self) -> usize {
            2
        }
        fn max_tokens(&self) -> usize {
            512
        }
        fn encode(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, usize), EmbedError> {
            std::thread::sleep(std::time::Duration::from_millis(5));
            self.batches.lock().push(texts.len());
            if texts.contains(&"fail") {
                return Err(EmbedError::Input("fail".into()));
            }
            Ok((
                texts
                    .iter()
                    .map(|t| vec![t.len() as f32, texts.len() as f32])
                    .collect(),
                texts.len(),
            ))
        }
    }

    #[test]
    fn concurrent_requests_share_batches_and_get_their_own_vectors() {
        let service = Arc::new(EmbedService::new(Box::new(Lengths {
            batches: Mutex::new(Vec::new()),
        })));
        let threads: Vec<_> = (0..16)
            .map(|i| {
                let s = service.clone();
                std::thread::spawn(move || {
                    let texts: Vec<String> = (0..3).map(|j| "x".repeat(i * 3 + j + 1)).collect();
                    let got = s.embed(texts.clone()).expect("embeds");
                    for (t, v) in texts.iter().zip(&got) {
                        assert_eq!(v[0], t.len() as f32);
                    }
                    got.len()
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().expect("thread"), 3);
        }
        let stats = service.stats();
        assert_eq!(stats.texts.load(Ordering::Relaxed), 48);
        assert_eq!(stats.requests.load(Ordering::Relaxed), 16);
        assert!(stats.batches.load(Ordering::Relaxed) <= 16);
    }

    #[test]
    fn an_error_reaches_every_request_of_its_batch_only() {
        let service = EmbedService::new(Box::new(Lengths {
            batches: Mutex::new(Vec::new()),
        }));
        assert!(service.embed(vec!["fail".into()]).is_err());
        assert_eq!(
            service.embed(vec!["ok".into()]).expect("embeds"),
            vec![vec![2.0, 1.0]]
        );
        assert_eq!(
            service.embed(Vec::new()).expect("nothing"),
            Vec::<Vec<f32>>::new()
        );
    }

    #[test]
    fn a_batch_takes_at_most_the_limit_but_always_one_request() {
        let req = |n: usize| Request {
            texts: vec![String::new(); n],
            slot: Arc::new(Mutex::new(None)),
        };
        let mut q = vec![req(100), req(1)];
        assert_eq!(take_batch(&mut q).len(), 1);
        let mut q = vec![req(30), req(30), req(30)];
        assert_eq!(take_batch(&mut q).len(), 2);
        assert_eq!(q.len(), 1);
    }
}
