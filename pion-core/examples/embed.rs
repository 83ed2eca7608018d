//! Pion embedded in a Rust program: a durable engine in a temporary directory, a
//! prompt's K/V stored block by block and found again after a restart, a vector set
//! searched, documents found by a search index, a hash read back. Run by the test
//! command:
//! `cargo run -p pion-core --example embed`.

use pion_core::api::search::SearchQuery;
use pion_core::prefix::block_id::BlockId;
use pion_core::{Engine, OpResult, Quantization};

/// Two layers of a small model: one attention layer (1 K/V head of 8 dims) and the
/// recurrent state of one layer, per 4-token block.
const MANIFEST: &str = r#"{"model":"demo-model","block_tokens":4,"dtype":"f16",
  "layers":[{"kind":"attention","kv_heads":1,"head_dim":8},
            {"kind":"recurrent","state_bytes":16}]}"#;

/// This block's K/V (K and V, 1 head, `tokens` × 8 f16) and its recurrent state.
fn layers(block: u8, tokens: usize) -> (Vec<u8>, Vec<u8>) {
    let kv = (0..2 * tokens * 8 * 2)
        .map(|i| block.wrapping_mul(31).wrapping_add(i as u8))
        .collect();
    (kv, vec![block; 16])
}

fn main() -> OpResult<()> {
    let dir = std::env::temp_dir().join(format!("pion-embed-example-{}", std::process::id()));
    let prompt: Vec<u32> = (100..112).collect();
    {
        let engine = Engine::open(&dir).map_err(|e| pion_core::OpError::custom(e.to_string()))?;
        engine.kv_register("demo", MANIFEST)?;
        let mut parent = BlockId::ROOT;
        for (i, chunk) in prompt.chunks(4).enumerate() {
            let (kv, state) = layers(i as u8, chunk.len());
            parent = engine.kv_put("demo", parent, chunk, &[&kv, &state])?;
        }
        engine.hset(0, b"session:1", b"user", b"ada")?;
        for (name, v) in [
            ("intro", [1.0, 0.0, 0.0]),
            ("api", [0.0, 1.0, 0.0]),
            ("faq", [0.1, 0.9, 0.0]),
        ] {
            engine.vadd(0, b"docs", name.as_bytes(), &v, Some(Quantization::None))?;
        }
        engine
            .flush_log()
            .map_err(|e| pion_core::OpError::custom(e.to_string()))?;
    }
    // A new process would see the same: the engine recovers the directory.
    let engine = Engine::open(&dir).map_err(|e| pion_core::OpError::custom(e.to_string()))?;
    let mut longer = prompt.clone();
    longer.extend([7, 8]);
    let found = engine.kv_match("demo", &longer)?;
    assert_eq!((found.tokens, found.blocks.len()), (12, 3));
    let blocks = engine.kv_fetch("demo", &found.blocks, None)?;
    let (kv, _) = layers(2, 4);
    assert_eq!(blocks[2].layers[0].as_deref(), Some(&kv[..]));
    println!(
        "prompt cache: {} of {} tokens found in {} blocks after a restart",
        found.tokens,
        longer.len(),
        found.blocks.len()
    );
    let near = engine.vsim(0, b"docs", &[0.0, 1.0, 0.1], 2, None)?;
    let names: Vec<String> = near
        .iter()
        .map(|n| String::from_utf8_lossy(&n.element).into_owned())
        .collect();
    assert_eq!(names, ["api", "faq"]);
    println!("vector search: nearest {names:?}");
    engine.execute(
        0,
        &[
            "FT.CREATE",
            "notes",
            "PREFIX",
            "1",
            "note:",
            "SCHEMA",
            "body",
            "TEXT",
        ],
    );
    engine.hset(0, b"note:1", b"body", b"prefill once, decode many")?;
    let q = SearchQuery {
        query: "decode",
        no_content: true,
        ..Default::default()
    };
    let hits = engine.ft_search("notes", &q)?;
    assert_eq!((hits.total, &hits.hits[0].key[..]), (1, &b"note:1"[..]));
    println!("text search: {} document found", hits.total);
    assert_eq!(
        engine.hget(0, b"session:1", b"user")?.as_deref(),
        Some(&b"ada"[..])
    );
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
    println!("embedded engine: ok");
    Ok(())
}
