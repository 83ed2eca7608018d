//! `maxmemory-policy`: which keys eviction may take under `maxmemory`, and how it
//! picks them.

/// `maxmemory-policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum MaxmemoryPolicy {
    /// Refuse commands that may grow memory.
    NoEviction,
    /// Least recently used among all keys.
    AllKeysLru,
    /// Least frequently used among all keys.
    AllKeysLfu,
    /// Any key.
    AllKeysRandom,
    /// Least recently used among keys with a time to live.
    VolatileLru,
    /// Least frequently used among keys with a time to live.
    VolatileLfu,
    /// Any key with a time to live.
    VolatileRandom,
    /// The key with the nearest expiry.
    VolatileTtl,
}

impl MaxmemoryPolicy {
    /// Every policy.
    pub const ALL: [MaxmemoryPolicy; 8] = [
        MaxmemoryPolicy::NoEviction,
        MaxmemoryPolicy::AllKeysLru,
        MaxmemoryPolicy::AllKeysLfu,
        MaxmemoryPolicy::AllKeysRandom,
        MaxmemoryPolicy::VolatileLru,
        MaxmemoryPolicy::VolatileLfu,
        MaxmemoryPolicy::VolatileRandom,
        MaxmemoryPolicy::VolatileTtl,
    ];

    /// The policy's configuration name.
    pub fn name(self) -> &'static str {
        match self {
            MaxmemoryPolicy::NoEviction => "noeviction",
            MaxmemoryPolicy::AllKeysLru => "allkeys-lru",
            MaxmemoryPolicy::AllKeysLfu => "allkeys-lfu",
            MaxmemoryPolicy::AllKeysRandom => "allkeys-random",
            MaxmemoryPolicy::VolatileLru => "volatile-lru",
            MaxmemoryPolicy::VolatileLfu => "volatile-lfu",
            MaxmemoryPolicy::VolatileRandom => "volatile-random",
            MaxmemoryPolicy::VolatileTtl => "volatile-ttl",
        }
    }

    /// The policy with this configuration name (case-insensitive).
    pub fn parse(name: &str) -> Option<MaxmemoryPolicy> {
        MaxmemoryPolicy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// Whether only keys with a time to live may be evicted.
    pub fn volatile(self) -> bool {
        matches!(
            self,
            MaxmemoryPolicy::VolatileLru
                | MaxmemoryPolicy::VolatileLfu
                | MaxmemoryPolicy::VolatileRandom
                | MaxmemoryPolicy::VolatileTtl
        )
    }

    /// Whether candidates are ranked (through the pool) rather than picked at random.
    pub fn ranked(self) -> bool {
        !matches!(
            self,
            MaxmemoryPolicy::AllKeysRandom
                | MaxmemoryPolicy::VolatileRandom
                | MaxmemoryPolicy::NoEviction
        )
    }

    /// Whether the policy counts access frequency (LFU) rather than time.
    pub fn is_lfu(self) -> bool {
        matches!(
            self,
            MaxmemoryPolicy::AllKeysLfu | MaxmemoryPolicy::VolatileLfu
        )
    }

    /// Whether the policy evicts by access time (LRU).
    pub fn is_lru(self) -> bool {
        matches!(
            self,
            MaxmemoryPolicy::AllKeysLru | MaxmemoryPolicy::VolatileLru
        )
    }
}
