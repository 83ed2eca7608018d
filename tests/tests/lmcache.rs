//! LMCache's remote KV-cache backend, replayed against Pion and a real redis-server.
//!
//! LMCache (the KV-cache layer under vLLM) offloads attention KV chunks to any server
//! behind a `redis://` URL. Each chunk becomes two plain string keys: `<key>kv_bytes`,
//! the multi-megabyte payload, written first, and `<key>metadata`, a few dozen bytes
//! written last that act as the commit marker. A lookup is `EXISTS <key>metadata`; a
//! fetch reads the metadata and then the payload, and a chunk whose metadata is missing
//! is simply absent (a payload without metadata is a half-finished store). When the
//! metadata is there but the payload is gone, the client deletes the metadata. LMCache's
//! native client pipelines batches of single-key SET, GET and EXISTS (optionally one
//! MGET or one multi-key EXISTS per batch) and compares replies byte for byte: `+OK`
//! exactly, `:0`/`:1` exactly, and a GET header that must equal `$<chunk bytes>` before
//! it reads the payload straight into GPU-bound memory without parsing it.
//!
//! So a reply that differs from Redis by one byte, a payload that is not returned
//! bit-identical (the data is random bytes, CR, LF and NUL included), an ordering that
//! lets a metadata key outlive its payload across a crash, or buffer handling that turns
//! slow with multi-megabyte values, would each break a real deployment. This file replays
//! the pattern and checks each of those; it also prints the pipelined store and fetch
//! throughput of Pion and Redis side by side (not asserted). `PION_LMCACHE_MB` sets the
//! megabytes of chunk data per run (default 64, small enough for a debug build in CI;
//! 256 for a meaningful throughput figure). Redis runs without persistence while Pion
//! writes every value to its log, so the store figures favour Redis.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};

use pion_tests::{temp_dir, Client, PionProcess, PionServer, RedisServer};

const MIB: usize = 1024 * 1024;

/// The tests here measure throughput; running them one at a time keeps the figures
/// honest on a small machine.
static SERIAL: Mutex<()> = Mutex::new(());

/// Megabytes of chunk payload per run (`PION_LMCACHE_MB`, default 64).
fn budget_bytes() -> usize {
    std::env::var("PION_LMCACHE_MB")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&mb| mb > 0)
        .unwrap_or(64)
        * MIB
}

/// One KV chunk as LMCache stores it.
#[derive(Clone)]
struct Chunk {
    /// The chunk's cache key (the part before the `kv_bytes` / `metadata` suffix).
    key: String,
    payload: Vec<u8>,
    meta: Vec<u8>,
}

impl Chunk {
    fn kv_key(&self) -> Vec<u8> {
        format!("{}kv_bytes", self.key).into_bytes()
    }

    fn meta_key(&self) -> Vec<u8> {
        format!("{}metadata", self.key).into_bytes()
    }

    /// The exact GET reply a byte-comparing client expects for `value`.
    fn bulk_reply(value: &[u8]) -> Vec<u8> {
        let mut out = format!("${}\r\n", value.len()).into_bytes();
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
        out
    }
}

/// A cache key shaped like LMCache's: format, model, world size, worker, chunk hash.
fn cache_key(rng: &mut SmallRng) -> String {
    let hash: String = (0..4)
        .map(|_| format!("{:016x}", rng.gen::<u64>()))
        .collect();
    format!("vllm@test-org/kv-model-8b@1@0@{hash}@bfloat16")
}

/// Random bytes, with RESP-looking fragments (CR, LF, NUL, bulk and array headers)
/// planted at the edges and throughout, so a server that scans payloads for framing
/// instead of trusting the length would fail.
fn payload(rng: &mut SmallRng, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rng.fill_bytes(&mut v);
    const TRAPS: [&[u8]; 6] = [
        b"\r\n",
        b"\0",
        b"\r",
        b"\n",
        b"$-1\r\n",
        b"*2\r\n$3\r\nGET\r\n",
    ];
    for _ in 0..64 {
        let trap = TRAPS[rng.gen_range(0..TRAPS.len())];
        let at = rng.gen_range(0..len.saturating_sub(trap.len()).max(1));
        let end = (at + trap.len()).min(len);
        v[at..end].copy_from_slice(&trap[..end - at]);
    }
    if len >= 2 {
        v[..2].copy_from_slice(b"\r\n");
        v[len - 1] = 0;
    }
    v
}

