//! The prompt cache over the wire, against a real `pion-server` process: two
//! conversations sharing a 2,048-token prefix store it once (checked in bytes), the
//! longest prefix comes back, and after SIGKILL and restart every acknowledged block
//! is fetched bit for bit (from the snapshot and from the log after it).

use pion_core::prefix::BlockId;
use pion_tests::process::{temp_dir, PionProcess};
use pion_tests::{Client, RespValue};

const BLOCK: usize = 256;
const HEADS: usize = 2;
const DIM: usize = 64;
const LAYERS: usize = 4;

fn manifest() -> String {
    let layer = format!(r#"{{"kind":"attention","kv_heads":{HEADS},"head_dim":{DIM}}}"#);
    format!(
        r#"{{"model":"wire-test","block_tokens":{BLOCK},"dtype":"f16","layers":[{}]}}"#,
        vec![layer; LAYERS].join(",")
    )
}

fn le(tokens: &[u32]) -> Vec<u8> {
    tokens.iter().flat_map(|t| t.to_le_bytes()).collect()
}

/// Layer bytes that depend on the block's tokens and the layer (so a wrong block or a
/// swapped layer shows).
fn layer(tokens: &[u32], l: usize) -> Vec<u8> {
    let n = 2 * HEADS * tokens.len() * DIM * 2;
    let mut x = tokens.iter().fold(l as u64 + 1, |a, &t| {
        a.wrapping_mul(6364136223846793005)
            .wrapping_add(u64::from(t))
    });
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 56) as u8
        })
        .collect()
}

/// The `KV.PUT` arguments for block `i` of a sequence whose block ids are `ids`.
fn put_args(ids: &[BlockId], i: usize, chunk: &[u32]) -> Vec<Vec<u8>> {
    let parent = if i == 0 {
        "root".to_string()
    } else {
        ids[i - 1].hex()
    };
    let mut args = vec![
        b"KV.PUT".to_vec(),
        b"conv".to_vec(),
        parent.into_bytes(),
        le(chunk),
    ];
    args.extend((0..LAYERS).map(|l| layer(chunk, l)));
    args
}

fn ok(c: &mut Client, args: &[&[u8]]) -> RespValue {
    let r = c.cmd(args);
    assert!(!r.is_error(), "{}", r.render());
    r
}

/// Stores a sequence block by block (only blocks not already stored are sent, as a
/// client does after `KV.MATCH`); returns every block id and how many were sent.
fn store(c: &mut Client, tokens: &[u32]) -> (Vec<BlockId>, usize) {
    let ids = BlockId::chain_all(tokens, BLOCK);
    let RespValue::Agg(_, Some(m)) = ok(c, &[b"KV.MATCH", b"conv", &le(tokens)]) else {
        panic!("KV.MATCH");
    };
    let RespValue::Agg(_, Some(have)) = &m[1] else {
        panic!("KV.MATCH ids");
    };
    let mut sent = 0;
    for (i, chunk) in tokens.chunks(BLOCK).enumerate().skip(have.len()) {
        let owned = put_args(&ids, i, chunk);
        let args: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let reply = ok(c, &args);
        assert_eq!(
            reply,
            RespValue::Bulk(b'$', Some(ids[i].hex().into_bytes()))
        );
        sent += 1;
    }
    (ids, sent)
}

