//! Command flags, as `COMMAND INFO` names them, and the ACL categories derived from them.

/// Writes to the keyspace.
pub const WRITE: u64 = 1 << 0;
/// Only reads the keyspace.
pub const READONLY: u64 = 1 << 1;
/// May grow memory use (refused under `maxmemory` with no eviction possible).
pub const DENYOOM: u64 = 1 << 2;
/// Administrative.
pub const ADMIN: u64 = 1 << 3;
/// Pub/Sub.
pub const PUBSUB: u64 = 1 << 4;
/// Not allowed from scripts.
pub const NOSCRIPT: u64 = 1 << 5;
/// May block the client.
pub const BLOCKING: u64 = 1 << 6;
/// Allowed while loading the dataset.
pub const LOADING: u64 = 1 << 7;
/// Allowed on a stale replica.
pub const STALE: u64 = 1 << 8;
/// Not shown by `MONITOR`.
pub const SKIP_MONITOR: u64 = 1 << 9;
/// Not logged by `SLOWLOG`.
pub const SKIP_SLOWLOG: u64 = 1 << 10;
/// O(1) or O(log N).
pub const FAST: u64 = 1 << 11;
/// Allowed before authentication.
pub const NO_AUTH: u64 = 1 << 12;
/// May replicate even though it is not a write.
pub const MAY_REPLICATE: u64 = 1 << 13;
/// Keys may be absent from the arguments.
pub const NO_MANDATORY_KEYS: u64 = 1 << 14;
/// Not allowed while loading asynchronously.
pub const NO_ASYNC_LOADING: u64 = 1 << 15;
/// Not allowed inside `MULTI`.
pub const NO_MULTI: u64 = 1 << 16;
/// Keys are found by parsing the arguments.
pub const MOVABLE_KEYS: u64 = 1 << 17;
/// Allowed while a script is busy.
pub const ALLOW_BUSY: u64 = 1 << 18;
/// Implemented by a module in Redis (vector sets).
pub const MODULE: u64 = 1 << 19;
/// Runs on a cluster node for a slot being imported when the client sent `ASKING`
/// (`RESTORE-ASKING`).
pub const ASKING: u64 = 1 << 20;
/// In `@dangerous` (for commands that are not admin but still dangerous).
pub const DANGEROUS: u64 = 1 << 40;
/// In `@keyspace` in addition to its group.
pub const KEYSPACE: u64 = 1 << 41;
/// Internal: runs while no other command runs on any thread (`EXEC`, scripts); the
/// dispatcher takes the execution gate exclusively and locks no shard for it (the
/// commands it runs lock their own).
pub const EXCLUSIVE: u64 = 1 << 42;
/// Internal: runs at once inside `MULTI` instead of being queued (`EXEC`, `DISCARD`,
/// `MULTI`, `WATCH`, `QUIT`, `RESET`).
pub const TX_CONTROL: u64 = 1 << 43;
/// Allowed to a RESP2 client in subscribed mode (`SUBSCRIBE`, `PING`, `RESET` …).
pub const PUBSUB_CONTEXT: u64 = 1 << 44;
/// `MONITOR` shows the two arguments after an `AUTH` word as `(redacted)`.
pub const REDACTS_AUTH: u64 = 1 << 45;
/// Internal: a reply of 0 means the command changed nothing (`SADD` of existing
/// members, `DEL` of missing keys …): nothing is logged, no `WATCH` is broken and no
/// client cache is invalidated, as Redis signals only real modifications.
pub const NOOP_ON_ZERO: u64 = 1 << 46;
/// Internal: the command's keys name prompt-cache namespaces, not keyspace keys: ACL
/// key patterns and slot routing apply to them, but no shard is locked for them and
/// nothing of the keyspace (watches, client-side caching, search) follows them.
pub const NAMESPACE_KEYS: u64 = 1 << 47;
/// Internal: a read-only command that may still change a stored value (`PFCOUNT`
/// caches its estimate in the HyperLogLog's header). Its keys are settled, watchers
/// told and the command logged as a write's are, unless its effect says it changed
/// nothing; everything else (scripts, pauses, `COMMAND INFO`) sees a read.
pub const MAY_MODIFY: u64 = 1 << 48;

/// Internal: `MONITOR` and the slow log show the password after `AUTH` and the user
/// and password after `AUTH2` as `(redacted)` (`MIGRATE`, as Redis redacts them).
pub const REDACTS_MIGRATE_AUTH: u64 = 1 << 49;

/// Flag names in the order `COMMAND INFO` lists them.
pub const NAMES: &[(u64, &str)] = &[
    (WRITE, "write"),
    (READONLY, "readonly"),
    (DENYOOM, "denyoom"),
    (MODULE, "module"),
    (ADMIN, "admin"),
    (PUBSUB, "pubsub"),
    (NOSCRIPT, "noscript"),
    (BLOCKING, "blocking"),
    (LOADING, "loading"),
    (STALE, "stale"),
    (SKIP_MONITOR, "skip_monitor"),
    (SKIP_SLOWLOG, "skip_slowlog"),
    (ASKING, "asking"),
    (FAST, "fast"),
    (NO_AUTH, "no_auth"),
    // MAY_REPLICATE is left out: Redis hides it from COMMAND INFO on purpose.
    (NO_MANDATORY_KEYS, "no_mandatory_keys"),
    (NO_ASYNC_LOADING, "no_async_loading"),
    (NO_MULTI, "no_multi"),
    (MOVABLE_KEYS, "movablekeys"),
    (ALLOW_BUSY, "allow_busy"),
];
