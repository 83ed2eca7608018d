//! `client-output-buffer-limit`'s value: how much undelivered output a client may
//! hold before it is disconnected, per client class, in Redis's syntax
//! (`normal 0 0 0 replica 256mb 64mb 60 pubsub 32mb 8mb 60`). Pub/Sub enforces it.

use super::parse_memory;

/// One class's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClassLimit {
    /// Bytes at which the client is closed at once (0: none).
    pub hard: u64,
    /// Bytes above which the client may stay only `soft_seconds` (0: none).
    pub soft: u64,
    /// Seconds a client may stay above the soft limit.
    pub soft_seconds: u64,
}

/// The limits of the three classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimits {
    /// Ordinary clients.
    pub normal: ClassLimit,
    /// Replicas (kept for the configuration; Pion has none).
    pub replica: ClassLimit,
    /// Clients with a subscription.
    pub pubsub: ClassLimit,
}

impl Default for OutputLimits {
    fn default() -> Self {
        OutputLimits {
            normal: ClassLimit::default(),
            replica: ClassLimit {
                hard: 256 << 20,
                soft: 64 << 20,
                soft_seconds: 60,
            },
            pubsub: ClassLimit {
                hard: 32 << 20,
                soft: 8 << 20,
                soft_seconds: 60,
            },
        }
    }
}

impl OutputLimits {
    /// Applies a `CONFIG SET` value: groups of class, hard, soft, seconds; classes not
    /// named keep their limits.
    pub fn parse_into(&mut self, v: &str) -> Result<(), String> {
        let words: Vec<&str> = v.split_whitespace().collect();
        if !words.len().is_multiple_of(4) {
            return Err("Wrong number of arguments in buffer limit configuration.".into());
        }
        let mut next = *self;
        for group in words.chunks(4) {
            let slot = match group[0].to_ascii_lowercase().as_str() {
                "normal" => &mut next.normal,
                "replica" | "slave" => &mut next.replica,
                "pubsub" => &mut next.pubsub,
                _ => {
                    return Err(
                        "Invalid client class specified in buffer limit configuration.".into(),
                    )
                }
            };
            let bad = || {
                "Error in hard, soft or soft_seconds setting in buffer limit configuration."
                    .to_string()
            };
            let hard = parse_memory(group[1]).ok_or_else(bad)?;
            let soft = parse_memory(group[2]).ok_or_else(bad)?;
            let soft_seconds: u64 = group[3].parse().map_err(|_| bad())?;
            *slot = ClassLimit {
                hard,
                soft,
                soft_seconds,
            };
        }
        *self = next;
        Ok(())
    }

    /// The value `CONFIG GET` shows.
    pub fn render(&self) -> String {
        let one = |l: &ClassLimit| format!("{} {} {}", l.hard, l.soft, l.soft_seconds);
        format!(
            "normal {} slave {} pubsub {}",
            one(&self.normal),
            one(&self.replica),
            one(&self.pubsub)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_renders_like_redis() {
        let mut l = OutputLimits::default();
        assert_eq!(
            l.render(),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        );
        l.parse_into("pubsub 1mb 512k 5").expect("valid");
        assert_eq!(
            l.render(),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 512000 5"
        );
        assert!(l.parse_into("foo 1 2 3").is_err());
        assert!(l.parse_into("pubsub 1 2").is_err());
        assert!(l.parse_into("pubsub 1 2 -3").is_err());
        l.parse_into("").expect("empty changes nothing");
    }
}