fn stat(c: &mut Client, field: &str) -> i64 {
    let RespValue::Agg(_, Some(v)) = ok(c, &[b"KV.INFO", b"conv"]) else {
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

fn check_blocks(c: &mut Client, tokens: &[u32], ids: &[BlockId]) {
    for (chunk, id) in tokens.chunks(BLOCK).zip(ids) {
        let RespValue::Agg(_, Some(v)) = ok(c, &[b"KV.GET", b"conv", id.hex().as_bytes()]) else {
            panic!("KV.GET");
        };
        assert_eq!(
            v[0],
            RespValue::Line(b':', chunk.len().to_string().into_bytes())
        );
        for l in 0..LAYERS {
            assert!(
                v[l + 1] == RespValue::Bulk(b'$', Some(layer(chunk, l))),
                "block {} layer {l} differs",
                id.hex()
            );
        }
    }
}

#[test]
fn shared_prefixes_once_and_bit_identical_after_sigkill() {
    let dir = temp_dir("prompt-cache");
    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    ok(&mut c, &[b"KV.REGISTER", b"conv", manifest().as_bytes()]);
    // Two conversations: a common 2,048-token prefix (8 blocks), then their own turns.
    let prefix: Vec<u32> = (10_000..12_048).collect();
    let mut a = prefix.clone();
    a.extend(1..=300);
    let mut b = prefix.clone();
    b.extend(50_000..50_100);
    let (ids_a, sent_a) = store(&mut c, &a);
    assert_eq!(sent_a, 10);
    let bytes_a = stat(&mut c, "bytes");
    // A snapshot between the two: some blocks come back from it, the rest from the log.
    assert_eq!(c.cmd(&["SAVE"]), RespValue::Line(b'+', b"OK".to_vec()));
    let (ids_b, sent_b) = store(&mut c, &b);
    assert_eq!(sent_b, 1, "only b's own block travels");
    let per_token = (LAYERS * 2 * HEADS * DIM * 2) as i64;
    assert_eq!(
        stat(&mut c, "bytes") - bytes_a,
        100 * per_token,
        "the prefix is stored once"
    );
    assert_eq!(stat(&mut c, "blocks"), 11);
    server.kill9();
    let server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    check_blocks(&mut c, &a, &ids_a);
    check_blocks(&mut c, &b, &ids_b);
    let RespValue::Agg(_, Some(m)) = ok(&mut c, &[b"KV.MATCH", b"conv", &le(&a)]) else {
        panic!("KV.MATCH");
    };
    assert_eq!(m[0], RespValue::Line(b':', b"2348".to_vec()));
    // Deleting the shared prefix's last block takes both conversations' tails with it.
    ok(&mut c, &[b"KV.DEL", b"conv", ids_a[7].hex().as_bytes()]);
    assert_eq!(stat(&mut c, "blocks"), 7);
    assert_eq!(
        ok(&mut c, &[b"KV.NAMESPACES"]),
        RespValue::Agg(
            b'*',
            Some(vec![RespValue::Bulk(b'$', Some(b"conv".to_vec()))])
        )
    );
}

/// `DEBUG RELOAD` and `DEBUG LOADAOF` reload the keyspace and leave the prompt cache
/// as it is (its blocks are in their own files): every block is still there, once, and
/// still after a restart.
#[test]
fn reloading_in_place_leaves_the_prompt_cache_whole() {
    let dir = temp_dir("prompt-cache-reload");
    let debug: &[&str] = &["--enable-debug-command", "yes"];
    let mut server = PionProcess::start(dir.path(), debug);
    let mut c = server.client();
    ok(&mut c, &[b"KV.REGISTER", b"conv", manifest().as_bytes()]);
    let a: Vec<u32> = (1..=600).collect();
    let (ids_a, _) = store(&mut c, &a);
    assert_eq!(c.cmd(&["SAVE"]), RespValue::Line(b'+', b"OK".to_vec()));
    let b: Vec<u32> = (5_000..5_300).collect();
    let (ids_b, _) = store(&mut c, &b);
    ok(&mut c, &[b"SET", b"k", b"v"]);
    let (blocks, bytes) = (stat(&mut c, "blocks"), stat(&mut c, "bytes"));
    for reload in [&[b"DEBUG".as_slice(), b"LOADAOF"], &[b"DEBUG", b"RELOAD"]] {
        let name = String::from_utf8_lossy(reload[1]).into_owned();
        ok(&mut c, reload);
        assert_eq!(stat(&mut c, "blocks"), blocks, "after {name}");
        assert_eq!(stat(&mut c, "bytes"), bytes, "after {name}");
        check_blocks(&mut c, &a, &ids_a);
        check_blocks(&mut c, &b, &ids_b);
        assert_eq!(
            c.cmd(&["GET", "k"]),
            RespValue::Bulk(b'$', Some(b"v".to_vec()))
        );
    }
    server.kill9();
    let server = PionProcess::start(dir.path(), debug);
    let mut c = server.client();
    assert_eq!(stat(&mut c, "blocks"), blocks);
    check_blocks(&mut c, &a, &ids_a);
    check_blocks(&mut c, &b, &ids_b);
}

/// SIGKILL at random moments while a client stores blocks (small snapshot and segment
/// thresholds, so kills land during snapshots and rolls too): after every restart,
/// every acknowledged block is fetched bit for bit.
#[test]
fn acknowledged_blocks_survive_repeated_sigkill() {
    use rand::{Rng, SeedableRng};
    let cycles: usize = std::env::var("PION_KV_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(4242);
    let dir = temp_dir("prompt-cache-crash");
    let args = ["--snapshot-wal-size", "2M", "--wal-segment-size", "1M"];
    let mut acked: Vec<(Vec<u32>, BlockId)> = Vec::new();
    let mut next_conv = 0u32;
    let mut last_cycle = 0usize;
    for cycle in 0..cycles {
        let mut server = PionProcess::start(dir.path(), &args);
        let mut c = server.client();
        if cycle == 0 {
            ok(&mut c, &[b"KV.REGISTER", b"conv", manifest().as_bytes()]);
        }
        // What the last cycle acknowledged, and a sample of the older blocks, is there
        // bit for bit (everything is checked once more at the end).
        let recent = acked.len().saturating_sub(last_cycle);
        for (i, (chunk, id)) in acked.iter().enumerate() {
            if i >= recent || rng.gen_range(0..acked.len().max(1)) < 20 {
                check_blocks(&mut c, chunk, std::slice::from_ref(id));
            }
        }
        let port = server.port();
        let delay = rng.gen_range(30..250);
        let conv = next_conv;
        next_conv += 1000;
        let writer = std::thread::spawn(move || {
            let mut c = Client::connect(port).expect("connect");
            let mut done = Vec::new();
            // Conversations sharing a first block, each a few blocks long.
            for k in 0..200u32 {
                let mut tokens: Vec<u32> = (0..BLOCK as u32).collect();
                tokens.extend((0..(BLOCK as u32 * 2)).map(|t| conv + k * 7919 + t));
                let ids = BlockId::chain_all(&tokens, BLOCK);
                for (i, chunk) in tokens.chunks(BLOCK).enumerate() {
                    match c.call(&put_args(&ids, i, chunk)) {
                        Ok((RespValue::Bulk(_, Some(id)), _)) => {
                            assert_eq!(id, ids[i].hex().into_bytes());
                            done.push((chunk.to_vec(), ids[i]));
                        }
                        Ok((other, _)) => panic!("KV.PUT replied {}", other.render()),
                        Err(_) => return done,
                    }
                }
            }
            done
        });
        std::thread::sleep(std::time::Duration::from_millis(delay));
        server.kill9();
        let done = writer.join().expect("writer");
        last_cycle = done.len();
        acked.extend(done);
    }
    let server = PionProcess::start(dir.path(), &args);
    let mut c = server.client();
    for (chunk, id) in &acked {
        check_blocks(&mut c, chunk, std::slice::from_ref(id));
    }
    assert!(acked.len() > 20, "only {} blocks acknowledged", acked.len());
    eprintln!(
        "prompt-cache crash: {cycles} kills, {} acknowledged blocks verified bit for bit",
        acked.len()
    );
}