/// A small binary metadata blob: payload length, a tensor shape, dtype and format codes,
/// in little-endian integers (zero bytes and all), then a few random bytes that include
/// CR and LF.
fn metadata(rng: &mut SmallRng, payload_len: usize) -> Vec<u8> {
    let mut m = Vec::with_capacity(48);
    m.extend_from_slice(&(payload_len as u32).to_le_bytes());
    for dim in [2u32, 32, 256, 1024] {
        m.extend_from_slice(&dim.to_le_bytes());
    }
    m.extend_from_slice(&rng.gen_range(0u32..8).to_le_bytes());
    m.extend_from_slice(&rng.gen_range(0u32..4).to_le_bytes());
    m.extend_from_slice(b"\r\n\0");
    m.extend((0..8).map(|_| rng.gen::<u8>()));
    m
}

/// Chunks of 1–8 MiB until `budget` bytes of payload are reached (at least six).
fn make_chunks(rng: &mut SmallRng, budget: usize) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    let mut total = 0;
    while total < budget || chunks.len() < 6 {
        let len = rng.gen_range(MIB..=8 * MIB);
        let payload = payload(rng, len);
        let meta = metadata(rng, len);
        total += len;
        chunks.push(Chunk {
            key: cache_key(rng),
            payload,
            meta,
        });
    }
    chunks
}

/// The store of one chunk: the payload first, then its commit marker.
fn put_commands(chunks: &[Chunk]) -> Vec<Vec<Vec<u8>>> {
    chunks
        .iter()
        .flat_map(|c| {
            [
                vec![b"SET".to_vec(), c.kv_key(), c.payload.clone()],
                vec![b"SET".to_vec(), c.meta_key(), c.meta.clone()],
            ]
        })
        .collect()
}

/// A fetch: the metadata, then the payload.
fn get_commands(chunks: &[Chunk]) -> Vec<Vec<Vec<u8>>> {
    chunks
        .iter()
        .flat_map(|c| {
            [
                vec![b"GET".to_vec(), c.meta_key()],
                vec![b"GET".to_vec(), c.kv_key()],
            ]
        })
        .collect()
}

fn encode_all(cmds: &[Vec<Vec<u8>>]) -> Vec<u8> {
    let mut wire = Vec::new();
    for c in cmds {
        wire.extend_from_slice(&Client::encode(c));
    }
    wire
}

/// Sends a whole pipeline in one write, then reads every reply; returns the exact reply
/// bytes and the time from the first byte sent to the last reply read.
fn pipeline(client: &mut Client, wire: &[u8], count: usize) -> (Vec<Vec<u8>>, Duration) {
    let start = Instant::now();
    client.send_raw(wire).expect("send pipeline");
    let replies = (0..count)
        .map(|i| {
            client
                .read_reply()
                .unwrap_or_else(|e| panic!("reply {i}: {e}"))
                .1
        })
        .collect();
    (replies, start.elapsed())
}

/// A lean pipelined connection for the timed phases, reading replies the way LMCache's
/// native client does: the header line, then the payload straight into its destination
/// with no scanning or re-buffering, so the figures measure the server, not a test
/// client's parser (which, unoptimized, tops out near the rates being measured).
struct Wire {
    stream: TcpStream,
    buf: Vec<u8>,
    at: usize,
}

impl Wire {
    fn connect(port: u16) -> Wire {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .expect("read timeout");
        stream.set_nodelay(true).expect("nodelay");
        Wire {
            stream,
            buf: Vec::new(),
            at: 0,
        }
    }

    /// Sends a whole pipeline, then reads `count` replies; their exact bytes and the
    /// time from the first byte sent to the last byte read.
    fn pipeline(&mut self, wire: &[u8], count: usize) -> (Vec<Vec<u8>>, Duration) {
        let start = Instant::now();
        // Written from a second thread while replies are read here, as a client with
        // a large batch does: neither side can stall the other.
        let mut writer = self.stream.try_clone().expect("clone stream");
        let replies = std::thread::scope(|s| {
            s.spawn(move || writer.write_all(wire).expect("send pipeline"));
            (0..count).map(|_| self.reply()).collect()
        });
        (replies, start.elapsed())
    }

