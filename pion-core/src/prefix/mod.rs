//! The prompt cache: stored transformer K/V blocks, keyed by the tokens that produced them.

pub mod quant;
