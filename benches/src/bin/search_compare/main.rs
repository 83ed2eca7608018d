//! Pion against the search oracle (Redis 8.2 with its built-in vector sets plus
//! RediSearch 2.10) over the wire, with the same pipelined client, in one run: loading
//! and indexing a vector collection (`FT.CREATE` + `HSET`), KNN throughput and recall
//! over an `EF_RUNTIME` sweep (plus tag-filtered points at 1, 10, 30 and 50 % of the
//! documents, and recall@100 of `KNN 100` over a second sweep), and `VADD`/`VSIM` on a
//! vector set (with the same four filters as `VSIM … FILTER` over the elements'
//! attributes); tables side by side with the Pion/oracle ratios. Method and figures:
//! doc/search-benchmarks.md.
//!
//! ```text
//! cargo build --release -p pion-server -p pion-benches
//! target/release/search_compare [--n 100000] [--vset-n 20000] [--conns 4] [--depth 16]
//!     [--threads 1] [--efs 10,20,40,80,160] [--efs100 100,200,400] [--vset-efs 20,40,80,160]
//!     [--filter-efs 40,80] [--filter-efforts 1000,2000] [--secs 3] [--optimize]
//!     [--vsim-nothread] [--only pion|oracle] [--data DIR] [--oracle DIR] [--json]
//! ```
//! `--filter-efforts` adds a filtered `VSIM` sweep over `FILTER-EF` (at the first of
//! `--filter-efs`): at 1 % both servers' recall stops at the default effort's.
//! The oracle runs `VSIM` on the vector-set module's own threads, whatever its
//! `io-threads`; `--vsim-nothread` sends it `NOTHREAD`, so that its `VSIM`s run on its
//! main thread as Pion's run on `--threads` workers (like for like at one thread).
//! `--only` measures one side (to profile it, or to iterate on it); its tables show
//! the other side as `NaN`.
//! `--data` defaults to `$PION_VECTOR_DATA/minilm384` (TEXMEX `base.fvecs`,
//! `query.fvecs`, `gt.ivecs`); `--oracle` to `$PION_SEARCH_ORACLE`, else
//! `.venv/search-oracle` in the workspace (`scripts/search-oracle.sh` assembles it).

use pion_benches::drive::{self, Outcome, TIMEOUT};
use pion_benches::knn::{self, blob, exact_top_k, recall_at, Point};
use pion_benches::resp::{encode, Conn, Value};
use pion_benches::{free_port, Proc};
use std::path::{Path, PathBuf};

mod report;
use report::{json_report, print_tables};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Commands per pipelined write while loading.
const BATCH: usize = 500;
/// Distinct tag values; document `row` gets `t{row % TAGS}`.
const TAGS: usize = 10;
/// Distinct group values; document `row` gets `g{row % GROUPS}` (the 1 % filter).
const GROUPS: usize = 100;

/// A filtered point: its name, the KNN query's filter, the same filter as a `VSIM`
/// `FILTER` over the vector set's attributes, and which rows pass it.
struct FilterPoint {
    name: &'static str,
    query: &'static str,
    vsim: &'static str,
    passes: fn(usize) -> bool,
}

/// The filtered points, from an exact search over a small set to half the documents.
const FILTERS: [FilterPoint; 4] = [
    FilterPoint {
        name: "1 %",
        query: "(@grp:{g7})",
        vsim: ".grp == \"g7\"",
        passes: |r| r % GROUPS == 7,
    },
    FilterPoint {
        name: "10 %",
        query: "(@tag:{t3})",
        vsim: ".tag == \"t3\"",
        passes: |r| r % TAGS == 3,
    },
    FilterPoint {
        name: "30 %",
        query: "(@tag:{t3|t4|t5})",
        vsim: ".tag in [\"t3\", \"t4\", \"t5\"]",
        passes: |r| (3..=5).contains(&(r % TAGS)),
    },
    FilterPoint {
        name: "50 %",
        query: "(@tag:{t1|t3|t5|t7|t9})",
        vsim: ".tag in [\"t1\", \"t3\", \"t5\", \"t7\", \"t9\"]",
        passes: |r| r % 2 == 1,
    },
];
/// The `k` of the second sweep, scored by recall@100.
const KNN_WIDE: usize = 100;
/// Recall from which the sweeps are compared at matched recall.
const RECALL_FLOOR: f64 = 0.95;