    /// One complete reply (simple, error, integer, bulk or array), as raw bytes.
    fn reply(&mut self) -> Vec<u8> {
        let mut line = Vec::new();
        self.append_line(&mut line);
        let n: i64 = std::str::from_utf8(&line[1..line.len() - 2])
            .ok()
            .and_then(|t| t.parse().ok())
            .unwrap_or(-1);
        match line[0] {
            b'$' if n >= 0 => {
                // Zeroed allocation, not a resize: unoptimized, a resize writes the
                // zeros one byte at a time.
                let mut out = vec![0u8; line.len() + n as usize + 2];
                out[..line.len()].copy_from_slice(&line);
                self.fill(&mut out[line.len()..]);
                out
            }
            b'*' => {
                for _ in 0..n.max(0) {
                    let item = self.reply();
                    line.extend_from_slice(&item);
                }
                line
            }
            _ => line,
        }
    }

    /// Appends the next CRLF-terminated line, CRLF included.
    fn append_line(&mut self, out: &mut Vec<u8>) {
        loop {
            if let Some(p) = self.buf[self.at..].windows(2).position(|w| w == b"\r\n") {
                out.extend_from_slice(&self.buf[self.at..self.at + p + 2]);
                self.at += p + 2;
                return;
            }
            self.refill();
        }
    }

    /// Fills `dst` exactly: buffered bytes first, then straight from the socket.
    fn fill(&mut self, dst: &mut [u8]) {
        let have = (self.buf.len() - self.at).min(dst.len());
        dst[..have].copy_from_slice(&self.buf[self.at..self.at + have]);
        self.at += have;
        self.stream
            .read_exact(&mut dst[have..])
            .expect("read a reply payload");
    }

    fn refill(&mut self) {
        self.buf.drain(..self.at);
        self.at = 0;
        let old = self.buf.len();
        self.buf.resize(old + 4096, 0);
        let n = self
            .stream
            .read(&mut self.buf[old..])
            .expect("read a reply");
        assert!(n > 0, "connection closed");
        self.buf.truncate(old + n);
    }
}

fn run(client: &mut Client, cmds: &[Vec<Vec<u8>>]) -> Vec<Vec<u8>> {
    pipeline(client, &encode_all(cmds), cmds.len()).0
}

/// Both servers, each with one connection, driven in lockstep.
struct Pair {
    pion: Client,
    redis: Client,
}

impl Pair {
    /// Runs `cmds` pipelined on both servers, asserts the replies are byte-identical,
    /// and returns them.
    fn same(&mut self, what: &str, cmds: &[Vec<Vec<u8>>]) -> Vec<Vec<u8>> {
        let pion = run(&mut self.pion, cmds);
        let redis = run(&mut self.redis, cmds);
        assert_replies_equal(what, &pion, &redis);
        pion
    }
}

fn show(reply: &[u8]) -> String {
    let head = &reply[..reply.len().min(48)];
    format!(
        "{:?}{} ({} bytes)",
        String::from_utf8_lossy(head),
        if reply.len() > 48 { "…" } else { "" },
        reply.len()
    )
}

fn assert_replies_equal(what: &str, pion: &[Vec<u8>], redis: &[Vec<u8>]) {
    assert_eq!(pion.len(), redis.len(), "{what}: reply counts differ");
    for (i, (p, r)) in pion.iter().zip(redis).enumerate() {
        if p != r {
            let at = p.iter().zip(r).position(|(a, b)| a != b).unwrap_or(0);
            panic!(
                "{what}: reply {i} differs from Redis at byte {at}:\n  pion:  {}\n  redis: {}",
                show(p),
                show(r)
            );
        }
    }
}

fn assert_all(what: &str, replies: &[Vec<u8>], expected: &[u8]) {
    for (i, r) in replies.iter().enumerate() {
        assert!(
            r == expected,
            "{what}: reply {i} is {}, expected {:?}",
            show(r),
            String::from_utf8_lossy(expected)
        );
    }
}

/// Replies of a fetch of `chunks` are exactly the stored metadata and payload.
fn assert_fetched(what: &str, replies: &[Vec<u8>], chunks: &[Chunk]) {
    assert_eq!(replies.len(), chunks.len() * 2, "{what}: reply count");
    for (i, c) in chunks.iter().enumerate() {
        assert!(
            replies[2 * i] == Chunk::bulk_reply(&c.meta),
            "{what}: metadata of chunk {i} came back as {}",
            show(&replies[2 * i])
        );
        let got = &replies[2 * i + 1];
        if *got != Chunk::bulk_reply(&c.payload) {
            let want = Chunk::bulk_reply(&c.payload);
            let at = got.iter().zip(&want).position(|(a, b)| a != b);
            panic!(
                "{what}: payload of chunk {i} ({} bytes) is not bit-identical: got {}, first \
                 difference at byte {at:?}",
                c.payload.len(),
                show(got)
            );
        }
    }
}

