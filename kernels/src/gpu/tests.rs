//! The shaders: validated by naga as wgpu will (always), and run on whatever adapter
//! the machine has (lavapipe in CI) against the f64 references and the CPU paths.

use std::sync::OnceLock;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::host::{source, SHADERS};
use super::*;
use crate::quant::{self, DType, Role, Shape, Tier};
use crate::reference;
use crate::select::Score;
use crate::summary::block_summary;
use crate::tests::{random_block, random_blocks, views};

#[test]
fn every_shader_parses_and_validates() {
    for (kernel, entry) in SHADERS {
        let src = source(kernel);
        let module = naga::front::wgsl::parse_str(&src)
            .unwrap_or_else(|e| panic!("{entry}: {}", e.emit_to_string(&src)));
        // `unpack2x16float` is the one capability the kernels need: every Vulkan, Metal
        // and DX12 adapter has it (wgpu's downlevel flag SHADER_F16_IN_F32).
        let caps = naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32;
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
            .validate(&module)
            .unwrap_or_else(|e| panic!("{entry}: {e:?}"));
        assert!(
            module.entry_points.iter().any(|e| e.name == entry),
            "{entry}"
        );
    }
}

/// Says `line` on the test process's stderr itself (past the harness's capture, so
/// that a CI log shows which device the shaders ran on).
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The machine's adapter, opened once; `None` (said once) when there is none.
fn gpu() -> Option<&'static Gpu> {
    static GPU: OnceLock<Option<Gpu>> = OnceLock::new();
    GPU.get_or_init(|| match Gpu::open() {
        Ok(Some(g)) => {
            say(&format!("kernels: running the shaders on {}", g.describe()));
            Some(g)
        }
        Ok(None) => {
            say("kernels: no GPU adapter here: the shaders are validated, not run; the CPU paths are checked");
            None
        }
        Err(e) => panic!("{e}"),
    })
    .as_ref()
}

fn layouts() -> Vec<KvLayout> {
    [
        (DType::F16, Tier::AsGiven),
        (DType::BF16, Tier::AsGiven),
        (DType::F32, Tier::AsGiven),
        (DType::F16, Tier::Int8),
        (DType::F16, Tier::Q4),
        (DType::F32, Tier::Q4),
    ]
    .into_iter()
    .map(|(dtype, tier)| KvLayout::new(2, 64, dtype, tier).expect("layout"))
    .chain([KvLayout::new(1, 40, DType::F16, Tier::AsGiven).expect("layout")])
    .collect()
}

#[test]
fn attention_on_the_gpu_matches_the_reference() {
    let Some(gpu) = gpu() else { return };
    let mut rng = SmallRng::seed_from_u64(41);
    for layout in layouts() {
        let sizes = [64usize, 0, 100, 64, 7];
        let stored = random_blocks(&layout, &sizes, &mut rng);
        let blocks = views(&layout, &sizes, &stored);
        for (group, positions) in [(1, 1), (4, 2)] {
            let q_heads = layout.kv_heads * group;
            let q: Vec<f32> = (0..positions * q_heads * layout.head_dim)
                .map(|_| rng.gen_range(-2.0..2.0))
                .collect();
            let qs = Queries {
                data: &q,
                positions,
                q_heads,
                scale: 0.15,
            };
            let dense = Selection::all(layout.kv_heads, blocks.len());
            let sparse = Selection {
                per_head: (0..layout.kv_heads)
                    .map(|h| if h == 0 { vec![0, 2, 4] } else { vec![3] })
                    .collect(),
            };
            for selection in [dense, sparse] {
                let got = gpu
                    .attend(&layout, &blocks, &selection, &qs)
                    .expect("attend")
                    .expect("rows fit");
                let (out, lse) =
                    reference::attention(&layout, &blocks, &selection.per_head, &q, q_heads, 0.15);
                for (i, (&g, &w)) in got.out.iter().zip(&out).enumerate() {
                    assert!(
                        (f64::from(g) - w).abs() < 2e-4,
                        "{layout:?} {selection:?}: out[{i}] {g} vs {w}"
                    );
                }
                for (&g, &w) in got.lse.iter().zip(&lse) {
                    assert!(
                        (f64::from(g) - w).abs() < 2e-4 * (1.0 + w.abs()),
                        "{layout:?}: lse {g} vs {w}"
                    );
                }
            }
        }
        // No blocks at all: an empty state, no NaN.
        let q = vec![0.5f32; layout.kv_heads * layout.head_dim];
        let qs = Queries {
            data: &q,
            positions: 1,
            q_heads: layout.kv_heads,
            scale: 1.0,
        };
        let none = gpu
            .attend(&layout, &[], &Selection::all(layout.kv_heads, 0), &qs)
            .expect("attend")
            .expect("rows fit");
        assert_eq!(
            none,
            crate::AttnState::empty(layout.kv_heads, layout.head_dim)
        );
    }
}

