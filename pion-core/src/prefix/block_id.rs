//! Block ids: the chained hash that names a block of tokens by everything before it,
//! so that two sequences share a block id exactly when they share the whole prefix up
//! to and including that block. Stable and documented so that any client, in any
//! language, computes the same ids:
//!
//! ```text
//! id(block) = XXH3-128(seed 0) over parent_id as 16 bytes little-endian
//!                                   ++ each token id as 4 bytes little-endian
//! parent_id of the first block = 0
//! ```
//!
//! Shown as 32 lowercase hex digits of the 128-bit value (most significant first).

use xxhash_rust::xxh3::xxh3_128;

/// A block id (the 128-bit chained hash).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct BlockId(pub u128);

impl BlockId {
    /// The parent id of a sequence's first block.
    pub const ROOT: BlockId = BlockId(0);

    /// The id of the block holding `tokens` after the block `parent`.
    pub fn chain(parent: BlockId, tokens: &[u32]) -> BlockId {
        let mut bytes = Vec::with_capacity(16 + tokens.len() * 4);
        bytes.extend_from_slice(&parent.0.to_le_bytes());
        for t in tokens {
            bytes.extend_from_slice(&t.to_le_bytes());
        }
        BlockId(xxh3_128(&bytes))
    }

    /// The ids of every block of `tokens` cut into blocks of `block_tokens` (the last
    /// one may be partial).
    pub fn chain_all(tokens: &[u32], block_tokens: usize) -> Vec<BlockId> {
        let mut parent = BlockId::ROOT;
        tokens
            .chunks(block_tokens.max(1))
            .map(|chunk| {
                parent = BlockId::chain(parent, chunk);
                parent
            })
            .collect()
    }

    /// 32 lowercase hex digits.
    pub fn hex(self) -> String {
        format!("{:032x}", self.0)
    }

    /// Reads an id as a command argument carries it: 32 hex digits (either case),
    /// `root`/`0` for [`BlockId::ROOT`], or the 16 bytes of its little-endian value
    /// (the binary lane's form: no text on the way). The lengths never overlap.
    pub fn from_arg(arg: &[u8]) -> Option<BlockId> {
        match <[u8; 16]>::try_from(arg) {
            Ok(raw) => Some(BlockId(u128::from_le_bytes(raw))),
            Err(_) => BlockId::parse(arg),
        }
    }

    /// Parses 32 hex digits (either case), or `root`/`0` for [`BlockId::ROOT`].
    pub fn parse(text: &[u8]) -> Option<BlockId> {
        if text.eq_ignore_ascii_case(b"root") || text == b"0" {
            return Some(BlockId::ROOT);
        }
        if text.len() != 32 {
            return None;
        }
        let s = std::str::from_utf8(text).ok()?;
        u128::from_str_radix(s, 16).ok().map(BlockId)
    }
}

/// Token ids from their wire form: little-endian `u32`s.
pub fn tokens_from_le(bytes: &[u8]) -> Option<Vec<u32>> {
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    Some(
        bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden vectors, computed independently with Python's `xxhash` package
    /// (`xxh3_128_intdigest` over the same bytes): these ids are part of the wire
    /// contract. If this test fails, the hash changed and every client's ids with it.
    #[test]
    fn golden_ids() {
        assert_eq!(
            BlockId::chain(BlockId::ROOT, &[]).hex(),
            "e5189a9599e3f86205ea23ef06e28b2d"
        );
        assert_eq!(
            BlockId::chain(BlockId::ROOT, &[1, 2, 3]).hex(),
            "314bcfbba8cda5e99f59a8edb9f7a5f5"
        );
        let ids = BlockId::chain_all(&(0..600).collect::<Vec<u32>>(), 256);
        let hex: Vec<String> = ids.iter().map(|i| i.hex()).collect();
        assert_eq!(
            hex,
            [
                "1ad0492d3dbb85bc9cc579c431609f52",
                "a5507d7f7df7e0f314fbaa2abcd78576",
                "296b51578349caed1fd1856c8d2d685e",
            ]
        );
    }

    #[test]
    fn ids_chain_and_parse() {
        let a = BlockId::chain(BlockId::ROOT, &[7, 8]);
        let b = BlockId::chain(a, &[9]);
        assert_ne!(a, b);
        assert_eq!(BlockId::chain_all(&[7, 8, 9], 2), vec![a, b]);
        assert_eq!(BlockId::parse(a.hex().as_bytes()), Some(a));
        assert_eq!(BlockId::parse(a.hex().to_uppercase().as_bytes()), Some(a));
        assert_eq!(BlockId::parse(b"root"), Some(BlockId::ROOT));
        assert_eq!(BlockId::parse(b"xyz"), None);
        assert_eq!(BlockId::from_arg(&b.0.to_le_bytes()), Some(b));
        assert_eq!(BlockId::from_arg(b.hex().as_bytes()), Some(b));
        assert_eq!(BlockId::from_arg(b"root"), Some(BlockId::ROOT));
        assert_eq!(BlockId::from_arg(&[0u8; 15]), None);
        assert_eq!(BlockId::from_arg(&[0u8; 17]), None);
        assert_eq!(tokens_from_le(&[1, 0, 0, 0, 2, 0, 0, 0]), Some(vec![1, 2]));
        assert_eq!(tokens_from_le(&[1, 0, 0]), None);
    }
}