fn mib_per_s(bytes: usize, took: Duration) -> f64 {
    bytes as f64 / MIB as f64 / took.as_secs_f64().max(1e-9)
}

fn exists(keys: &[Vec<u8>]) -> Vec<Vec<Vec<u8>>> {
    keys.iter()
        .map(|k| vec![b"EXISTS".to_vec(), k.clone()])
        .collect()
}

#[test]
fn lmcache_chunk_pattern_matches_redis_byte_for_byte() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let budget = budget_bytes();
    let mut rng = SmallRng::seed_from_u64(0x1c_ac4e);
    let started = Instant::now();
    let chunks = make_chunks(&mut rng, budget);
    let bytes: usize = chunks.iter().map(|c| c.payload.len()).sum();
    let generated = started.elapsed();

    let pion_server = PionServer::start(2);
    let redis_server = RedisServer::start();
    let connect = |port| {
        let c = Client::connect(port).expect("connect");
        c.set_read_timeout(Duration::from_secs(120))
            .expect("read timeout");
        c
    };
    let mut pair = Pair {
        pion: connect(pion_server.port),
        redis: connect(redis_server.port),
    };

    // Store: every chunk's payload then its metadata, the whole batch pipelined.
    let puts = put_commands(&chunks);
    let put_wire = encode_all(&puts);
    let mut pion_wire = Wire::connect(pion_server.port);
    let mut redis_wire = Wire::connect(redis_server.port);
    let (pion_put, pion_put_t) = pion_wire.pipeline(&put_wire, puts.len());
    let (redis_put, redis_put_t) = redis_wire.pipeline(&put_wire, puts.len());
    drop(put_wire);
    assert_all("pion SET", &pion_put, b"+OK\r\n");
    assert_replies_equal("SET", &pion_put, &redis_put);

    // Lookup: EXISTS on every metadata key, stored or not, one command per key and
    // then all of them in one multi-key EXISTS (the native client's two modes).
    let absent: Vec<Chunk> = (0..4)
        .map(|_| Chunk {
            key: cache_key(&mut rng),
            payload: Vec::new(),
            meta: Vec::new(),
        })
        .collect();
    let mut meta_keys: Vec<Vec<u8>> = chunks.iter().map(Chunk::meta_key).collect();
    meta_keys.extend(absent.iter().map(Chunk::meta_key));
    let found = pair.same("EXISTS", &exists(&meta_keys));
    assert_all("EXISTS stored", &found[..chunks.len()], b":1\r\n");
    assert_all("EXISTS absent", &found[chunks.len()..], b":0\r\n");
    let mut multi = vec![b"EXISTS".to_vec()];
    multi.extend(meta_keys.iter().cloned());
    let found = pair.same("multi-key EXISTS", &[multi]);
    assert_eq!(found[0], format!(":{}\r\n", chunks.len()).into_bytes());

    // Fetch: metadata then payload for every chunk, pipelined, each server timed.
    let gets = get_commands(&chunks);
    let get_wire = encode_all(&gets);
    let (pion_got, pion_get_t) = pion_wire.pipeline(&get_wire, gets.len());
    assert_fetched("pion GET", &pion_got, &chunks);
    drop(pion_got);
    let (redis_got, redis_get_t) = redis_wire.pipeline(&get_wire, gets.len());
    assert_fetched("redis GET", &redis_got, &chunks);
    drop(redis_got);
    // (Both equal the stored bytes, so they equal each other.)

    // A batched fetch in MGET mode over a few chunks and one missing key.
    let few = &chunks[..3];
    let mut mget = vec![b"MGET".to_vec()];
    mget.extend(few.iter().map(Chunk::kv_key));
    mget.push(absent[0].kv_key());
    let got = pair.same("MGET", &[mget]);
    let mut want = b"*4\r\n".to_vec();
    for c in few {
        want.extend(Chunk::bulk_reply(&c.payload));
    }
    want.extend_from_slice(b"$-1\r\n");
    assert!(got[0] == want, "MGET reply is {}", show(&got[0]));

    // A store cut short: the payload landed, the metadata never did. The chunk must
    // count as absent: no metadata, so no lookup hit and no fetch.
    let torn = Chunk {
        key: cache_key(&mut rng),
        payload: payload(&mut rng, 2 * MIB + 3),
        meta: Vec::new(),
    };
    let got = pair.same(
        "torn store",
        &[
            vec![b"SET".to_vec(), torn.kv_key(), torn.payload.clone()],
            vec![b"EXISTS".to_vec(), torn.meta_key()],
            vec![b"GET".to_vec(), torn.meta_key()],
        ],
    );
    assert_eq!(got[1], b":0\r\n");
    assert_eq!(got[2], b"$-1\r\n");

    // The other inconsistency: metadata present, payload gone (evicted). The client
    // reads the metadata, finds no payload, and deletes the metadata.
    let orphan = &chunks[0];
    let got = pair.same(
        "orphaned metadata",
        &[
            vec![b"DEL".to_vec(), orphan.kv_key()],
            vec![b"GET".to_vec(), orphan.meta_key()],
            vec![b"GET".to_vec(), orphan.kv_key()],
            vec![b"DEL".to_vec(), orphan.meta_key()],
            vec![b"EXISTS".to_vec(), orphan.meta_key()],
        ],
    );
    assert_eq!(got[0], b":1\r\n");
    assert_eq!(got[1], Chunk::bulk_reply(&orphan.meta));
    assert_eq!(got[2], b"$-1\r\n");
    assert_eq!(got[3], b":1\r\n");
    assert_eq!(got[4], b":0\r\n");

    // Explicit removal of a chunk: both keys, then again (nothing left), then a
    // multi-key DEL mixing present and missing keys.
    let gone = &chunks[1];
    let spare = &chunks[2];
    let got = pair.same(
        "DEL",
        &[
            vec![b"DEL".to_vec(), gone.meta_key()],
            vec![b"DEL".to_vec(), gone.kv_key()],
            vec![b"DEL".to_vec(), gone.meta_key()],
            vec![b"EXISTS".to_vec(), gone.meta_key()],
            vec![b"GET".to_vec(), gone.kv_key()],
            vec![
                b"DEL".to_vec(),
                spare.meta_key(),
                spare.kv_key(),
                absent[1].kv_key(),
            ],
        ],
    );
    assert_eq!(
        got[..5],
        [&b":1\r\n"[..], b":1\r\n", b":0\r\n", b":0\r\n", b"$-1\r\n"]
    );
    assert_eq!(got[5], b":2\r\n");

    // Second pass: the first half of the chunks is stored again with new payloads of
    // other sizes (a value replaced by a larger and by a smaller one), the removed ones
    // come back, and every chunk must then read back as its latest version.
    let mut current: Vec<Chunk> = chunks.clone();
    let half = current.len().div_ceil(2);
    for c in current.iter_mut().take(half) {
        let len = rng.gen_range(MIB / 2..=9 * MIB);
        c.payload = payload(&mut rng, len);
        c.meta = metadata(&mut rng, len);
    }
    let got = pair.same("overwrite SET", &put_commands(&current[..half]));
    assert_all("overwrite SET", &got, b"+OK\r\n");
    let got = pair.same("GET after overwrite", &get_commands(&current));
    assert_fetched("GET after overwrite", &got, &current);
    drop(got);
    let got = pair.same("DBSIZE", &[vec![b"DBSIZE".to_vec()]]);
    assert_eq!(
        got[0],
        format!(":{}\r\n", 2 * current.len() + 1).into_bytes()
    );

    println!(
        "lmcache pattern: {} chunks, {:.1} MiB of payload (1-8 MiB each; generated in {:.2?})",
        chunks.len(),
        bytes as f64 / MIB as f64,
        generated
    );
    let mut rows = vec![
        ("pion (in-process)", pion_put_t, pion_get_t),
        ("redis", redis_put_t, redis_get_t),
    ];
    // In-process Pion is built with the test's profile (unoptimized under a plain
    // `cargo test`); with PION_SERVER_BIN naming a built server, that binary is
    // measured too, on the same chunks.
    if std::env::var_os("PION_SERVER_BIN").is_some() {
        // Alone on the machine, like the others were.
        drop((pair, pion_wire, redis_wire, pion_server, redis_server));
        let dir = temp_dir("lmcache-bin");
        let server = PionProcess::start(dir.path(), &[]);
        let mut wire = Wire::connect(server.port());
        let (put, put_t) = wire.pipeline(&encode_all(&puts), puts.len());
        assert_all("binary SET", &put, b"+OK\r\n");
        let (got, get_t) = wire.pipeline(&get_wire, gets.len());
        assert_fetched("binary GET", &got, &chunks);
        rows.push(("pion (PION_SERVER_BIN)", put_t, get_t));
    }
    for (name, put_t, get_t) in rows {
        println!(
            "  {name:<22} store {:>7.1} MiB/s ({:.2?}), fetch {:>7.1} MiB/s ({:.2?})",
            mib_per_s(bytes, put_t),
            put_t,
            mib_per_s(bytes, get_t),
            get_t
        );
    }
}