#[test]
fn summaries_and_scores_on_the_gpu_match_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = SmallRng::seed_from_u64(42);
    for layout in layouts() {
        let sizes = [64usize, 0, 33, 64];
        let stored = random_blocks(&layout, &sizes, &mut rng);
        let blocks = views(&layout, &sizes, &stored);
        let got = gpu.block_summaries(&layout, &blocks).expect("summaries");
        for (g, b) in got.iter().zip(&blocks) {
            let want = block_summary(&layout, b).expect("summary");
            assert_eq!(g.tokens, want.tokens);
            for (x, y) in g.data.iter().zip(&want.data) {
                assert!((x - y).abs() < 1e-5, "{layout:?}: {x} vs {y}");
            }
        }
        let refs: Vec<&BlockSummary> = got.iter().collect();
        let q: Vec<f32> = (0..2 * layout.kv_heads * layout.head_dim)
            .map(|_| rng.gen_range(-1.0..1.0))
            .collect();
        let qs = Queries {
            data: &q,
            positions: 1,
            q_heads: 2 * layout.kv_heads,
            scale: 0.2,
        };
        for score in [Score::Quest, Score::MeanKey] {
            let scores = gpu
                .block_scores(&layout, &refs, &qs, score)
                .expect("scores")
                .expect("fits");
            let rows: Vec<Vec<f32>> = (0..layout.kv_heads)
                .map(|h| qs.head_rows(h, 2, layout.head_dim))
                .collect();
            for (h, head_scores) in scores.iter().enumerate() {
                for (b, &s) in head_scores.iter().enumerate() {
                    let want = crate::select::head_score(refs[b], h, &rows[h], score);
                    assert!(
                        (s - want).abs() < 1e-4 * (1.0 + want.abs()),
                        "{s} vs {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn quantising_and_dequantising_on_the_gpu_give_the_stores_bytes() {
    let Some(gpu) = gpu() else { return };
    let mut rng = SmallRng::seed_from_u64(43);
    for tier in [Tier::Int8, Tier::Q4] {
        for dtype in [DType::F16, DType::BF16, DType::F32] {
            let shape = Shape {
                heads: 3,
                tokens: 17,
                head_dim: 64,
            };
            let x: Vec<f32> = (0..3 * 17 * 64).map(|_| rng.gen_range(-3.0..3.0)).collect();
            let given = quant::from_f32(dtype, &x);
            let encoded = quant::encode(tier, dtype, shape, Role::Values, &given).expect("encode");
            let want = quant::decode(tier, dtype, shape, Role::Values, &encoded).expect("decode");
            let got = gpu
                .dequantise(tier, dtype, shape, &encoded)
                .expect("dequantise");
            assert!(
                got == want,
                "{tier:?} {dtype:?}: {} of {} bytes differ",
                got.iter().zip(&want).filter(|(a, b)| a != b).count(),
                want.len()
            );
        }
    }
    assert!(gpu
        .dequantise(
            Tier::AsGiven,
            DType::F16,
            Shape {
                heads: 1,
                tokens: 1,
                head_dim: 32
            },
            &[0; 64]
        )
        .is_err());
    assert!(gpu
        .dequantise(
            Tier::Int8,
            DType::F16,
            Shape {
                heads: 1,
                tokens: 1,
                head_dim: 32
            },
            &[0; 5]
        )
        .is_err());
}

#[test]
fn kernels_send_calls_to_the_device_the_policy_names() {
    let mut rng = SmallRng::seed_from_u64(44);
    let layout = KvLayout::new(2, 64, DType::F16, Tier::AsGiven).expect("layout");
    let stored: Vec<Vec<u8>> = (0..3)
        .map(|_| random_block(&layout, 64, &mut rng))
        .collect();
    let blocks: Vec<BlockKv<'_>> = stored
        .iter()
        .map(|s| layout.split(64, s).expect("split"))
        .collect();
    let q: Vec<f32> = (0..2 * 64).map(|_| rng.gen_range(-1.0..1.0)).collect();
    let qs = Queries {
        data: &q,
        positions: 1,
        q_heads: 2,
        scale: 0.125,
    };
    let cpu = Kernels::cpu();
    let (state, device) = cpu.decode_partial(&layout, &blocks, &qs).expect("cpu");
    assert_eq!(device, Device::Cpu);
    assert_eq!(cpu.describe(), "cpu");
    // A small call stays on the CPU under Auto, whatever the machine has.
    let auto = Kernels::open(DevicePolicy::Auto).expect("auto");
    assert_eq!(
        auto.decode_partial(&layout, &blocks, &qs).expect("auto").1,
        Device::Cpu
    );
    if gpu().is_none() {
        assert!(Kernels::open(DevicePolicy::Gpu).is_err());
        return;
    }
    let forced = Kernels::open(DevicePolicy::Gpu).expect("gpu");
    let (on_gpu, device) = forced.decode_partial(&layout, &blocks, &qs).expect("gpu");
    assert_eq!(device, Device::Gpu);
    for (a, b) in on_gpu.out.iter().zip(&state.out) {
        assert!((a - b).abs() < 1e-4);
    }
    // More rows per head than the shader keeps: the CPU path answers.
    let many: Vec<f32> = (0..40 * 2 * 64).map(|_| rng.gen_range(-1.0..1.0)).collect();
    let wide = Queries {
        data: &many,
        positions: 40,
        q_heads: 2,
        scale: 0.125,
    };
    assert_eq!(
        forced
            .decode_partial(&layout, &blocks, &wide)
            .expect("wide")
            .1,
        Device::Cpu
    );
}
