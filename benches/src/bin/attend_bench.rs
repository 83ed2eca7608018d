//! Decode attention over a stored prefix on this machine's CPU: one layer-step of the
//! Llama-3.2-1B layout (8 KV heads, 32 query heads, head_dim 64) over 1K–128K prefix
//! tokens per storage tier, in microseconds and achieved GB/s (bytes of stored K/V
//! read / time), beside the machine's memory bandwidth measured in the same run (a
//! STREAM-like copy, and a read-only sum over every core interleaved with the
//! kernel's own repetitions, medians of both); then the sparse path at 64K
//! with a 512-token budget, selector included, against dense.
//!
//! `cargo run --release -p pion-benches --bin attend_bench -- [--tokens 1024,65536]
//! [--tiers f16,int8,q4] [--block 256] [--reps 20] [--device cpu|gpu] [--warm]`. With `--device
//! gpu` the dense and sparse calls run on the machine's wgpu adapter (K/V uploaded per
//! call, as the kernels do today). `--warm` runs the repetitions back to back, without
//! the reads between them, so K/V that fits stays cached. doc/benchmarks.md has the method.

use std::time::{Duration, Instant};

use half::f16;
use kernels::quant::{self, DType, Role, Shape, Tier};
use kernels::{
    block_select, block_summary, BlockKv, BlockSummary, DevicePolicy, Kernels, KvLayout, Queries,
    SelectOptions,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

const KV_HEADS: usize = 8;
const Q_HEADS: usize = 32;
const HEAD_DIM: usize = 64;

struct Args {
    tokens: Vec<usize>,
    tiers: Vec<Tier>,
    block: usize,
    reps: usize,
    gpu: bool,
    /// Repetitions back to back, no reads between them: the K/V stays in the caches
    /// where it fits (for profiling the kernels' arithmetic).
    warm: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        tokens: vec![1024, 4096, 16384, 32768, 65536, 131072],
        tiers: vec![Tier::AsGiven, Tier::Int8, Tier::Q4],
        block: 256,
        reps: 20,
        gpu: false,
        warm: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--warm" {
            args.warm = true;
            continue;
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let list = |v: &str| -> Result<Vec<usize>, String> {
            v.split(',')
                .map(|x| x.parse().map_err(|_| format!("{flag}: not a number: {x}")))
                .collect()
        };
        match flag.as_str() {
            "--tokens" => args.tokens = list(&value)?,
            "--block" => args.block = value.parse().map_err(|_| "--block: a number")?,
            "--reps" => args.reps = value.parse().map_err(|_| "--reps: a number")?,
            "--device" => {
                args.gpu = match value.as_str() {
                    "gpu" => true,
                    "cpu" => false,
                    other => return Err(format!("--device: cpu or gpu, not {other}")),
                }
            }
            "--tiers" => {
                args.tiers = value
                    .split(',')
                    .map(|t| match t {
                        "f16" => Ok(Tier::AsGiven),
                        other => Tier::parse(other).ok_or(format!("unknown tier {other}")),
                    })
                    .collect::<Result<_, _>>()?
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(args)
}

/// Buffers for measuring memory bandwidth over every core: 512 MiB, far past any
/// cache.
struct Memory {
    src: Vec<f64>,
    dst: Vec<f64>,
    chunk: usize,
}

impl Memory {
    fn new() -> Memory {
        let n = 64 << 20; // f64s: 512 MiB
        Memory {
            src: (0..n).map(|i| i as f64).collect(),
            dst: vec![0f64; n],
            chunk: n / rayon::current_num_threads().max(1) / 4,
        }
    }

    fn bytes(&self) -> f64 {
        (self.src.len() * 8) as f64
    }

    /// One STREAM-like copy: its time.
    fn copy(&mut self) -> Duration {
        let t = Instant::now();
        self.dst
            .par_chunks_mut(self.chunk)
            .zip(self.src.par_chunks(self.chunk))
            .for_each(|(d, s)| d.copy_from_slice(s));
        std::hint::black_box(&self.dst);
        t.elapsed()
    }

    /// One read-only sum over every core: its time.
    fn read(&self) -> Duration {
        let t = Instant::now();
        let sum: f64 = self
            .src
            .par_chunks(self.chunk)
            .map(|s| {
                let mut acc = [0f64; 8];
                for c in s.chunks_exact(8) {
                    for j in 0..8 {
                        acc[j] += c[j];
                    }
                }
                acc.iter().sum::<f64>()
            })
            .sum();
        std::hint::black_box(sum);
        t.elapsed()
    }
}

fn stored_layer(layout: &KvLayout, tokens: usize, rng: &mut SmallRng) -> Vec<u8> {
    let shape = Shape {
        heads: layout.kv_heads,
        tokens,
        head_dim: layout.head_dim,
    };
    let mut out = Vec::new();
    for role in [Role::Keys, Role::Values] {
        let given: Vec<u8> = (0..shape.heads * tokens * shape.head_dim)
            .flat_map(|_| f16::from_f32(rng.gen_range(-1.0..1.0)).to_le_bytes())
            .collect();
        // Shapes here are fixed and valid for every tier the bench runs.
        out.extend(
            quant::encode(layout.tier, layout.dtype, shape, role, &given).unwrap_or_default(),
        );
    }
    out
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// The median time of `f` over `reps` runs, and the median read bandwidth of reads
/// interleaved with them (one before each run), so the two are measured over the
/// same stretch of the machine's time: on a shared machine the bandwidth drifts, and
/// a ratio of figures taken minutes apart would measure the drift.
fn time_beside_memory<T>(
    reps: usize,
    memory: &Memory,
    mut f: impl FnMut() -> T,
) -> (Duration, f64) {
    std::hint::black_box(f());
    let mut runs = Vec::with_capacity(reps);
    let mut reads = Vec::with_capacity(reps);
    for _ in 0..reps {
        reads.push(memory.read());
        let t = Instant::now();
        std::hint::black_box(f());
        runs.push(t.elapsed());
    }
    (
        median(runs),
        memory.bytes() / median(reads).as_secs_f64() / 1e9,
    )
}

fn time<T>(reps: usize, mut f: impl FnMut() -> T) -> Duration {
    std::hint::black_box(f());
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f());
                t.elapsed()
            })
            .collect(),
    )
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("attend_bench: {e}");
            std::process::exit(2);
        }
    };
    let kernels = if args.gpu {
        match Kernels::open(DevicePolicy::Gpu) {
            Ok(k) => k,
            Err(e) => {
                eprintln!("attend_bench: {e}");
                std::process::exit(1);
            }
        }
    } else {
        Kernels::cpu()
    };
    let mut memory = Memory::new();
    let copy = (0..5).map(|_| memory.copy()).min().unwrap_or_default();
    println!(
        "device {}  threads {}  memory: copy {:.1} GB/s (read+write, best of 5)",
        kernels.describe(),
        rayon::current_num_threads(),
        2.0 * memory.bytes() / copy.as_secs_f64() / 1e9
    );
    println!(
        "{:>8} {:>9} {:>11} {:>9} {:>9} {:>8}",
        "tokens", "tier", "µs", "GB/s", "read GB/s", "of read"
    );
    let mut rng = SmallRng::seed_from_u64(1);
    let q: Vec<f32> = (0..Q_HEADS * HEAD_DIM)
        .map(|_| rng.gen_range(-1.0..1.0))
        .collect();
    let queries = Queries {
        data: &q,
        positions: 1,
        q_heads: Q_HEADS,
        scale: 1.0 / (HEAD_DIM as f32).sqrt(),
    };
    for &tier in &args.tiers {
        let Ok(layout) = KvLayout::new(KV_HEADS, HEAD_DIM, DType::F16, tier) else {
            continue;
        };
        let most = args.tokens.iter().copied().max().unwrap_or(0);
        let layers: Vec<Vec<u8>> = (0..most.div_ceil(args.block))
            .map(|_| stored_layer(&layout, args.block, &mut rng))
            .collect();
        for &tokens in &args.tokens {
            let blocks: Vec<BlockKv<'_>> = layers[..tokens / args.block]
                .iter()
                .filter_map(|l| layout.split(args.block, l).ok())
                .collect();
            let bytes: usize = blocks.iter().map(|b| b.keys.len() + b.values.len()).sum();
            let run = || kernels.decode_partial(&layout, &blocks, &queries);
            let (t, read) = if args.warm {
                (time(args.reps, run), f64::NAN)
            } else {
                time_beside_memory(args.reps, &memory, run)
            };
            let gbs = bytes as f64 / t.as_secs_f64() / 1e9;
            println!(
                "{tokens:>8} {:>9} {:>11.1} {gbs:>9.1} {read:>9.1} {:>7.0}%",
                tier.name(),
                t.as_secs_f64() * 1e6,
                100.0 * gbs / read
            );
        }
        // Sparse at 64K (or the longest prefix asked for), 512-token budget.
        let tokens = most.min(65536);
        let blocks: Vec<BlockKv<'_>> = layers[..tokens / args.block]
            .iter()
            .filter_map(|l| layout.split(args.block, l).ok())
            .collect();
        let summaries: Vec<BlockSummary> = blocks
            .iter()
            .filter_map(|b| block_summary(&layout, b).ok())
            .collect();
        let refs: Vec<&BlockSummary> = summaries.iter().collect();
        let options = SelectOptions::with_budget(512, args.block);
        let dense = time(args.reps, || {
            kernels.decode_partial(&layout, &blocks, &queries)
        });
        let sparse = time(args.reps, || {
            block_select(&layout, &refs, &queries, &options)
                .and_then(|s| kernels.sparse_partial(&layout, &blocks, &s, &queries))
        });
        println!(
            "sparse {tokens} tokens, budget 512, {}: {:.1} µs (selector included) vs dense {:.1} µs: {:.1}x",
            tier.name(),
            sparse.as_secs_f64() * 1e6,
            dense.as_secs_f64() * 1e6,
            dense.as_secs_f64() / sparse.as_secs_f64()
        );
    }
}
