//! The export lane against a real `pion-server`: `KV.EXPORT` writes the matched prefix
//! as a safetensors file whose every tensor is, byte for byte, what `KV.GET` returns
//! for the prefix's blocks (concatenated along the token axis), with the metadata
//! mlx-lm's `load_prompt_cache` reads (both layouts); quantised tiers export their
//! stored codes, scales and biases; a hybrid model exports its last recurrent state.
//! The file is reused, deleted with its last block (KV.DEL, KV.DROP, eviction),
//! cleared at start-up, never logged, and an in-memory server refuses the command.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pion_core::prefix::BlockId;
use pion_tests::process::{temp_dir, PionProcess};
use pion_tests::{Client, RespValue};
use serde_json::Value;

const BLOCK: usize = 16;

fn le(tokens: &[u32]) -> Vec<u8> {
    tokens.iter().flat_map(|t| t.to_le_bytes()).collect()
}

/// Deterministic bytes (f16 values in a sane range when read as f16, which the
/// quantised tiers need).
fn values(seed: u64, elems: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..elems)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = ((x % 2000) as u16) + 0x3000; // 0x3000..0x37d0: 0.125 .. ~0.49
            v.to_le_bytes()
        })
        .collect()
}

/// One layer of a manifest.
#[derive(Clone, Copy)]
enum L {
    Attn(usize, usize),
    State(usize),
}

