//! Unit tests of the export lane's file names and of its race with eviction (the
//! file format is checked over the wire in `tests/tests/kv_export.rs`).

use super::*;
use crate::durability::DurabilityOptions;
use crate::{Engine, EngineOptions, Reply};

const MANIFEST: &str =
    r#"{"model":"m","block_tokens":4,"layers":[{"kind":"attention","kv_heads":1,"head_dim":8}]}"#;

fn engine(name: &str) -> (Engine, PathBuf) {
    let dir = std::env::temp_dir().join(format!("pion-export-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let e =
        Engine::open_with(EngineOptions::default(), DurabilityOptions::new(&dir)).expect("open");
    assert_eq!(e.execute(0, &["KV.REGISTER", "m", MANIFEST]), Reply::ok());
    (e, dir)
}

fn put(e: &Engine) -> String {
    let tokens: Vec<u8> = [1u32, 2, 3, 4]
        .iter()
        .flat_map(|t| t.to_le_bytes())
        .collect();
    match e.execute(
        0,
        &[
            &b"KV.PUT"[..],
            b"m",
            b"root",
            &tokens,
            &[7u8; 2 * 4 * 8 * 2],
        ],
    ) {
        Reply::Bulk(id) => String::from_utf8(id).expect("hex"),
        other => panic!("KV.PUT: {other:?}"),
    }
}

#[test]
fn file_names_are_safe_whatever_the_namespace() {
    for ns in [
        "m",
        "../../etc/passwd",
        "a/b\\c:d*e?\"<>|",
        "\u{0}\u{202e}é",
        "",
    ] {
        let name = file_name(ns, 3, BlockId(0xabc), Layout::MlxLmLegacy);
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.'),
            "{name}"
        );
        assert!(name.ends_with("-mlx-lm-legacy.safetensors") && !name.starts_with('.'));
    }
    assert_ne!(
        file_name("a", 0, BlockId(1), Layout::MlxLm),
        file_name("b", 0, BlockId(1), Layout::MlxLm)
    );
    assert_eq!(Layout::parse(b"MLX-LM"), Some(Layout::MlxLm));
    assert_eq!(Layout::parse(b"torch"), None);
}

/// A block that leaves the store while its file is written: the file is not kept
/// (nothing would ever delete it), and a second writer of a file already in place
/// keeps the first one.
#[test]
fn a_file_written_for_a_block_that_left_meanwhile_is_discarded() {
    let (e, dir) = engine("race");
    let id = put(&e);
    let prepared = || match prepare(&mut e.prefix().lock(), "m", &[1, 2, 3, 4], Layout::MlxLm) {
        Ok(Prepared::Write(job)) => job,
        _ => panic!("expected a file to write"),
    };
    let job = prepared();
    let bytes = write(&job).expect("written");
    assert!(job.tmp.exists());
    assert_eq!(e.execute(0, &["KV.DEL", "m", &id]), Reply::Integer(1));
    let kept = finish(&mut e.prefix().lock(), &job, bytes).expect("finish");
    assert_eq!(kept, None);
    assert!(!job.tmp.exists() && !job.path.exists());

    put(&e);
    let (first, second) = (prepared(), prepared());
    assert_ne!(first.tmp, second.tmp);
    for job in [&first, &second] {
        let bytes = write(job).expect("written");
        let path = finish(&mut e.prefix().lock(), job, bytes).expect("finish");
        assert_eq!(path.as_ref(), Some(&first.path));
    }
    assert!(!second.tmp.exists());
    let store = e.prefix().lock();
    let exports = store.exports().expect("exports");
    assert_eq!(exports.count(), 1);
    let on_disk = std::fs::metadata(&first.path).expect("file").len();
    assert_eq!(exports.bytes(), on_disk);
    drop(store);
    drop(e);
    let _ = std::fs::remove_dir_all(dir);
}