struct Args {
    data: PathBuf,
    oracle: PathBuf,
    n: usize,
    vset_n: usize,
    conns: usize,
    depth: usize,
    threads: usize,
    efs: Vec<usize>,
    /// The `EF_RUNTIME` sweep of `KNN 100` queries (recall@100); empty skips it.
    efs100: Vec<usize>,
    vset_efs: Vec<usize>,
    /// The `EF_RUNTIME` values of the filtered points.
    filter_efs: Vec<usize>,
    /// `FILTER-EF` values of a second filtered `VSIM` sweep at the first of
    /// `filter_efs` (empty: none). A rare filter's recall is bounded by the nodes
    /// expanded whatever `EF` says, so only this knob reaches matched recall there.
    filter_efforts: Vec<usize>,
    secs: f64,
    optimize: bool,
    /// `NOTHREAD` on the oracle's `VSIM`s: they run on its main thread, as Pion's
    /// run on its workers, instead of on the vector-set module's own threads.
    vsim_nothread: bool,
    /// Measure only this engine.
    only: Option<Engine>,
    json: bool,
}

/// A comma-separated list of numbers; an empty one is an empty list.
fn list(s: &str) -> Result<Vec<usize>, String> {
    s.split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| x.trim().parse().map_err(|e| format!("bad list '{s}': {e}")))
        .collect()
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        data: std::env::var_os("PION_VECTOR_DATA")
            .map(|d| PathBuf::from(d).join("minilm384"))
            .unwrap_or_default(),
        oracle: std::env::var_os("PION_SEARCH_ORACLE").map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/search-oracle"),
            PathBuf::from,
        ),
        n: 100_000,
        vset_n: 20_000,
        conns: 4,
        depth: 16,
        threads: 1,
        efs: vec![10, 20, 40, 80, 160],
        efs100: vec![100, 200, 400],
        vset_efs: vec![20, 40, 80, 160],
        filter_efs: vec![40, 80],
        filter_efforts: Vec::new(),
        secs: 3.0,
        optimize: false,
        vsim_nothread: false,
        only: None,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or(format!("{k} needs a value"));
        let num = |v: String| v.parse::<usize>().map_err(|e| format!("{k}: {e}"));
        match k.as_str() {
            "--data" => a.data = PathBuf::from(val()?),
            "--oracle" => a.oracle = PathBuf::from(val()?),
            "--n" => a.n = num(val()?)?,
            "--vset-n" => a.vset_n = num(val()?)?,
            "--conns" => a.conns = num(val()?)?.max(1),
            "--depth" => a.depth = num(val()?)?.max(1),
            "--threads" => a.threads = num(val()?)?.max(1),
            "--efs" => a.efs = list(&val()?)?,
            "--efs100" => a.efs100 = list(&val()?)?,
            "--vset-efs" => a.vset_efs = list(&val()?)?,
            "--filter-efs" => a.filter_efs = list(&val()?)?,
            "--filter-efforts" => a.filter_efforts = list(&val()?)?,
            "--secs" => a.secs = val()?.parse().map_err(|e| format!("--secs: {e}"))?,
            "--optimize" => a.optimize = true,
            "--vsim-nothread" => a.vsim_nothread = true,
            "--only" => {
                a.only = Some(match val()?.as_str() {
                    "pion" => Engine::Pion,
                    "oracle" => Engine::Oracle,
                    other => return Err(format!("--only: pion or oracle, not {other}")),
                })
            }
            "--json" => a.json = true,
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    if a.data.as_os_str().is_empty() {
        return Err("set PION_VECTOR_DATA or pass --data".into());
    }
    Ok(a)
}

/// The vectors and the exact answers every engine is scored against.
struct Data {
    dim: usize,
    base: Vec<f32>,
    queries: Vec<f32>,
    /// Top-100 over rows `0..n` (top-10 is its prefix).
    knn: Vec<Vec<u32>>,
    /// Top-10 over the rows of `n` each of `FILTERS` passes.
    filtered: Vec<Vec<Vec<u32>>>,
    /// Top-10 over rows `0..vset_n`.
    vset: Vec<Vec<u32>>,
    /// Top-10 over the rows of `vset_n` each of `FILTERS` passes.
    vset_filtered: Vec<Vec<Vec<u32>>>,
    /// Whether `knn` came from `gt.ivecs` (else brute force over the prefix).
    knn_from_gt: bool,
}

