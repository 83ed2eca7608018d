//! Full-text search building blocks shared by the `FT.*` commands.
//!
//! RediSearch clients send queries as text and expect RediSearch's exact behaviour:
//! the same tokens, the same precedence, the same error replies. This module keeps
//! those rules in pure code (no keyspace, no I/O) so that the index, the command layer
//! and the tests all agree on one definition:
//!
//! - [`query`]: the query language (parser, typed AST, `FT.EXPLAIN` rendering);
//! - [`text`]: the default tokenizer for TEXT fields and query terms, the stopword
//!   list, TAG value splitting, and a matcher for text nodes against a document.

pub mod query;
pub mod text;
