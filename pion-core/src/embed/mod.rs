//! Sentence embeddings computed inside the engine, for `AI.EMBED` and the semantic
//! cache: a text goes in, a unit vector comes out, with no model server and no
//! network.
//!
//! [`Encode`] is what the commands need of a model; [`model::SentenceEncoder`] is the
//! one Pion ships (a BERT encoder such as all-MiniLM-L6-v2, read from a local folder;
//! built with the `embed` feature, on by default), and [`EmbedService`] puts any
//! encoder behind a queue that batches concurrent requests. Whoever runs the engine
//! loads a model and hands the service in (`pion-server --embed-model DIR`); an
//! engine without one answers the AI commands with an error that says so.

#[cfg(feature = "embed")]
pub mod model;
mod service;

pub use service::{EmbedService, EmbedStats, MAX_BATCH_TEXTS};

use std::fmt;

/// Why embedding failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedError {
    /// The model folder is missing a part or holds a malformed one.
    Folder(String),
    /// A text could not be encoded.
    Input(String),
}

impl fmt::Display for EmbedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmbedError::Folder(m) => write!(f, "embedding model {m}"),
            EmbedError::Input(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for EmbedError {}

/// A sentence-embedding model.
pub trait Encode: Send + Sync {
    /// The model's name.
    fn name(&self) -> &str;
    /// Dimensions of its vectors.
    fn dim(&self) -> usize;
    /// Tokens a text is cut to.
    fn max_tokens(&self) -> usize;
    /// One vector per text, in order, and the number of tokens encoded.
    fn encode(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, usize), EmbedError>;
}

#[cfg(feature = "embed")]
impl Encode for model::SentenceEncoder {
    fn name(&self) -> &str {
        model::SentenceEncoder::name(self)
    }

    fn dim(&self) -> usize {
        model::SentenceEncoder::dim(self)
    }

    fn max_tokens(&self) -> usize {
        model::SentenceEncoder::max_tokens(self)
    }

    fn encode(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, usize), EmbedError> {
        let ids = self.tokenize(texts)?;
        let tokens = ids.iter().map(Vec::len).sum();
        Ok((self.encode_ids(&ids), tokens))
    }
}

/// Loads the model in `dir` behind a batching queue.
#[cfg(feature = "embed")]
pub fn open(dir: &std::path::Path) -> Result<EmbedService, EmbedError> {
    Ok(EmbedService::new(Box::new(model::SentenceEncoder::load(
        dir,
    )?)))
}

/// Without the `embed` feature no model can be loaded.
#[cfg(not(feature = "embed"))]
pub fn open(dir: &std::path::Path) -> Result<EmbedService, EmbedError> {
    Err(EmbedError::Folder(format!(
        "{}: this build has no embedding backend (the 'embed' feature is off)",
        dir.display()
    )))
}