fn load_data(a: &Args) -> Result<Data, String> {
    let (dim, base) = knn::fvecs(&a.data.join("base.fvecs"))?;
    let (_, queries) = knn::fvecs(&a.data.join("query.fvecs"))?;
    let rows = base.len() / dim;
    if a.n > rows || a.vset_n > rows {
        return Err(format!("the data set has only {rows} rows"));
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let prefix = |m: usize| (0..m as u32).collect::<Vec<u32>>();
    let knn_from_gt = a.n == rows;
    let knn = if knn_from_gt {
        let (gk, gt) = knn::ivecs(&a.data.join("gt.ivecs"))?;
        gt.chunks_exact(gk)
            .map(|r| r[..KNN_WIDE.min(gk)].to_vec())
            .collect()
    } else {
        exact_top_k(&base, dim, &prefix(a.n), &queries, KNN_WIDE, threads)
    };
    let filtered_over = |n: usize| -> Vec<Vec<Vec<u32>>> {
        FILTERS
            .iter()
            .map(|f| {
                let rows: Vec<u32> = (0..n as u32).filter(|&r| (f.passes)(r as usize)).collect();
                exact_top_k(&base, dim, &rows, &queries, 10, threads)
            })
            .collect()
    };
    let filtered = filtered_over(a.n);
    let vset_filtered = filtered_over(a.vset_n);
    let vset = exact_top_k(&base, dim, &prefix(a.vset_n), &queries, 10, threads);
    Ok(Data {
        dim,
        base,
        queries,
        knn,
        filtered,
        vset,
        vset_filtered,
        knn_from_gt,
    })
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Engine {
    Oracle,
    Pion,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Oracle => "oracle",
            Engine::Pion => "pion",
        }
    }
}

/// A fresh data directory for one server, removed on drop.
struct DataDir(PathBuf);

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running server; the process is stopped before its directory is removed.
struct Server {
    proc: Proc,
    _dir: DataDir,
    port: u16,
}

