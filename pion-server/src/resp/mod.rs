//! RESP2/RESP3: decoding requests and encoding replies.

pub mod decode;
pub mod encode;

pub use decode::{decode, Decoded, Decoder, Limits, ProtocolError};
pub use encode::encode;
