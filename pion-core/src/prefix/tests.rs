//! Prefix-store behaviour through the `KV.*` commands of an embedded engine: sharing,
//! longest-prefix match, the hybrid rule, eviction order, errors, tiers, and recovery
//! after a crash (bit-identical bytes, evictions not resurrected).

use std::path::PathBuf;

use crate::durability::DurabilityOptions;
use crate::{Engine, EngineOptions, Reply};

mod mapped;

const BLOCK: usize = 16;

fn manifest(tier: &str, recurrent: bool) -> String {
    let mut layers = vec![
        r#"{"kind":"attention","kv_heads":2,"head_dim":32}"#.to_string(),
        r#"{"kind":"sliding","window":64,"kv_heads":1,"head_dim":32}"#.to_string(),
    ];
    if recurrent {
        layers.push(r#"{"kind":"recurrent","state_bytes":24}"#.to_string());
    }
    format!(
        r#"{{"model":"test-model","revision":"r1","tokenizer":"tok","block_tokens":{BLOCK},"dtype":"f16","tier":"{tier}","layers":[{}]}}"#,
        layers.join(",")
    )
}

fn le(tokens: &[u32]) -> Vec<u8> {
    tokens.iter().flat_map(|t| t.to_le_bytes()).collect()
}

/// Deterministic "K/V" bytes for a block: f16 values in a sane range.
fn layer_bytes(seed: u64, elems: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..elems)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = ((x % 2000) as f32 - 1000.0) / 500.0;
            half::f16::from_f32(v).to_le_bytes()
        })
        .collect()
}

/// Argument list of a `KV.PUT` for `tokens` after `parent` (with recurrent state when
/// `state`).
fn put_args(ns: &str, parent: &str, tokens: &[u32], recurrent: Option<bool>) -> Vec<Vec<u8>> {
    let n = tokens.len();
    let seed = tokens
        .iter()
        .fold(7u64, |a, &t| a.wrapping_mul(31) + u64::from(t));
    let mut args = vec![
        b"KV.PUT".to_vec(),
        ns.as_bytes().to_vec(),
        parent.as_bytes().to_vec(),
        le(tokens),
        layer_bytes(seed, 2 * 2 * n * 32),
        layer_bytes(seed + 1, 2 * n * 32),
    ];
    if let Some(state) = recurrent {
        args.push(if state {
            vec![seed as u8; 24]
        } else {
            Vec::new()
        });
    }
    args
}

fn put(e: &Engine, ns: &str, parent: &str, tokens: &[u32], recurrent: Option<bool>) -> String {
    match e.execute(0, &put_args(ns, parent, tokens, recurrent)) {
        Reply::Bulk(id) => String::from_utf8(id).expect("hex"),
        other => panic!("KV.PUT failed: {other:?}"),
    }
}

/// Stores a whole sequence block by block; returns the block ids.
fn store_seq(e: &Engine, ns: &str, tokens: &[u32], recurrent: Option<bool>) -> Vec<String> {
    let mut parent = "root".to_string();
    let mut ids = Vec::new();
    for chunk in tokens.chunks(BLOCK) {
        parent = put(e, ns, &parent, chunk, recurrent);
        ids.push(parent.clone());
    }
    ids
}

fn matched(e: &Engine, ns: &str, tokens: &[u32]) -> (i64, usize) {
    match e.execute(
        0,
        &[b"KV.MATCH".to_vec(), ns.as_bytes().to_vec(), le(tokens)],
    ) {
        Reply::Array(v) => match (&v[0], &v[1]) {
            (Reply::Integer(n), Reply::Array(ids)) => (*n, ids.len()),
            other => panic!("{other:?}"),
        },
        other => panic!("KV.MATCH failed: {other:?}"),
    }
}

fn info(e: &Engine, ns: &str, field: &str) -> i64 {
    match e.execute(0, &["KV.INFO", ns]) {
        Reply::Map(pairs) => pairs
            .into_iter()
            .find_map(|(k, v)| match (k, v) {
                (Reply::Bulk(k), Reply::Integer(n)) if k == field.as_bytes() => Some(n),
                _ => None,
            })
            .expect("field"),
        other => panic!("{other:?}"),
    }
}