fn start(engine: Engine, a: &Args) -> Result<Server, String> {
    let dir = std::env::temp_dir().join(format!(
        "pion-search-bench-{}-{}",
        std::process::id(),
        engine.name()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let dir = DataDir(dir);
    let port = free_port();
    let mut cmd = match engine {
        Engine::Oracle => {
            let mut c = Command::new(a.oracle.join("redis-server"));
            c.args([
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(&dir.0)
            .arg("--loadmodule")
            .arg(a.oracle.join("redisearch.so"));
            c
        }
        Engine::Pion => {
            let bin = std::env::current_exe()
                .ok()
                .and_then(|p| p.parent().map(|d| d.join("pion-server")))
                .filter(|p| p.exists())
                .ok_or("build pion-server in the same profile first")?;
            let mut c = Command::new(bin);
            c.args([
                "--port",
                &port.to_string(),
                "--threads",
                &a.threads.to_string(),
            ])
            .args(["--wal", "off", "--kvcache", "off", "--dir"])
            .arg(&dir.0);
            c
        }
    };
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", engine.name()))?;
    let server = Server {
        proc: Proc(child),
        _dir: dir,
        port,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(mut c) = Conn::connect(port, TIMEOUT) {
            if matches!(c.call_str(&["PING"]), Ok(Value::Simple(ref s)) if s == b"PONG") {
                return Ok(server);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!("{} did not start on port {port}", engine.name()))
}

fn frame(args: &[&[u8]]) -> Vec<u8> {
    let mut b = Vec::new();
    encode(&mut b, args);
    b
}

/// One line `key:value` of an `INFO` section.
fn info(c: &mut Conn, section: &str, key: &str) -> Option<String> {
    let text = c.call_str(&["INFO", section]).ok()?.text();
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .map(str::to_string)
}

/// The resident set of a process in MiB, from `/proc` (NaN where there is none): the
/// one memory figure measured the same way for both servers.
fn rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let kb = s.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
            kb.trim().trim_end_matches("kB").trim().parse::<f64>().ok()
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// `INFO memory`'s `used_memory` in MiB (each server's own accounting).
fn used_memory(c: &mut Conn) -> f64 {
    info(c, "memory", "used_memory")
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(f64::NAN, |b| b / (1024.0 * 1024.0))
}

/// Polls until `done` holds (checking every 10 ms), up to `limit`; returns whether it did.
fn poll(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// Everything measured on one engine.
#[derive(Default)]
struct Report {
    load_s: f64,
    searchable_s: f64,
    graph_s: f64,
    first_knn_ms: f64,
    used_mb: f64,
    rss_start_mb: f64,
    rss_mb: f64,
    vector_index_mb: f64,
    knn: Vec<Point>,
    /// The `KNN 100` sweep, scored by recall@100.
    knn100: Vec<Point>,
    /// One per `FILTERS` entry.
    filtered: Vec<Vec<Point>>,
    vset_load_s: f64,
    vset_mem_mb: f64,
    vset_rss_mb: f64,
    vsim: Vec<Point>,
    /// One per `FILTERS` entry: `VSIM … FILTER`.
    vsim_filtered: Vec<Vec<Point>>,
    /// One per `FILTERS` entry: `VSIM … FILTER … FILTER-EF`, each point's `ef`
    /// the `FILTER-EF`.
    vsim_effort: Vec<Vec<Point>>,
    /// Error replies or failures, by section.
    errors: Vec<String>,
}

impl Report {
    /// The report of an engine `--only` left out: every figure NaN, no points.
    fn skipped() -> Report {
        Report {
            load_s: f64::NAN,
            searchable_s: f64::NAN,
            graph_s: f64::NAN,
            first_knn_ms: f64::NAN,
            used_mb: f64::NAN,
            rss_start_mb: f64::NAN,
            rss_mb: f64::NAN,
            vector_index_mb: f64::NAN,
            vset_load_s: f64::NAN,
            vset_mem_mb: f64::NAN,
            vset_rss_mb: f64::NAN,
            ..Report::default()
        }
    }
}

fn note(r: &mut Report, what: &str, o: &Outcome) {
    if o.errors > 0 {
        r.errors.push(format!(
            "{what}: {} of {} replies were errors, first: {}",
            o.errors,
            o.replies,
            o.first_error.as_deref().unwrap_or("")
        ));
    }
}

fn knn_frames(d: &Data, filter: &str, ef: usize) -> Vec<Vec<u8>> {
    knn_k_frames(d, filter, 10, ef)
}

/// `FT.SEARCH` frames for `KNN k`, one per query, asking for the k ids only.
fn knn_k_frames(d: &Data, filter: &str, k: usize, ef: usize) -> Vec<Vec<u8>> {
    let q = format!("{filter}=>[KNN {k} @v $q EF_RUNTIME $ef AS s]");
    let (ef, k) = (ef.to_string(), k.to_string());
    d.queries
        .chunks_exact(d.dim)
        .map(|v| {
            let b = blob(v);
            frame(&[
                b"FT.SEARCH",
                b"idx",
                q.as_bytes(),
                b"PARAMS",
                b"4",
                b"q",
                &b,
                b"ef",
                ef.as_bytes(),
                b"SORTBY",
                b"s",
                b"NOCONTENT",
                b"LIMIT",
                b"0",
                k.as_bytes(),
                b"DIALECT",
                b"2",
            ])
        })
        .collect()
}

/// What a sweep asks for: its name, the prefix of the ids in its replies and the exact
/// answers.
struct Target<'a> {
    what: &'a str,
    prefix: &'a [u8],
    truth: &'a [Vec<u32>],
    /// Recall is scored at this k.
    k: usize,
}

/// Runs one sweep point and scores it; failures are noted and give `None`.
fn point(
    r: &mut Report,
    a: &Args,
    port: u16,
    t: &Target<'_>,
    ef: usize,
    frames: &[Vec<u8>],
) -> Option<Point> {
    let (what, truth) = (t.what, t.truth);
    match drive::queries(port, a.conns, a.depth, a.secs, frames, t.prefix) {
        Ok((o, answers)) => {
            note(r, &format!("{what} ef {ef}"), &o);
            Some(Point {
                ef,
                recall: recall_at(&answers, truth, t.k),
                qps: o.replies as f64 / o.secs,
            })
        }
        Err(e) => {
            r.errors.push(format!("{what} ef {ef}: {e}"));
            None
        }
    }
}

fn measure(engine: Engine, a: &Args, d: &Data) -> Result<Report, String> {
    let srv = start(engine, a)?;
    let port = srv.port;
    let mut c = Conn::connect(port, TIMEOUT).map_err(|e| e.to_string())?;
    let mut r = Report::default();
    let create = "FT.CREATE idx ON HASH PREFIX 1 d: SCHEMA v VECTOR HNSW 10 TYPE FLOAT32 \
                  DIM 384 DISTANCE_METRIC COSINE M 16 EF_CONSTRUCTION 200 tag TAG grp TAG"
        .replace("384", &d.dim.to_string());
    let v = c
        .call_str(&create.split(' ').collect::<Vec<_>>())
        .map_err(|e| e.to_string())?;
    if let Some(e) = v.error() {
        return Err(format!("{}: FT.CREATE: {e}", engine.name()));
    }

    // 1. Load + build.
    let pid = srv.proc.0.id();
    r.rss_start_mb = rss_mb(pid);
    let t = Instant::now();
    let o = drive::load(port, a.conns, a.n, BATCH, |i, buf| {
        let key = format!("d:{i}");
        let tag = format!("t{}", i % TAGS);
        let grp = format!("g{}", i % GROUPS);
        let v = blob(&d.base[i * d.dim..(i + 1) * d.dim]);
        encode(
            buf,
            &[
                b"HSET",
                key.as_bytes(),
                b"v",
                &v,
                b"tag",
                tag.as_bytes(),
                b"grp",
                grp.as_bytes(),
            ],
        );
    })?;
    r.load_s = o.secs;
    note(&mut r, "HSET", &o);
    let n = a.n.to_string();
    let searchable = poll(Duration::from_secs(3600), || {
        c.call_str(&["FT.INFO", "idx"]).is_ok_and(|v| {
            v.field("num_docs").map(Value::text).as_deref() == Some(n.as_str())
                && v.field("indexing").is_some_and(|x| x.text() == "0")
        })
    });
    r.searchable_s = t.elapsed().as_secs_f64();
    if !searchable {
        r.errors
            .push("FT.INFO never showed every document indexed".into());
    }
    let one = &knn_frames(d, "*", 10)[0];
    let q = Instant::now();
    c.send(one).map_err(|e| e.to_string())?;
    let v = c.read().map_err(|e| e.to_string())?;
    r.first_knn_ms = q.elapsed().as_secs_f64() * 1e3;
    if let Some(e) = v.error() {
        r.errors.push(format!("first KNN after load: {e}"));
    }
    r.graph_s = r.searchable_s;
    if engine == Engine::Pion {
        if a.optimize {
            let v = c
                .call_str(&["FT.OPTIMIZE", "idx"])
                .map_err(|e| e.to_string())?;
            if let Some(e) = v.error() {
                r.errors.push(format!("FT.OPTIMIZE: {e}"));
            }
        }
        let built = poll(Duration::from_secs(3600), || {
            info(&mut c, "search", "search_vectors_pending_graph").as_deref() == Some("0")
        });
        if !built {
            r.errors
                .push("vectors still waiting for the graph after an hour".into());
        }
        r.graph_s = t.elapsed().as_secs_f64();
    }
    r.used_mb = used_memory(&mut c);
    r.rss_mb = rss_mb(pid);
    r.vector_index_mb = c
        .call_str(&["FT.INFO", "idx"])
        .ok()
        .and_then(|v| v.field("vector_index_sz_mb")?.text().parse().ok())
        .unwrap_or(f64::NAN);

    // 2. KNN sweep and the filtered points.
    let target = |what, truth| Target {
        what,
        prefix: b"d:",
        truth,
        k: 10,
    };
    for &ef in &a.efs {
        let frames = knn_frames(d, "*", ef);
        if let Some(p) = point(&mut r, a, port, &target("KNN", &d.knn), ef, &frames) {
            r.knn.push(p);
        }
    }
    if d.knn.first().is_some_and(|t| t.len() >= KNN_WIDE) {
        for &ef in &a.efs100 {
            let frames = knn_k_frames(d, "*", KNN_WIDE, ef);
            let t = Target {
                k: KNN_WIDE,
                ..target("KNN 100", &d.knn)
            };
            if let Some(p) = point(&mut r, a, port, &t, ef, &frames) {
                r.knn100.push(p);
            }
        }
    }
    for (f, truth) in FILTERS.iter().zip(&d.filtered) {
        let t = target("filtered KNN", truth);
        let mut sweep = Vec::new();
        for &ef in &a.filter_efs {
            let frames = knn_frames(d, f.query, ef);
            sweep.extend(point(&mut r, a, port, &t, ef, &frames));
        }
        r.filtered.push(sweep);
    }

    // 3. Vector set.
    let (before, rss_before) = (used_memory(&mut c), rss_mb(pid));
    // Each element carries the attributes the filtered points test, as each
    // document carries its tags.
    let o = drive::load(port, a.conns, a.vset_n, BATCH, |i, buf| {
        let el = format!("e{i}");
        let v = blob(&d.base[i * d.dim..(i + 1) * d.dim]);
        let attr = format!("{{\"tag\":\"t{}\",\"grp\":\"g{}\"}}", i % TAGS, i % GROUPS);
        encode(
            buf,
            &[
                b"VADD",
                b"vs",
                b"FP32",
                &v,
                el.as_bytes(),
                b"SETATTR",
                attr.as_bytes(),
            ],
        );
    })?;
    r.vset_load_s = o.secs;
    note(&mut r, "VADD", &o);
    r.vset_mem_mb = used_memory(&mut c) - before;
    r.vset_rss_mb = rss_mb(pid) - rss_before;
    let nothread = a.vsim_nothread && engine == Engine::Oracle;
    for &ef in &a.vset_efs {
        let frames = vsim_frames(d, ef, None, None, nothread);
        let t = Target {
            what: "VSIM",
            prefix: b"e",
            truth: &d.vset,
            k: 10,
        };
        if let Some(p) = point(&mut r, a, port, &t, ef, &frames) {
            r.vsim.push(p);
        }
    }
    for (f, truth) in FILTERS.iter().zip(&d.vset_filtered) {
        let t = Target {
            what: "filtered VSIM",
            prefix: b"e",
            truth,
            k: 10,
        };
        let mut sweep = Vec::new();
        for &ef in &a.filter_efs {
            let frames = vsim_frames(d, ef, Some(f.vsim), None, nothread);
            sweep.extend(point(&mut r, a, port, &t, ef, &frames));
        }
        r.vsim_filtered.push(sweep);
        let ef = a.filter_efs.first().copied().unwrap_or(40);
        let mut sweep = Vec::new();
        for &effort in &a.filter_efforts {
            let frames = vsim_frames(d, ef, Some(f.vsim), Some(effort), nothread);
            sweep.extend(point(&mut r, a, port, &t, effort, &frames));
        }
        r.vsim_effort.push(sweep);
    }
    Ok(r)
}

/// One `VSIM vs FP32 … COUNT 10 EF ef [FILTER expr [FILTER-EF effort]] [NOTHREAD]` per
/// query.
fn vsim_frames(
    d: &Data,
    ef: usize,
    filter: Option<&str>,
    effort: Option<usize>,
    nothread: bool,
) -> Vec<Vec<u8>> {
    let e = ef.to_string();
    let effort = effort.map(|n| n.to_string());
    d.queries
        .chunks_exact(d.dim)
        .map(|v| {
            let b = blob(v);
            let mut args: Vec<&[u8]> = vec![
                b"VSIM",
                b"vs",
                b"FP32",
                &b,
                b"COUNT",
                b"10",
                b"EF",
                e.as_bytes(),
            ];
            if let Some(expr) = filter {
                args.extend([&b"FILTER"[..], expr.as_bytes()]);
                if let Some(n) = &effort {
                    args.extend([&b"FILTER-EF"[..], n.as_bytes()]);
                }
            }
            if nothread {
                args.push(b"NOTHREAD");
            }
            frame(&args)
        })
        .collect()
}

fn main() -> Result<(), String> {
    let a = args()?;
    let d = load_data(&a)?;
    // One server at a time, so neither competes with the other's background work.
    let run = |e: Engine| match a.only {
        Some(only) if only != e => Ok(Report::skipped()),
        _ => measure(e, &a, &d),
    };
    let o = run(Engine::Oracle)?;
    let p = run(Engine::Pion)?;
    if a.json {
        println!(
            "{{\"cpu\":{:?},\"n\":{},\"dim\":{},\"vset_n\":{},\"conns\":{},\"depth\":{},\"threads\":{},\
             \"filter_efs\":{:?},\"filter_efforts\":{:?},\"oracle\":{},\"pion\":{}}}",
            pion_benches::cpu_summary(),
            a.n,
            d.dim,
            a.vset_n,
            a.conns,
            a.depth,
            a.threads,
            a.filter_efs,
            a.filter_efforts,
            json_report(&o),
            json_report(&p)
        );
    } else {
        print_tables(&a, &d, &o, &p);
    }
    Ok(())
}
