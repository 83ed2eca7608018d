//! Utilities with no knowledge of the engine: Redis's number formats and parsers,
//! glob matching, the log, byte codecs and the clock. Every other layer may use them;
//! they use nothing of the crate above this folder.

pub mod clock;
pub mod codec;
pub mod dtoa;
pub mod geohash;
pub mod glob;
pub mod log;
pub(crate) mod long_double;
pub mod num;
pub(crate) mod strtod;
