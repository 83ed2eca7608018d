//! Utilities with no knowledge of the engine: Redis's number formats and parsers,
//! glob matching, the log, byte codecs (with Redis's CRC-64 and LZF), the clock, the
//! counting allocator and the huge page policy. Every other layer may use them;
//! they use nothing of the crate above this folder.

pub mod alloc;
pub mod args;
pub mod clock;
pub mod codec;
pub mod crc64;
pub mod dtoa;
pub mod geohash;
pub mod glob;
pub mod hugepages;
pub mod log;
pub(crate) mod long_double;
pub mod lzf;
pub mod num;
pub mod shared_copy;
pub mod striped;
pub(crate) mod strtod;
pub mod worker;