/// Reads `+OK\r\n` acknowledgements until `want` are in or the connection ends; the
/// number read.
fn read_acks(stream: &mut TcpStream, want: usize) -> usize {
    let mut acks = 0;
    let mut reply = [0u8; 5];
    while acks < want {
        if stream.read_exact(&mut reply).is_err() {
            break;
        }
        assert_eq!(&reply, b"+OK\r\n", "SET reply {acks}");
        acks += 1;
    }
    acks
}

#[test]
fn acknowledged_chunks_survive_sigkill_bit_identical() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = SmallRng::seed_from_u64(0x51_61c1);
    let chunks = make_chunks(&mut rng, (budget_bytes() / 2).max(8 * MIB));
    let dir = temp_dir("lmcache");
    let mut server = PionProcess::start(dir.path(), &[]);

    // A payload stored without its metadata before the crash must stay absent after.
    let torn = Chunk {
        key: cache_key(&mut rng),
        payload: payload(&mut rng, MIB + 7),
        meta: Vec::new(),
    };
    let mut client = server.client();
    let set = vec![b"SET".to_vec(), torn.kv_key(), torn.payload.clone()];
    assert_eq!(run(&mut client, &[set]), [b"+OK\r\n".to_vec()]);

    // Store every chunk pipelined from a writer thread and SIGKILL the server once half
    // of the commands are acknowledged, while the rest are still arriving.
    let puts = put_commands(&chunks);
    let wire = encode_all(&puts);
    let mut stream = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .expect("read timeout");
    let mut writer = stream.try_clone().expect("clone stream");
    let sender = std::thread::spawn(move || {
        // The server dies mid-stream: a failed write is expected.
        let _ = writer.write_all(&wire);
    });
    let mut acked = read_acks(&mut stream, puts.len() / 2);
    server.kill9();
    // Replies that left before the kill are acknowledgements too.
    acked += read_acks(&mut stream, puts.len());
    drop(stream);
    let _ = sender.join();

    let server = PionProcess::start(dir.path(), &[]);
    let mut client = server.client();
    client
        .set_read_timeout(Duration::from_secs(120))
        .expect("read timeout");
    let got = run(
        &mut client,
        &[
            vec![b"EXISTS".to_vec(), torn.meta_key()],
            vec![b"GET".to_vec(), torn.kv_key()],
        ],
    );
    assert_eq!(
        got[0], b":0\r\n",
        "a store without metadata came back as a chunk"
    );
    assert_eq!(
        got[1],
        Chunk::bulk_reply(&torn.payload),
        "torn payload changed"
    );

    // Every acknowledged SET is there, bit-identical. Beyond the acknowledged prefix a
    // key may be missing, but never torn, and a metadata key (the commit marker) is
    // never there without its complete payload, since the payload was written first.
    let replies = run(&mut client, &get_commands(&chunks));
    let mut committed = 0;
    for (i, c) in chunks.iter().enumerate() {
        let (meta, kv) = (&replies[2 * i], &replies[2 * i + 1]);
        let (meta_acked, kv_acked) = (2 * i + 1 < acked, 2 * i < acked);
        let meta_ok = *meta == Chunk::bulk_reply(&c.meta);
        let kv_ok = *kv == Chunk::bulk_reply(&c.payload);
        assert!(
            meta_ok || (!meta_acked && meta == b"$-1\r\n"),
            "chunk {i}: metadata after restart is {} (acknowledged: {meta_acked})",
            show(meta)
        );
        assert!(
            kv_ok || (!kv_acked && kv == b"$-1\r\n"),
            "chunk {i}: payload after restart is {} (acknowledged: {kv_acked})",
            show(kv)
        );
        assert!(
            !meta_ok || kv_ok,
            "chunk {i}: its metadata survived the crash but its payload did not"
        );
        committed += usize::from(meta_ok);
    }
    assert!(
        acked >= puts.len() / 2,
        "only {acked} acknowledgements before the kill"
    );
    println!(
        "sigkill: {} chunks sent, {acked} of {} SETs acknowledged, {committed} chunks \
         committed after restart",
        chunks.len(),
        puts.len()
    );
}