fn engine() -> Engine {
    Engine::in_memory(EngineOptions::default())
}

fn register(e: &Engine, ns: &str, tier: &str, recurrent: bool) {
    assert_eq!(
        e.execute(0, &["KV.REGISTER", ns, &manifest(tier, recurrent)]),
        Reply::ok()
    );
}

fn seq(start: u32, len: usize) -> Vec<u32> {
    (start..start + len as u32).collect()
}

#[test]
fn shared_prefixes_are_stored_once_and_matched_longest() {
    let e = engine();
    register(&e, "m", "as-given", false);
    // Two conversations share a 128-token system prompt (8 blocks) then diverge.
    let system = seq(1000, 128);
    let mut a = system.clone();
    a.extend(seq(1, 40));
    let mut b = system.clone();
    b.extend(seq(5000, 20));
    store_seq(&e, "m", &a, None);
    let bytes_after_a = info(&e, "m", "bytes");
    let blocks_after_a = info(&e, "m", "blocks");
    store_seq(&e, "m", &b, None);
    // b added only its own 2 blocks (16 + 4 tokens): the 8 shared blocks were there.
    assert_eq!(info(&e, "m", "blocks"), blocks_after_a + 2);
    assert_eq!(info(&e, "m", "dedup"), 8);
    let per_token = (2 * 2 * 32 + 2 * 32) * 2; // K+V of both layers, f16
    assert_eq!(
        info(&e, "m", "bytes") - bytes_after_a,
        (20 * per_token) as i64,
        "only b's own tokens were stored"
    );
    assert_eq!(matched(&e, "m", &a), (168, 11));
    assert_eq!(matched(&e, "m", &b), (148, 10));
    // A third conversation with the same system prompt and something new: the
    // prompt's 8 blocks match.
    let mut c = system.clone();
    c.extend(seq(9, 50));
    assert_eq!(matched(&e, "m", &c), (128, 8));
    // Diverging inside the first block: nothing.
    assert_eq!(matched(&e, "m", &seq(1001, 64)), (0, 0));
    // A partial last block matches only when it is the same partial block.
    assert_eq!(matched(&e, "m", &a[..160]), (160, 10));
    assert_eq!(matched(&e, "m", &a[..165]), (160, 10));
    // The server computes the same ids a client would.
    match e.execute(0, &[b"KV.BLOCKIDS".to_vec(), b"m".to_vec(), le(&a)]) {
        Reply::Array(ids) => {
            let want = crate::prefix::BlockId::chain_all(&a, BLOCK);
            assert_eq!(ids.len(), want.len());
            assert_eq!(ids[10], Reply::bulk(want[10].hex()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        e.execute(0, &["KV.MATCH", "m", "TOKENS", "1000", "1001"]),
        Reply::Array(vec![Reply::Integer(0), Reply::Array(vec![])])
    );
}

#[test]
fn a_hybrid_prefix_ends_at_the_last_block_with_recurrent_state() {
    let e = engine();
    register(&e, "h", "as-given", true);
    let tokens = seq(1, 64); // 4 blocks
    let mut parent = "root".to_string();
    for (i, chunk) in tokens.chunks(BLOCK).enumerate() {
        // State only at the ends of blocks 0 and 1.
        parent = put(&e, "h", &parent, chunk, Some(i < 2));
    }
    assert_eq!(matched(&e, "h", &tokens), (32, 2));
    // Supplying the state later (same block, with state) extends the usable prefix.
    let ids = crate::prefix::BlockId::chain_all(&tokens, BLOCK);
    e.execute(
        0,
        &put_args("h", &ids[1].hex(), &tokens[32..48], Some(true)),
    );
    assert_eq!(matched(&e, "h", &tokens), (48, 3));
    // GET shows the missing state as null.
    match e.execute(0, &["KV.GET", "h", &ids[3].hex()]) {
        Reply::Array(v) => {
            assert_eq!(v[0], Reply::Integer(16));
            assert_eq!(v.len(), 4);
            assert_eq!(v[3], Reply::Null);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn eviction_takes_least_recently_used_leaves_first() {
    let e = engine();
    register(&e, "m", "as-given", false);
    let per_block = ((2 * 2 * 32 + 2 * 32) * 2 * BLOCK) as u64;
    // Room for 6 blocks.
    assert_eq!(
        e.execute(
            0,
            &["CONFIG", "SET", "kv-budget", &(6 * per_block).to_string()]
        ),
        Reply::ok()
    );
    let a = seq(0, 48); // 3 blocks
    let b = seq(500, 32); // 2 blocks
    store_seq(&e, "m", &a, None);
    store_seq(&e, "m", &b, None);
    // Use a (so b is the least recently used), then add c (2 blocks): one block must
    // go, and it is b's leaf, not b's first block (still needed by its leaf) and not a.
    assert_eq!(matched(&e, "m", &a), (48, 3));
    let c = seq(900, 32);
    store_seq(&e, "m", &c, None);
    assert_eq!(info(&e, "m", "evictions"), 1);
    assert_eq!(matched(&e, "m", &a), (48, 3));
    assert_eq!(matched(&e, "m", &b), (16, 1), "b lost its leaf only");
    assert_eq!(matched(&e, "m", &c), (32, 2));
    // Fetching an evicted block is a clear error.
    let b_leaf = crate::prefix::BlockId::chain_all(&b, BLOCK)[1];
    match e.execute(0, &["KV.GET", "m", &b_leaf.hex()]) {
        Reply::Error(t) => assert!(t.contains("not stored"), "{t}"),
        other => panic!("{other:?}"),
    }
    // INFO prompt_cache has the operator's view.
    match e.execute(0, &["INFO", "prompt_cache"]) {
        Reply::Verbatim(_, b) | Reply::Bulk(b) => {
            let text = String::from_utf8_lossy(&b).into_owned();
            assert!(text.contains("kv_evictions:1"), "{text}");
            assert!(
                text.contains(&format!("kv_budget:{}", 6 * per_block)),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Shrinking the budget evicts at once.
    e.execute(
        0,
        &["CONFIG", "SET", "kv-budget", &(2 * per_block).to_string()],
    );
    assert!(info(&e, "m", "bytes") <= (2 * per_block) as i64);
}

#[test]
fn bad_input_gets_clear_errors_and_changes_nothing() {
    let e = engine();
    let err = |r: Reply| match r {
        Reply::Error(t) => t.into_owned(),
        other => panic!("expected an error, got {other:?}"),
    };
    assert!(err(e.execute(0, &["KV.MATCH", "nope", "TOKENS", "1"])).contains("unknown namespace"));
    register(&e, "m", "as-given", false);
    // Same manifest again: fine. A different one: refused, naming the field.
    register(&e, "m", "as-given", false);
    let t = err(e.execute(0, &["KV.REGISTER", "m", &manifest("as-given", true)]));
    assert!(t.contains("different manifest (layers differs)"), "{t}");
    assert!(err(e.execute(0, &["KV.REGISTER", "x", "{}"])).contains("invalid manifest"));
    // Wrong layer count, wrong sizes, bad parent, bad tokens.
    let mut args = put_args("m", "root", &seq(1, 16), None);
    args.pop();
    assert!(err(e.execute(0, &args)).contains("has 2 layers, got data for 1"));
    let mut args = put_args("m", "root", &seq(1, 16), None);
    args[4].pop();
    assert!(err(e.execute(0, &args)).contains("layer 0: expected 4096 bytes"));
    let args = put_args("m", &"ab".repeat(16), &seq(1, 16), None);
    assert!(err(e.execute(0, &args)).contains("parent block"));
    let mut args = put_args("m", "root", &seq(1, 16), None);
    args[3] = vec![1, 2, 3];
    assert!(err(e.execute(0, &args)).contains("little-endian u32"));
    assert!(err(e.execute(0, &put_args("m", "root", &seq(1, 17), None))).contains("1 to 16 tokens"));
    // A partial block cannot have children.
    let partial = put(&e, "m", "root", &seq(1, 5), None);
    assert!(err(e.execute(0, &put_args("m", &partial, &seq(9, 3), None))).contains("partial"));
    assert_eq!(info(&e, "m", "blocks"), 1);
    assert!(err(e.execute(0, &["KV.EVICT", "m", &partial])).contains("internal"));
}

#[test]
fn mget_answers_every_block_as_get_does_or_an_error() {
    let e = engine();
    register(&e, "m", "as-given", false);
    let ids = store_seq(&e, "m", &seq(1, 40), None);
    let get = |id: &str, extra: &[&str]| {
        let mut args = vec!["KV.GET", "m", id];
        args.extend_from_slice(extra);
        e.execute(0, &args)
    };
    for extra in [
        &[][..],
        &["LAYERS", "1"],
        &["DECODE"],
        &["LAYERS", "0", "DECODE"],
    ] {
        let mut args = vec!["KV.MGET", "m"];
        args.extend(ids.iter().map(String::as_str));
        args.extend_from_slice(extra);
        let want = Reply::Array(ids.iter().map(|id| get(id, extra)).collect());
        assert_eq!(e.execute(0, &args), want, "{extra:?}");
    }
    // An id as its 16 raw bytes is the same block.
    let raw = crate::prefix::BlockId::parse(ids[0].as_bytes())
        .expect("id")
        .0
        .to_le_bytes();
    assert_eq!(
        e.execute(0, &[b"KV.MGET".as_slice(), b"m", &raw]),
        Reply::Array(vec![get(&ids[0], &[])])
    );
    // No ids: nothing; one missing block: an error, not a partial answer.
    assert_eq!(e.execute(0, &["KV.MGET", "m"]), Reply::Array(vec![]));
    let missing = "ab".repeat(16);
    match e.execute(0, &["KV.MGET", "m", &ids[0], &missing]) {
        Reply::Error(t) => assert!(t.contains("not stored"), "{t}"),
        other => panic!("{other:?}"),
    }
    // A malformed id is an error, never the root.
    match e.execute(0, &["KV.MGET", "m", "abc"]) {
        Reply::Error(t) => assert!(t.contains("invalid block id"), "{t}"),
        other => panic!("{other:?}"),
    }
    // The namespace is the command's key (for ACL patterns and slot routing).
    assert_eq!(
        e.execute(0, &["COMMAND", "GETKEYS", "KV.MGET", "m", &ids[0]]),
        Reply::Array(vec![Reply::bulk("m")])
    );
}

#[test]
fn quantised_tiers_store_less_and_decode_close_to_the_original() {
    let e = engine();
    register(&e, "q", "q4", false);
    let tokens = seq(1, 16);
    let args = put_args("q", "root", &tokens, None);
    let original = args[4].clone();
    let id = put(&e, "q", "root", &tokens, None);
    assert!(info(&e, "q", "bytes") < (original.len() + args[5].len()) as i64 / 3);
    let decoded = match e.execute(0, &["KV.GET", "q", &id, "LAYERS", "0", "DECODE"]) {
        Reply::Array(v) => match &v[1] {
            Reply::Bulk(b) => b.clone(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    assert_eq!(decoded.len(), original.len());
    let f = |b: &[u8]| -> Vec<f32> {
        b.chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect()
    };
    let (x, y) = (f(&original), f(&decoded));
    let max_err = x
        .iter()
        .zip(&y)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    // 4 bits over a group's range of at most 4.0: a step of 0.27. mlx's quantiser keeps
    // every element within 15/16 of a step, range / 16 = 0.25, plus the f16 rounding of
    // scale, bias and result (under 0.005 here).
    assert!(max_err <= 0.255, "max error {max_err}");
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pion-prefix-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn open(dir: &PathBuf, budget: u64) -> Engine {
    let mut options = EngineOptions::default();
    options.config.kv_budget = budget;
    Engine::open_with(options, DurabilityOptions::new(dir)).expect("open")
}

fn fetch_all(e: &Engine, ns: &str, id: &str) -> Reply {
    e.execute(0, &["KV.GET", ns, id])
}

#[test]
fn stored_blocks_survive_a_restart_bit_for_bit_and_evictions_stay_evicted() {
    let dir = tmp("durable");
    let per_block = ((2 * 2 * 32 + 2 * 32) * 2 * BLOCK) as u64;
    let (ids_a, ids_b, before) = {
        let e = open(&dir, 5 * per_block);
        register(&e, "m", "as-given", false);
        let ids_a = store_seq(&e, "m", &seq(0, 48), None);
        // A snapshot in the middle: blocks before it come back from the snapshot,
        // the rest from the log.
        assert_eq!(e.execute(0, &["SAVE"]), Reply::ok());
        let ids_b = store_seq(&e, "m", &seq(700, 48), None); // 6 blocks > budget of 5
        assert_eq!(info(&e, "m", "evictions"), 1);
        let before: Vec<Reply> = ids_a
            .iter()
            .chain(&ids_b)
            .map(|id| fetch_all(&e, "m", id))
            .collect();
        (ids_a, ids_b, before)
    };
    let e = open(&dir, 5 * per_block);
    let after: Vec<Reply> = ids_a
        .iter()
        .chain(&ids_b)
        .map(|id| fetch_all(&e, "m", id))
        .collect();
    assert_eq!(
        after, before,
        "every block bit-identical, the evicted one still gone"
    );
    assert_eq!(matched(&e, "m", &seq(0, 48)), (32, 2));
    assert_eq!(e.execute(0, &["KV.MANIFEST", "m"]), {
        let m = crate::prefix::Manifest::parse(manifest("as-given", false).as_bytes())
            .expect("manifest");
        Reply::bulk(m.to_json())
    });
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

fn block_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("blocks"))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn evicted_space_is_compacted_away_and_what_is_live_survives() {
    let dir = tmp("compact");
    let per_block = ((2 * 2 * 32 + 2 * 32) * 2 * BLOCK) as u64;
    let open_small = |budget: u64| {
        let mut options = EngineOptions::default();
        options.config.kv_budget = budget;
        let mut d = DurabilityOptions::new(&dir);
        d.block_file_bytes = 64 << 10; // ~10 blocks per file
        Engine::open_with(options, d).expect("open")
    };
    let (live, before) = {
        let e = open_small(20 * per_block);
        register(&e, "m", "as-given", false);
        let mut seqs = Vec::new();
        for k in 0..30u32 {
            let tokens = seq(10_000 * (k + 1), 48); // 3 blocks each, 90 in all
            store_seq(&e, "m", &tokens, None);
            seqs.push(tokens);
        }
        assert!(info(&e, "m", "evictions") >= 60);
        // The background compaction moves the live blocks out of mostly-dead files and
        // a snapshot then lets the emptied files go.
        let files_after_stores = block_files(&dir).len();
        eprintln!("block files after stores: {files_after_stores}");
        // Reclaimed: half the files gone, or no more than the 20 live blocks need
        // (two files of ~10) plus the one being written. The compaction may already
        // have run during the stores, leaving too few files to halve.
        let reclaimed = |files: usize| files * 2 <= files_after_stores || files <= 3;
        let mut files = files_after_stores;
        // Up to 20 s: on a loaded machine the background compaction is slow to get
        // its turn (it returns as soon as the files are reclaimed). Once nothing is
        // left to compact, the emptied files go with the next snapshot: the one the
        // compaction starts, or, when that one raced an earlier snapshot, a SAVE.
        for round in 1..=800 {
            std::thread::sleep(std::time::Duration::from_millis(25));
            files = block_files(&dir).len();
            if reclaimed(files) {
                break;
            }
            let compacted = e
                .prefix()
                .lock()
                .files()
                .is_some_and(|f| f.compaction_candidates().is_empty());
            if compacted && round % 40 == 0 {
                assert_eq!(e.execute(0, &["SAVE"]), Reply::ok());
            }
        }
        eprintln!("block files: {files_after_stores} -> {files}");
        if let Some(f) = e.prefix().lock().files() {
            eprintln!(
                "compaction candidates left: {:?}",
                f.compaction_candidates()
            );
        }
        assert!(
            reclaimed(files),
            "block files {files_after_stores} -> {files}: compaction did not reclaim"
        );
        // The moved payloads are views of the files they moved to: the emptied files
        // went, and nothing still maps them.
        mapped::assert_layers_view_live_block_files(&e, "m");
        // What is left on disk is about what is live: 20 blocks' worth plus the files
        // being written.
        let on_disk: u64 = block_files(&dir)
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        assert!(
            on_disk < 60 * per_block,
            "{on_disk} bytes of block files for 20 live blocks"
        );
        let live: Vec<Vec<u32>> = seqs
            .into_iter()
            .filter(|s| matched(&e, "m", s).0 == 48)
            .collect();
        assert!(!live.is_empty());
        let before: Vec<Reply> = live
            .iter()
            .flat_map(|s| crate::prefix::BlockId::chain_all(s, BLOCK))
            .map(|id| fetch_all(&e, "m", &id.hex()))
            .collect();
        (live, before)
    };
    let e = open_small(20 * per_block);
    let after: Vec<Reply> = live
        .iter()
        .flat_map(|s| crate::prefix::BlockId::chain_all(s, BLOCK))
        .map(|id| fetch_all(&e, "m", &id.hex()))
        .collect();
    assert_eq!(
        after, before,
        "live blocks bit-identical after compaction and restart"
    );
    mapped::assert_layers_view_live_block_files(&e, "m");
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_block_file_stops_start_up_naming_it() {
    let dir = tmp("badblock");
    {
        let e = open(&dir, 0);
        register(&e, "m", "as-given", false);
        store_seq(&e, "m", &seq(0, 32), None);
    }
    let file = block_files(&dir)
        .into_iter()
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.len() > 0))
        .expect("a block file with data");
    let mut bytes = std::fs::read(&file).expect("read");
    bytes[100] ^= 0xff;
    std::fs::write(&file, &bytes).expect("write");
    let err = Engine::open_with(EngineOptions::default(), DurabilityOptions::new(&dir))
        .err()
        .expect("a damaged payload must stop start-up");
    let text = err.to_string();
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(text.contains("checksum"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_block_file_is_rewritten_by_healing_and_nothing_stored_is_lost() {
    let dir = tmp("heal");
    let (storage, faults) = crate::storage::Faulty::wrap(crate::storage::local());
    let open_faulty = || {
        let mut d = DurabilityOptions::new(&dir);
        d.storage = storage.clone();
        Engine::open_with(EngineOptions::default(), d).expect("open")
    };
    let e = open_faulty();
    register(&e, "m", "as-given", true);
    let ids = store_seq(&e, "m", &seq(1, 48), Some(true));
    let before: Vec<Reply> = ids.iter().map(|id| fetch_all(&e, "m", id)).collect();
    let files_before = block_files(&dir);
    // The next block-file write fails: the store is refused, and not kept.
    faults.only_paths_containing("blk-");
    faults.fail_write(1, 5);
    let refused = e.execute(0, &put_args("m", &ids[2], &seq(49, 16), Some(true)));
    assert!(
        matches!(&refused, Reply::Error(t) if t.starts_with("MISCONF") && t.contains("block file write failed")),
        "{refused:?}"
    );
    assert_eq!(info(&e, "m", "blocks"), 3);
    // Healing writes the payloads of the untrusted file again, into a fresh one, and
    // deletes it; stores are accepted again.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !matches!(
        e.execute(0, &put_args("m", &ids[2], &seq(49, 16), Some(true))),
        Reply::Bulk(_)
    ) {
        assert!(std::time::Instant::now() < deadline, "never healed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let files_after = block_files(&dir);
    assert!(
        files_before.iter().all(|f| !files_after.contains(f)),
        "the untrusted file is gone: {files_before:?} then {files_after:?}"
    );
    drop(e);
    let e = open_faulty();
    let after: Vec<Reply> = ids.iter().map(|id| fetch_all(&e, "m", id)).collect();
    assert!(
        before == after,
        "blocks changed across the heal and a restart"
    );
    assert_eq!(info(&e, "m", "blocks"), 4);
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}
