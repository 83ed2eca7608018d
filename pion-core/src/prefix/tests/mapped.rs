//! A durable store keeps its layers as views of the block files' mappings (one copy,
//! the page cache's): checked through the process's own memory map, across a restart,
//! for quantised tiers, and against the memory figures; an in-memory engine keeps its
//! own copies.

use super::*;
use crate::prefix::BlockId;

/// The file mapped at `ptr` in this process (`/proc/self/maps`), `" (deleted)"`
/// included; `None` for anonymous memory.
fn file_behind(ptr: *const u8) -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    let at = ptr as usize;
    maps.lines().find_map(|line| {
        let mut fields = line.splitn(6, ' ');
        let (lo, hi) = fields.next()?.split_once('-')?;
        let (lo, hi) = (
            usize::from_str_radix(lo, 16).ok()?,
            usize::from_str_radix(hi, 16).ok()?,
        );
        if !(lo..hi).contains(&at) {
            return None;
        }
        let path = fields.nth(4).unwrap_or("").trim();
        (!path.is_empty()).then(|| path.to_string())
    })
}

/// Every stored layer of namespace `ns`: (block, layer, bytes).
fn layers_of(e: &Engine, ns: &str) -> Vec<(BlockId, usize, crate::Bytes)> {
    let store = e.prefix().lock();
    store
        .layers_where(|_| true)
        .into_iter()
        .filter(|(name, _, _)| name == ns)
        .filter_map(|(_, id, i)| store.layer(ns, id, i).map(|b| (id, i, b)))
        .collect()
}

/// Every stored layer of `ns` views a live block file (not a deleted one).
pub(super) fn assert_layers_view_live_block_files(e: &Engine, ns: &str) {
    let layers = layers_of(e, ns);
    assert!(!layers.is_empty());
    for (id, i, bytes) in layers {
        let file = file_behind(bytes.as_ptr());
        assert!(
            file.as_deref()
                .is_some_and(|f| f.contains("/blocks/blk-") && !f.ends_with("(deleted)")),
            "layer {i} of {} is in {file:?}",
            id.hex()
        );
    }
}

fn prompt_cache_info(e: &Engine, field: &str) -> u64 {
    let text = match e.execute(0, &["INFO", "prompt_cache"]) {
        Reply::Bulk(text) | Reply::Verbatim(_, text) => text,
        other => panic!("INFO: {other:?}"),
    };
    String::from_utf8_lossy(&text)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in INFO prompt_cache"))
}

#[test]
fn durable_layers_are_views_of_the_block_files_before_and_after_a_restart() {
    let dir = tmp("mapped");
    let tokens = seq(3, 40); // two whole blocks and a partial one
    let (ids, before) = {
        let e = open(&dir, 0);
        register(&e, "m", "as-given", true);
        let ids = store_seq(&e, "m", &tokens, Some(true));
        assert_layers_view_live_block_files(&e, "m");
        let mapped = prompt_cache_info(&e, "kv_mapped_bytes");
        assert!(mapped > 0);
        assert_eq!(mapped, prompt_cache_info(&e, "kv_block_live_bytes"));
        assert!(
            e.memory_report().used >= mapped,
            "used memory counts the views"
        );
        // What is fetched is what was sent.
        let first = put_args("m", "root", &tokens[..BLOCK], Some(true));
        match fetch_all(&e, "m", &ids[0]) {
            Reply::Array(parts) => {
                let sent: Vec<Reply> = first[4..].iter().map(|l| Reply::Bulk(l.clone())).collect();
                assert_eq!(parts[1..], sent[..]);
            }
            other => panic!("{other:?}"),
        }
        let before: Vec<Reply> = ids.iter().map(|id| fetch_all(&e, "m", id)).collect();
        (ids, before)
    };
    // Recovery reads the payloads as views of the files too.
    let e = open(&dir, 0);
    assert_layers_view_live_block_files(&e, "m");
    let after: Vec<Reply> = ids.iter().map(|id| fetch_all(&e, "m", id)).collect();
    assert_eq!(after, before);
    assert_eq!(
        prompt_cache_info(&e, "kv_mapped_bytes"),
        prompt_cache_info(&e, "kv_block_live_bytes")
    );
    // Dropping the namespace lets go of its payloads.
    assert_eq!(e.execute(0, &["KV.DROP", "m"]), Reply::Integer(1));
    assert_eq!(prompt_cache_info(&e, "kv_mapped_bytes"), 0);
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn quantised_layers_are_kept_as_views_once_written() {
    let dir = tmp("mapped-q");
    let e = open(&dir, 0);
    register(&e, "q", "int8", false);
    store_seq(&e, "q", &seq(100, 32), None);
    assert_layers_view_live_block_files(&e, "q");
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_in_memory_engine_keeps_its_own_copies() {
    let e = engine();
    register(&e, "m", "as-given", false);
    store_seq(&e, "m", &seq(0, 32), None);
    for (_, _, bytes) in layers_of(&e, "m") {
        assert_eq!(file_behind(bytes.as_ptr()), None);
    }
    assert_eq!(prompt_cache_info(&e, "kv_mapped_bytes"), 0);
}

/// Healing rewrites the payloads of a block file a write failed on, reading them from
/// the store's views of that file. A payload whose pages no longer match the checksum
/// it was written with (here changed on disk under the view; in life, a page the
/// kernel dropped after its write-back failed) is dropped with its block and the
/// blocks after it, not written again as good.
#[test]
fn healing_drops_a_payload_that_no_longer_matches_its_checksum() {
    use std::os::unix::fs::FileExt;
    let dir = tmp("mapped-heal");
    let (storage, faults) = crate::storage::Faulty::wrap(crate::storage::local());
    let mut d = DurabilityOptions::new(&dir);
    d.storage = storage;
    let e = Engine::open_with(EngineOptions::default(), d).expect("open");
    register(&e, "m", "as-given", false);
    let ids = store_seq(&e, "m", &seq(1, 48), None);
    let first = fetch_all(&e, "m", &ids[0]);
    let second = BlockId::from_arg(ids[1].as_bytes()).expect("id");
    let loc = e.prefix().lock().loc("m", second, 0).expect("written");
    let path = dir.join("blocks").join(format!("blk-{:010}.dat", loc.file));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    file.write_all_at(b"damage", loc.offset + 16 + 8)
        .expect("damage");
    // The next block-file write fails: the file is not trusted, and healing begins.
    faults.only_paths_containing("blk-");
    faults.fail_write(1, 5);
    let refused = e.execute(0, &put_args("m", &ids[0], &seq(1000, 16), None));
    assert!(
        matches!(&refused, Reply::Error(t) if t.starts_with("MISCONF")),
        "{refused:?}"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !matches!(
        e.execute(0, &put_args("m", &ids[0], &seq(1000, 16), None)),
        Reply::Bulk(_)
    ) {
        assert!(std::time::Instant::now() < deadline, "never healed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The damaged block and the one after it are gone; the first is intact.
    assert_eq!(fetch_all(&e, "m", &ids[0]), first);
    for id in &ids[1..] {
        assert!(matches!(
            fetch_all(&e, "m", id),
            Reply::Error(_) | Reply::Null
        ));
    }
    assert_eq!(info(&e, "m", "blocks"), 2);
    assert_layers_view_live_block_files(&e, "m");
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}
