//! Hash slots: every key maps to one of 16,384 slots, exactly as in Redis Cluster
//! (CRC16-XMODEM of the key, or of its `{hash tag}`).
//!
//! Slots are the unit of locking (a shard owns a fixed set of slots) and of `SCAN`
//! cursors, and they keep the door open for cluster scale-out with unchanged clients.

/// Number of hash slots.
pub const SLOTS: usize = 16384;

const fn crc16_table() -> [u16; 256] {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

static CRC16_TABLE: [u16; 256] = crc16_table();

/// CRC16-XMODEM (polynomial 0x1021, initial value 0), the checksum Redis Cluster uses.
pub fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &b| {
        (crc << 8) ^ CRC16_TABLE[usize::from(((crc >> 8) as u8) ^ b)]
    })
}

/// The hash slot of a key, honouring `{hash tags}` like Redis Cluster.
///
/// ```
/// use pion_core::keyspace::key_slot;
/// assert_eq!(key_slot(b"foo"), 12182);
/// assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"{user1000}.followers"));
/// ```
pub fn key_slot(key: &[u8]) -> usize {
    let hashed = match memchr::memchr(b'{', key) {
        Some(open) => match memchr::memchr(b'}', &key[open + 1..]) {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    usize::from(crc16(hashed)) & (SLOTS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_spec_vectors() {
        // The reference value from the Redis Cluster specification.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(key_slot(b"{}foo"), key_slot(b"{}foo"));
        assert_eq!(
            key_slot(b"foo{}{bar}"),
            usize::from(crc16(b"foo{}{bar}")) & (SLOTS - 1)
        );
        assert_eq!(
            key_slot(b"foo{{bar}}zap"),
            usize::from(crc16(b"{bar")) & (SLOTS - 1)
        );
    }
}