fn manifest(tier: &str, layers: &[L]) -> String {
    let ls: Vec<String> = layers
        .iter()
        .map(|l| match *l {
            L::Attn(h, d) => format!(r#"{{"kind":"attention","kv_heads":{h},"head_dim":{d}}}"#),
            L::State(n) => format!(r#"{{"kind":"recurrent","state_bytes":{n}}}"#),
        })
        .collect();
    format!(
        r#"{{"model":"export-test","block_tokens":{BLOCK},"dtype":"f16","tier":"{tier}","layers":[{}]}}"#,
        ls.join(",")
    )
}

/// `KV.REGISTER ns` with the manifest of `layers` at `tier`.
fn register(c: &mut Client, ns: &str, tier: &str, layers: &[L]) {
    ok(
        c,
        &[
            b"KV.REGISTER",
            ns.as_bytes(),
            manifest(tier, layers).as_bytes(),
        ],
    );
}

fn ok(c: &mut Client, args: &[&[u8]]) -> RespValue {
    let r = c.cmd(args);
    assert!(!r.is_error(), "{}", r.render());
    r
}

fn error(c: &mut Client, args: &[&[u8]]) -> String {
    match c.cmd(args) {
        RespValue::Line(b'-', text) => String::from_utf8_lossy(&text).into_owned(),
        other => panic!("expected an error, got {}", other.render()),
    }
}

/// Stores `tokens` block by block (recurrent state only where `state(block index)`);
/// returns the block ids.
fn store(
    c: &mut Client,
    ns: &str,
    layers: &[L],
    tokens: &[u32],
    state: impl Fn(usize) -> bool,
) -> Vec<BlockId> {
    let ids = BlockId::chain_all(tokens, BLOCK);
    for (i, chunk) in tokens.chunks(BLOCK).enumerate() {
        let parent = if i == 0 {
            "root".into()
        } else {
            ids[i - 1].hex()
        };
        let mut args = vec![
            b"KV.PUT".to_vec(),
            ns.as_bytes().to_vec(),
            parent.into_bytes(),
            le(chunk),
        ];
        for (l, layer) in layers.iter().enumerate() {
            let seed = ids[i].0 as u64 ^ l as u64;
            args.push(match *layer {
                L::Attn(h, d) => values(seed, 2 * h * chunk.len() * d),
                L::State(n) if state(i) => values(seed, n / 2),
                L::State(_) => Vec::new(),
            });
        }
        let argv: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        ok(c, &argv);
    }
    ids
}

/// `KV.EXPORT`'s reply: matched tokens and the path (None for nil).
fn export(
    c: &mut Client,
    ns: &str,
    tokens: &[u32],
    layout: Option<&str>,
) -> (i64, Option<PathBuf>) {
    let bytes = le(tokens);
    let mut args: Vec<&[u8]> = vec![b"KV.EXPORT", ns.as_bytes(), &bytes];
    if let Some(l) = layout {
        args.extend([b"LAYOUT".as_slice(), l.as_bytes()]);
    }
    let RespValue::Agg(_, Some(v)) = ok(c, &args) else {
        panic!("KV.EXPORT reply");
    };
    let RespValue::Line(b':', n) = &v[0] else {
        panic!("matched tokens");
    };
    let n = String::from_utf8_lossy(n).parse().expect("integer");
    let path = match &v[1] {
        RespValue::Bulk(_, Some(p)) => Some(PathBuf::from(String::from_utf8_lossy(p).into_owned())),
        RespValue::Bulk(_, None) => None,
        other => panic!("path: {}", other.render()),
    };
    (n, path)
}

/// A block's stored layers (`KV.GET`, optionally `DECODE`).
fn get(c: &mut Client, ns: &str, id: BlockId, decode: bool) -> (usize, Vec<Option<Vec<u8>>>) {
    let hex = id.hex();
    let mut args: Vec<&[u8]> = vec![b"KV.GET", ns.as_bytes(), hex.as_bytes()];
    if decode {
        args.push(b"DECODE");
    }
    let RespValue::Agg(_, Some(v)) = ok(c, &args) else {
        panic!("KV.GET");
    };
    let RespValue::Line(b':', t) = &v[0] else {
        panic!("tokens");
    };
    let layers = v[1..]
        .iter()
        .map(|l| match l {
            RespValue::Bulk(_, b) => b.clone(),
            other => panic!("layer: {}", other.render()),
        })
        .collect();
    (String::from_utf8_lossy(t).parse().expect("integer"), layers)
}

fn info(c: &mut Client, field: &str) -> i64 {
    let RespValue::Agg(_, Some(v)) = ok(c, &[b"KV.INFO"]) else {
        panic!("KV.INFO");
    };
    for pair in v.chunks(2) {
        if pair[0] == RespValue::Bulk(b'$', Some(field.as_bytes().to_vec())) {
            if let RespValue::Line(b':', n) = &pair[1] {
                return String::from_utf8_lossy(n).parse().expect("integer");
            }
        }
    }
    panic!("no {field}")
}

/// A safetensors file read back: metadata, and per tensor its dtype, shape and bytes.
struct SafeTensors {
    meta: BTreeMap<String, String>,
    tensors: BTreeMap<String, (String, Vec<u64>, Vec<u8>)>,
}

fn read_safetensors(path: &Path) -> SafeTensors {
    let bytes = std::fs::read(path).expect("export file");
    let n = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
    assert_eq!(n % 8, 0, "the header is padded to a multiple of 8");
    let header: Value = serde_json::from_slice(&bytes[8..8 + n]).expect("JSON header");
    let data = &bytes[8 + n..];
    let mut meta = BTreeMap::new();
    let mut tensors = BTreeMap::new();
    let mut ranges = Vec::new();
    for (name, v) in header.as_object().expect("object") {
        if name == "__metadata__" {
            for (k, s) in v.as_object().expect("metadata") {
                meta.insert(k.clone(), s.as_str().expect("string").to_string());
            }
            continue;
        }
        let dtype = v["dtype"].as_str().expect("dtype").to_string();
        let shape: Vec<u64> = v["shape"]
            .as_array()
            .expect("shape")
            .iter()
            .map(|d| d.as_u64().expect("dim"))
            .collect();
        let (a, b) = (
            v["data_offsets"][0].as_u64().expect("begin") as usize,
            v["data_offsets"][1].as_u64().expect("end") as usize,
        );
        let elem = match dtype.as_str() {
            "F32" | "U32" | "I32" => 4,
            "F16" | "BF16" => 2,
            _ => 1,
        };
        assert_eq!(
            (b - a) as u64,
            shape.iter().product::<u64>() * elem,
            "{name}: size"
        );
        assert_eq!((8 + n + a) % elem as usize, 0, "{name}: aligned");
        ranges.push((a, b));
        tensors.insert(name.clone(), (dtype, shape, data[a..b].to_vec()));
    }
    ranges.sort();
    let mut at = 0;
    for (a, b) in ranges {
        assert_eq!(a, at, "tensors are contiguous");
        at = b;
    }
    assert_eq!(at, data.len(), "the data is all tensors");
    SafeTensors { meta, tensors }
}

impl SafeTensors {
    fn tensor(&self, name: &str) -> &(String, Vec<u64>, Vec<u8>) {
        self.tensors
            .get(name)
            .unwrap_or_else(|| panic!("no tensor {name}; have {:?}", self.tensors.keys()))
    }

    fn scalar(&self, name: &str) -> i32 {
        let (dtype, shape, b) = self.tensor(name);
        assert_eq!((dtype.as_str(), shape.len()), ("I32", 0), "{name}");
        i32::from_le_bytes(b[..4].try_into().expect("4 bytes"))
    }
}

/// One section of a stored tensor, `[heads, tokens, row]` rows starting at `start`,
/// for every block, concatenated along tokens head by head: what an export holds.
fn concat(
    blocks: &[(usize, Vec<u8>)],
    heads: usize,
    row: impl Fn(usize) -> (usize, usize),
) -> Vec<u8> {
    let mut out = Vec::new();
    for h in 0..heads {
        for (t, data) in blocks {
            let (start, row) = row(*t);
            let at = start + h * t * row;
            out.extend_from_slice(&data[at..at + t * row]);
        }
    }
    out
}

fn meta(pairs: &[(&str, String)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

#[test]
fn as_given_exports_are_kv_get_concatenated_in_both_layouts_and_reused() {
    let dir = temp_dir("kv-export");
    let server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    let layers = [L::Attn(2, 32), L::Attn(1, 64), L::Attn(3, 3)];
    register(&mut c, "ns/1 é", "as-given", &layers);
    let ns = "ns/1 é";
    let tokens: Vec<u32> = (500..500 + 3 * BLOCK as u32 + 5).collect();
    let ids = store(&mut c, ns, &layers, &tokens, |_| true);
    let n = tokens.len();
    let last = ids[ids.len() - 1].hex();
    for layout in [None, Some("mlx-lm"), Some("mlx-lm-legacy")] {
        let (matched, path) = export(&mut c, ns, &tokens, layout);
        assert_eq!(matched, n as i64);
        let path = path.expect("a path");
        assert!(
            path.is_absolute()
                && path.starts_with(
                    std::fs::canonicalize(dir.path())
                        .expect("dir")
                        .join("exports")
                )
        );
        let file = read_safetensors(&path);
        let blocks: Vec<(usize, Vec<Option<Vec<u8>>>)> =
            ids.iter().map(|id| get(&mut c, ns, *id, false)).collect();
        for (i, layer) in layers.iter().enumerate() {
            let L::Attn(h, d) = *layer else {
                unreachable!()
            };
            let data: Vec<(usize, Vec<u8>)> = blocks
                .iter()
                .map(|(t, ls)| (*t, ls[i].clone().expect("present")))
                .collect();
            for (j, name) in [format!("{i}.0"), format!("{i}.1")].iter().enumerate() {
                let (dtype, shape, bytes) = file.tensor(name);
                assert_eq!(
                    (dtype.as_str(), shape.as_slice()),
                    ("F16", &[1, h as u64, n as u64, d as u64][..])
                );
                let want = concat(&data, h, |t| (j * h * t * d * 2, d * 2));
                assert!(*bytes == want, "{name} differs from KV.GET");
            }
        }
        let user = |prefix: &str| {
            vec![
                (format!("{prefix}pion_namespace"), ns.to_string()),
                (format!("{prefix}pion_tokens"), n.to_string()),
                (format!("{prefix}pion_block"), last.clone()),
                (
                    format!("{prefix}pion_layout"),
                    layout.unwrap_or("mlx-lm").to_string(),
                ),
            ]
        };
        let mut want: BTreeMap<String, String> = BTreeMap::new();
        if layout == Some("mlx-lm-legacy") {
            want.extend(user("1."));
            for i in 0..layers.len() {
                want.insert(format!("0.{i}"), String::new());
                want.insert(format!("2.{i}"), "KVCache".into());
            }
            assert_eq!(file.tensors.len(), 2 * layers.len(), "no scalar tensors");
        } else {
            want.extend(user("0."));
            want.insert("2.0".into(), String::new());
            for i in 0..layers.len() {
                want.insert(format!("1.{i}"), "KVCache".into());
                want.insert(format!("2.{}.0", i + 1), format!("{i}.2"));
                want.insert(format!("2.{}.1", i + 1), "scalar".into());
                assert_eq!(file.scalar(&format!("{i}.2")), n as i32, "offset");
            }
        }
        assert_eq!(file.meta, want);
    }
    // Two layouts, two files; asked again, the same file (not rewritten).
    assert_eq!(info(&mut c, "exports"), 2);
    let (_, first) = export(&mut c, ns, &tokens, None);
    let first = first.expect("path");
    let modified = std::fs::metadata(&first)
        .and_then(|m| m.modified())
        .expect("mtime");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (_, again) = export(&mut c, ns, &tokens, Some("MLX-LM"));
    assert_eq!(again.as_ref(), Some(&first));
    assert_eq!(
        std::fs::metadata(&first)
            .and_then(|m| m.modified())
            .expect("mtime"),
        modified
    );
    assert_eq!(info(&mut c, "exports"), 2);
    let on_disk: u64 = std::fs::read_dir(first.parent().expect("dir"))
        .expect("exports dir")
        .map(|e| e.expect("entry").metadata().expect("metadata").len())
        .sum();
    assert_eq!(info(&mut c, "export_bytes"), on_disk as i64);
    // A longer request with a different tail matches the three full blocks (a hit, like
    // KV.MATCH), in the TOKENS form; nothing stored: [0, nil], a miss.
    let hits = info(&mut c, "hits");
    let mut other = tokens[..3 * BLOCK].to_vec();
    other.extend([1, 2, 3]);
    let ids_args: Vec<Vec<u8>> = other.iter().map(|t| t.to_string().into_bytes()).collect();
    let mut args: Vec<&[u8]> = vec![b"KV.EXPORT", ns.as_bytes(), b"TOKENS"];
    args.extend(ids_args.iter().map(Vec::as_slice));
    args.extend([b"LAYOUT".as_slice(), b"mlx-lm-legacy"]);
    let RespValue::Agg(_, Some(v)) = ok(&mut c, &args) else {
        panic!("KV.EXPORT TOKENS");
    };
    assert_eq!(
        v[0],
        RespValue::Line(b':', (3 * BLOCK).to_string().into_bytes())
    );
    assert_eq!(info(&mut c, "hits"), hits + 1);
    assert_eq!(export(&mut c, ns, &[7, 7, 7], None), (0, None));
    assert_eq!(info(&mut c, "misses"), 1);
    assert_eq!(info(&mut c, "exports"), 3);
}

#[test]
fn quantised_exports_are_the_stored_codes_scales_and_biases() {
    let dir = temp_dir("kv-export-quant");
    let server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    let layers = [L::Attn(2, 64), L::Attn(1, 32)];
    let tokens: Vec<u32> = (1..=2 * BLOCK as u32 + 3).collect();
    let n = tokens.len();
    for (tier, bits) in [("int8", 8usize), ("q4", 4)] {
        register(&mut c, tier, tier, &layers);
        let ids = store(&mut c, tier, &layers, &tokens, |_| true);
        let blocks: Vec<(usize, Vec<Option<Vec<u8>>>)> =
            ids.iter().map(|id| get(&mut c, tier, *id, false)).collect();
        for layout in ["mlx-lm", "mlx-lm-legacy"] {
            let (matched, path) = export(&mut c, tier, &tokens, Some(layout));
            assert_eq!(matched, n as i64);
            let file = read_safetensors(&path.expect("path"));
            for (i, layer) in layers.iter().enumerate() {
                let L::Attn(h, d) = *layer else {
                    unreachable!()
                };
                let data: Vec<(usize, Vec<u8>)> = blocks
                    .iter()
                    .map(|(t, ls)| (*t, ls[i].clone().expect("present")))
                    .collect();
                // Section sizes from the stored length: codes are d*bits/8 bytes per
                // row, scales and biases whatever is left, half each.
                let codes = d * bits / 8;
                let (t0, d0) = &data[0];
                let per_row = d0.len() / 2 / (h * t0);
                let params = (per_row - codes) / 2;
                let pdtype = if params / (d / 32) == 4 { "F32" } else { "F16" };
                for (j, _) in ["keys", "values"].iter().enumerate() {
                    let base = |t: usize| j * h * t * per_row;
                    let parts = [
                        ("U32", codes, codes / 4, 0),
                        (pdtype, params, d / 32, codes),
                        (pdtype, params, d / 32, codes + params),
                    ];
                    for (k, (dtype, row, width, skip)) in parts.into_iter().enumerate() {
                        let name = format!("{i}.{j}.{k}");
                        let (dt, shape, bytes) = file.tensor(&name);
                        assert_eq!(
                            (dt.as_str(), shape.as_slice()),
                            (dtype, &[1, h as u64, n as u64, width as u64][..]),
                            "{name}"
                        );
                        let want = concat(&data, h, |t| (base(t) + h * t * skip, row));
                        assert!(*bytes == want, "{tier} {layout} {name} differs from KV.GET");
                    }
                }
                if layout == "mlx-lm" {
                    assert_eq!(file.meta[&format!("1.{i}")], "QuantizedKVCache");
                    assert_eq!(
                        [2, 3, 4].map(|k| file.scalar(&format!("{i}.{k}"))),
                        [n as i32, 32, bits as i32]
                    );
                } else {
                    assert_eq!(file.meta[&format!("2.{i}")], "QuantizedKVCache");
                    assert_eq!(
                        [0, 1, 2].map(|k| file.meta[&format!("0.{i}.{k}")].clone()),
                        [n.to_string(), "32".into(), bits.to_string()]
                    );
                }
            }
        }
    }
    // q2 is exported decoded: exactly what KV.GET … DECODE returns.
    register(&mut c, "q2", "q2", &layers);
    let ids = store(&mut c, "q2", &layers, &tokens, |_| true);
    let (_, path) = export(&mut c, "q2", &tokens, None);
    let file = read_safetensors(&path.expect("path"));
    for (i, layer) in layers.iter().enumerate() {
        let L::Attn(h, d) = *layer else {
            unreachable!()
        };
        let data: Vec<(usize, Vec<u8>)> = ids
            .iter()
            .map(|id| {
                let (t, ls) = get(&mut c, "q2", *id, true);
                (t, ls[i].clone().expect("present"))
            })
            .collect();
        for j in 0..2 {
            let want = concat(&data, h, |t| (j * h * t * d * 2, d * 2));
            assert!(
                file.tensor(&format!("{i}.{j}")).2 == want,
                "q2 layer {i} part {j}"
            );
        }
        assert_eq!(file.meta[&format!("1.{i}")], "KVCache");
    }
}

#[test]
fn a_hybrid_export_carries_the_last_blocks_state_and_plain_metadata() {
    let dir = temp_dir("kv-export-hybrid");
    let server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    let layers = [L::Attn(2, 32), L::State(40)];
    register(&mut c, "hy", "as-given", &layers);
    // State at blocks 0 and 1, not at block 2: the usable prefix is two blocks.
    let tokens: Vec<u32> = (0..3 * BLOCK as u32).collect();
    let ids = store(&mut c, "hy", &layers, &tokens, |i| i < 2);
    for layout in ["mlx-lm", "mlx-lm-legacy"] {
        let (matched, path) = export(&mut c, "hy", &tokens, Some(layout));
        assert_eq!(matched, 2 * BLOCK as i64);
        let file = read_safetensors(&path.expect("path"));
        let (_, last) = get(&mut c, "hy", ids[1], false);
        let (dtype, shape, state) = file.tensor("1.0");
        assert_eq!((dtype.as_str(), shape.as_slice()), ("U8", &[40u64][..]));
        assert_eq!(Some(state.clone()), last[1]);
        assert_eq!(file.tensor("0.0").1, vec![1, 2, 2 * BLOCK as u64, 32]);
        assert_eq!(file.tensors.len(), 3, "no scalar tensors");
        assert_eq!(
            file.meta,
            meta(&[
                ("pion_namespace", "hy".into()),
                ("pion_tokens", (2 * BLOCK).to_string()),
                ("pion_block", ids[1].hex()),
                ("pion_layout", layout.into()),
            ])
        );
    }
}

#[test]
fn export_files_leave_with_their_blocks_and_at_restart_and_are_never_logged() {
    let dir = temp_dir("kv-export-life");
    // Budget: room for about six 4 KiB blocks (2 heads × 16 tokens × 32 × f16, K and V).
    let mut server = PionProcess::start(dir.path(), &["--kv-budget", "25000"]);
    let mut c = server.client();
    let layers = [L::Attn(2, 32)];
    register(&mut c, "life", "as-given", &layers);
    let a: Vec<u32> = (0..2 * BLOCK as u32).collect();
    let ids_a = store(&mut c, "life", &layers, &a, |_| true);
    let (_, pa) = export(&mut c, "life", &a, None);
    let pa = pa.expect("path");
    let (_, pa1) = export(&mut c, "life", &a[..BLOCK], Some("mlx-lm-legacy"));
    let pa1 = pa1.expect("path");
    assert_eq!(info(&mut c, "exports"), 2);
    // KV.DEL of the first block takes both blocks, and both files.
    ok(&mut c, &[b"KV.DEL", b"life", ids_a[0].hex().as_bytes()]);
    assert!(!pa.exists() && !pa1.exists());
    assert_eq!(
        (info(&mut c, "exports"), info(&mut c, "export_bytes")),
        (0, 0)
    );
    // Eviction: storing past the budget evicts the least recently used leaf.
    let b: Vec<u32> = (1000..1000 + BLOCK as u32).collect();
    store(&mut c, "life", &layers, &b, |_| true);
    let (_, pb) = export(&mut c, "life", &b, None);
    let pb = pb.expect("path");
    for k in 0..8u32 {
        let other: Vec<u32> = (0..BLOCK as u32).map(|t| 5000 + k * 100 + t).collect();
        store(&mut c, "life", &layers, &other, |_| true);
    }
    assert_eq!(export(&mut c, "life", &b, None), (0, None), "b was evicted");
    assert!(!pb.exists(), "its file went with it");
    assert_eq!(info(&mut c, "exports"), 0);
    // KV.DROP.
    let last: Vec<u32> = (0..BLOCK as u32).map(|t| 5700 + t).collect();
    let (_, pl) = export(&mut c, "life", &last, None);
    let pl = pl.expect("path");
    assert!(pl.exists());
    ok(&mut c, &[b"KV.DROP", b"life"]);
    assert!(!pl.exists());
    assert_eq!(info(&mut c, "exports"), 0);
    // After a crash, the directory is cleared at start-up.
    register(&mut c, "life", "as-given", &layers);
    store(&mut c, "life", &layers, &a, |_| true);
    let (_, pa) = export(&mut c, "life", &a, None);
    let pa = pa.expect("path");
    std::fs::write(pa.with_file_name(".tmp-9.safetensors"), b"half").expect("stale file");
    server.kill9();
    let wal: Vec<u8> = std::fs::read_dir(dir.path())
        .expect("data dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .flat_map(|p| std::fs::read(p).expect("log"))
        .collect();
    assert!(!wal.is_empty());
    assert!(
        !wal.windows(9).any(|w| w.eq_ignore_ascii_case(b"KV.EXPORT")),
        "KV.EXPORT is not logged"
    );
    let server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    let exports = dir.path().join("exports");
    assert_eq!(std::fs::read_dir(&exports).expect("exports dir").count(), 0);
    assert_eq!(info(&mut c, "exports"), 0);
    // The blocks are back (from the log); exporting writes the file again.
    assert_eq!(export(&mut c, "life", &a, None).0, a.len() as i64);
    assert_eq!(info(&mut c, "exports"), 1);
}

#[test]
fn errors_match_kv_match_and_an_in_memory_server_refuses() {
    let dir = temp_dir("kv-export-errors");
    let server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    register(&mut c, "e", "as-given", &[L::Attn(1, 32)]);
    for args in [
        vec![b"nope".as_slice(), b"TOKENS", b"1"],
        vec![b"e", b"\x01\x02\x03"],
        vec![b"e", b"TOKENS", b"x"],
    ] {
        let mut m: Vec<&[u8]> = vec![b"KV.MATCH"];
        m.extend(&args);
        let mut e: Vec<&[u8]> = vec![b"KV.EXPORT"];
        e.extend(&args);
        assert_eq!(error(&mut c, &e), error(&mut c, &m));
    }
    assert_eq!(
        error(
            &mut c,
            &[b"KV.EXPORT", b"e", b"TOKENS", b"1", b"LAYOUT", b"torch"]
        ),
        "ERR LAYOUT must be mlx-lm or mlx-lm-legacy"
    );
    let memory = temp_dir("kv-export-memory");
    let server = PionProcess::start(memory.path(), &["--wal", "off"]);
    let mut c = server.client();
    register(&mut c, "e", "as-given", &[L::Attn(1, 32)]);
    assert_eq!(
        error(&mut c, &[b"KV.EXPORT", b"e", b"TOKENS", b"1"]),
        "ERR KV.EXPORT needs a data directory (the engine runs in memory)"
    );
    assert_eq!(info(&mut c, "exports"), 0);
}
