//! Prompt-cache transfer rates: storing and fetching a 2,048-token prefix of a
//! 16-layer model with 8 K/V heads of 64 dims in f16 (64 MiB), over the binary lane
//! and over RESP, beside `memcpy` of the same bytes and a plain loopback TCP copy
//! measured in the same run (the physical limit of this machine). Each figure is the
//! median of `--rounds` (a store's rounds are prefixes of their own, so none is
//! deduplicated); a store's first round, on a fresh server, is shown as well.
//!
//! ```text
//! cargo build --release -p pion-server -p pion-benches
//! target/release/kv_transfer [--rounds 7]
//! ```

use pion_benches::{free_port, Proc};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pion_core::prefix::BlockId;
use pion_server::binary::codec::{encode_request, parse_header, Request, HEADER_LEN};

const LAYERS: usize = 16;
const HEADS: usize = 8;
const DIM: usize = 64;
const BLOCK: usize = 256;
const TOKENS: usize = 2048;

fn connect(port: u16) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.set_nodelay(true);
            return s;
        }
        assert!(Instant::now() < deadline, "server on {port} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn resp_cmd(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Reads one RESP reply and returns its payload size (bulk strings are skipped over,
/// not parsed, as a client that maps them would).
fn read_resp(r: &mut BufReader<TcpStream>, sink: &mut Vec<u8>) -> usize {
    let mut line = String::new();
    r.read_line(&mut line).expect("reply");
    match line.as_bytes()[0] {
        b'*' => {
            let n: i64 = line[1..].trim().parse().expect("count");
            (0..n.max(0)).map(|_| read_resp(r, sink)).sum()
        }
        b'$' => {
            let n: i64 = line[1..].trim().parse().expect("len");
            if n < 0 {
                return 0;
            }
            sink.resize(n as usize + 2, 0);
            r.read_exact(sink).expect("bulk");
            n as usize
        }
        b'-' => panic!("server error: {line}"),
        _ => 0,
    }
}

fn lane_call(s: &mut TcpStream, frame: &[u8], body: &mut Vec<u8>) -> u8 {
    s.write_all(frame).expect("send");
    let mut h = [0u8; HEADER_LEN];
    s.read_exact(&mut h).expect("header");
    let hd = parse_header(&h).expect("magic");
    body.resize(hd.len as usize, 0);
    s.read_exact(body).expect("body");
    hd.opcode
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn gbs(bytes: usize, secs: f64) -> f64 {
    bytes as f64 / secs / 1e9
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(7usize);
    let bin = pion_benches::pion_server_beside_exe();
    let port = free_port();
    let lane_port = free_port();
    let dir = std::env::temp_dir().join(format!("pion-kv-bench-{port}"));
    let _ = std::fs::remove_dir_all(&dir);
    let _server = Proc(
        Command::new(&bin)
            .args([
                "--port",
                &port.to_string(),
                "--kvcache-port",
                &lane_port.to_string(),
            ])
            .args(["--snapshot-wal-size", "0", "--dir"])
            .arg(&dir)
            .stderr(Stdio::null())
            .spawn()
            .expect("start pion-server"),
    );
    let layer = format!(r#"{{"kind":"attention","kv_heads":{HEADS},"head_dim":{DIM}}}"#);
    let manifest = format!(
        r#"{{"model":"bench","block_tokens":{BLOCK},"dtype":"f16","layers":[{}]}}"#,
        vec![layer; LAYERS].join(",")
    );
    let tokens: Vec<u32> = (0..TOKENS as u32).collect();
    let ids = BlockId::chain_all(&tokens, BLOCK);
    let layer_bytes = 2 * HEADS * BLOCK * DIM * 2;
    let payload: Vec<u8> = (0..layer_bytes).map(|i| (i * 31 % 251) as u8).collect();
    let total = TOKENS / BLOCK * LAYERS * layer_bytes;

    let resp = connect(port);
    let mut r = BufReader::with_capacity(1 << 20, resp.try_clone().expect("clone"));
    let mut w = resp;
    let mut sink = Vec::new();
    for ns in ["lane", "resp"] {
        w.write_all(&resp_cmd(&[
            b"KV.REGISTER",
            ns.as_bytes(),
            manifest.as_bytes(),
        ]))
        .expect("send");
        read_resp(&mut r, &mut sink);
    }
    let mut lane = connect(lane_port);
    let mut body = Vec::new();

    // Store: 8 blocks per lane, `rounds` times, each round a prefix of its own (the
    // same blocks again would only be deduplicated). The first round of each lane is
    // also reported on its own: a fresh server's first store (new block file, new
    // buffers) is the slowest.
    let round_tokens = |round: usize| -> Vec<u32> {
        let first = (round * TOKENS) as u32;
        (first..first + TOKENS as u32).collect()
    };
    let mut lane_stores = Vec::new();
    for round in 0..rounds {
        let tokens = round_tokens(round);
        let ids = BlockId::chain_all(&tokens, BLOCK);
        let put_frames: Vec<Vec<u8>> = tokens
            .chunks(BLOCK)
            .enumerate()
            .map(|(i, chunk)| {
                encode_request(&Request::Put {
                    ns: "lane".into(),
                    parent: if i == 0 { 0 } else { ids[i - 1].0 },
                    tokens: chunk.to_vec(),
                    layers: vec![pion_core::Bytes::copy_from_slice(&payload); LAYERS],
                })
            })
            .collect();
        let t = Instant::now();
        for f in &put_frames {
            assert_eq!(
                lane_call(&mut lane, f, &mut body),
                0x91,
                "{}",
                String::from_utf8_lossy(&body)
            );
        }
        lane_stores.push(t.elapsed().as_secs_f64());
    }
    let mut resp_stores = Vec::new();
    for round in 0..rounds {
        let tokens = round_tokens(round);
        let ids = BlockId::chain_all(&tokens, BLOCK);
        let put_cmds: Vec<Vec<u8>> = tokens
            .chunks(BLOCK)
            .enumerate()
            .map(|(i, chunk)| {
                let parent = if i == 0 {
                    "root".to_string()
                } else {
                    ids[i - 1].hex()
                };
                let tok: Vec<u8> = chunk.iter().flat_map(|t| t.to_le_bytes()).collect();
                let mut a: Vec<&[u8]> = vec![b"KV.PUT", b"resp", parent.as_bytes(), &tok];
                a.extend(std::iter::repeat_n(payload.as_slice(), LAYERS));
                resp_cmd(&a)
            })
            .collect();
        let t = Instant::now();
        for c in &put_cmds {
            w.write_all(c).expect("send");
            read_resp(&mut r, &mut sink);
        }
        resp_stores.push(t.elapsed().as_secs_f64());
    }

    // Fetch the whole prefix, `rounds` times each.
    let fetch = encode_request(&Request::Fetch {
        ns: "lane".into(),
        ids: ids.iter().map(|b| b.0).collect(),
        layers: None,
        batch: true,
    });
    let mut lane_times = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        assert_eq!(lane_call(&mut lane, &fetch, &mut body), 0x93);
        lane_times.push(t.elapsed().as_secs_f64());
        assert!(body.len() > total);
    }
    let gets: Vec<u8> = ids
        .iter()
        .flat_map(|id| resp_cmd(&[b"KV.GET", b"resp", id.hex().as_bytes()]))
        .collect();
    let mut resp_times = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        w.write_all(&gets).expect("send");
        let got: usize = ids.iter().map(|_| read_resp(&mut r, &mut sink)).sum();
        resp_times.push(t.elapsed().as_secs_f64());
        assert_eq!(got, total);
    }

    // The physical limits: memcpy, and one loopback TCP stream of the same bytes.
    let src = vec![7u8; total];
    let mut dst = vec![0u8; total];
    let mut memcpy_times = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        dst.copy_from_slice(&src);
        std::hint::black_box(&dst);
        memcpy_times.push(t.elapsed().as_secs_f64());
    }
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let sender = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        let buf = vec![9u8; total];
        let mut go = [0u8; 1];
        while s.read_exact(&mut go).is_ok() {
            s.write_all(&buf).expect("send");
        }
    });
    let mut tcp = TcpStream::connect(addr).expect("connect");
    let mut tcp_times = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        tcp.write_all(&[1]).expect("ask");
        tcp.read_exact(&mut dst).expect("read");
        tcp_times.push(t.elapsed().as_secs_f64());
    }
    drop(tcp);
    let _ = sender.join();

    let mib = total as f64 / (1 << 20) as f64;
    println!(
        "{TOKENS}-token prefix, {LAYERS} layers x {HEADS} K/V heads x {DIM} dims, f16: {mib:.0} MiB; median of {rounds}"
    );
    println!("{:<34} {:>8}", "", "GB/s");
    let tcp_rate = gbs(total, median(tcp_times));
    let rows = [
        ("memcpy", gbs(total, median(memcpy_times))),
        ("loopback TCP copy (the limit)", tcp_rate),
        (
            "fetch, binary lane (BATCH FETCH)",
            gbs(total, median(lane_times)),
        ),
        ("fetch, RESP (KV.GET x 8)", gbs(total, median(resp_times))),
        (
            "store, binary lane (PUT x 8)",
            gbs(total, median(lane_stores.clone())),
        ),
        ("  its first round", gbs(total, lane_stores[0])),
        (
            "store, RESP (KV.PUT x 8)",
            gbs(total, median(resp_stores.clone())),
        ),
        ("  its first round", gbs(total, resp_stores[0])),
    ];
    for (name, rate) in rows {
        println!(
            "{name:<34} {rate:>8.2}   {:>5.0} % of loopback TCP",
            rate / tcp_rate * 100.0
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
