//! The wgpu side of the GPU paths: opening an adapter, the pipelines, packing stored
//! blocks into buffers, dispatching and reading results back.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use wgpu::util::DeviceExt;

use crate::attend::Queries;
use crate::error::{refuse, KernelError};
use crate::layout::{BlockKv, KvLayout, RowFormat};
use crate::quant::{self, DType, Role, Shape, Tier};
use crate::select::{Score, Selection};
use crate::state::{merge_states, AttnState};
use crate::summary::BlockSummary;

/// The largest storage binding the kernels ask for (lavapipe's limit).
const BINDING_CAP: u64 = 128 << 20;

/// Query rows per KV head the attention shader keeps in workgroup memory; calls with
/// more (positions × GQA group) take the CPU path.
const MAX_ROWS: usize = 32;

const COMMON: &str = include_str!("shaders/common.wgsl");

/// Each kernel's source (the shared declarations first) and entry point.
pub(crate) const SHADERS: [(&str, &str); 6] = [
    (include_str!("shaders/attend.wgsl"), "attend"),
    (include_str!("shaders/merge.wgsl"), "merge"),
    (include_str!("shaders/summary.wgsl"), "summarise"),
    (include_str!("shaders/score.wgsl"), "score"),
    (include_str!("shaders/dequant.wgsl"), "dequantise"),
    (include_str!("shaders/quant.wgsl"), "quantise"),
];

/// A kernel's full WGSL source.
pub(crate) fn source(kernel: &str) -> String {
    format!("{COMMON}\n{kernel}")
}

/// The uniform every shader reads (`Params` in common.wgsl).
#[derive(Clone, Copy, Default)]
struct Params {
    kv_heads: u32,
    head_dim: u32,
    q_heads: u32,
    positions: u32,
    group: u32,
    rows: u32,
    max_list: u32,
    tier: u32,
    dtype: u32,
    code_row_bytes: u32,
    param_row_bytes: u32,
    score_mode: u32,
    blocks: u32,
    tensor_rows: u32,
}

impl Params {
    fn for_layout(layout: &KvLayout) -> Params {
        let (tier, code_row_bytes, param_row_bytes) = match layout.row_format() {
            RowFormat::Plain(_) => (0, 0, 0),
            RowFormat::Affine {
                bits,
                code_bytes,
                param_bytes,
                ..
            } => (
                if bits == 8 { 1 } else { 2 },
                code_bytes as u32,
                param_bytes as u32,
            ),
        };
        Params {
            kv_heads: layout.kv_heads as u32,
            head_dim: layout.head_dim as u32,
            tier,
            dtype: match layout.dtype {
                DType::F16 => 0,
                DType::BF16 => 1,
                DType::F32 => 2,
            },
            code_row_bytes,
            param_row_bytes,
            ..Params::default()
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let words = [
            self.kv_heads,
            self.head_dim,
            self.q_heads,
            self.positions,
            self.group,
            self.rows,
            self.max_list,
            self.tier,
            self.dtype,
            self.code_row_bytes,
            self.param_row_bytes,
            self.score_mode,
            self.blocks,
            self.tensor_rows,
            0,
            0,
        ];
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

struct Pipelines {
    attend: wgpu::ComputePipeline,
    merge: wgpu::ComputePipeline,
    summarise: wgpu::ComputePipeline,
    score: wgpu::ComputePipeline,
    dequantise: wgpu::ComputePipeline,
    quantise: wgpu::ComputePipeline,
}

/// An opened adapter with the kernels' pipelines.
pub struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    max_binding: u64,
    pipelines: Pipelines,
    /// The last error the device reported outside an error scope.
    uncaptured: Arc<Mutex<Option<String>>>,
}

fn u32_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Little-endian f32 values read back from a device buffer.
fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Stored blocks packed for the shaders: every tensor at a word boundary.
struct Packed {
    kv: Vec<u8>,
    /// Four words per block: tokens, K's word offset, V's word offset, 0.
    table: Vec<u32>,
}

fn pack(blocks: &[BlockKv<'_>]) -> Result<Packed, KernelError> {
    let mut kv = Vec::new();
    let mut table = Vec::with_capacity(blocks.len() * 4);
    for b in blocks {
        let mut offsets = [0u32; 2];
        for (o, bytes) in offsets.iter_mut().zip([b.keys, b.values]) {
            *o = u32::try_from(kv.len() / 4)
                .map_err(|_| KernelError::new("blocks too large for a GPU buffer"))?;
            kv.extend_from_slice(bytes);
            kv.resize(kv.len().div_ceil(4) * 4, 0);
        }
        let tokens = u32::try_from(b.tokens).map_err(|_| KernelError::new("block too long"))?;
        table.extend([tokens, offsets[0], offsets[1], 0]);
    }
    Ok(Packed { kv, table })
}

impl Gpu {
    /// Opens the best adapter wgpu finds (honouring `WGPU_BACKEND` and the other
    /// `WGPU_*` variables), `None` when there is none.
    pub fn open() -> Result<Option<Gpu>, KernelError> {
        Gpu::open_adapter(true)
    }

    /// [`Gpu::open`] of a hardware adapter only: `None` when the best one is a
    /// software rasteriser (lavapipe, WARP), which is never faster than the CPU paths,
    /// before any device or pipeline is made for it.
    pub fn open_hardware() -> Result<Option<Gpu>, KernelError> {
        Gpu::open_adapter(false)
    }

    fn open_adapter(software: bool) -> Result<Option<Gpu>, KernelError> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let options = wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: None,
            apply_limit_buckets: false,
        };
        let Ok(adapter) = pollster::block_on(instance.request_adapter(&options)) else {
            return Ok(None);
        };
        if !software && adapter.get_info().device_type == wgpu::DeviceType::Cpu {
            return Ok(None);
        }
        let mut limits = adapter.limits();
        let max_binding = limits.max_storage_buffer_binding_size.min(BINDING_CAP);
        limits.max_storage_buffer_binding_size = max_binding;
        limits.max_buffer_size = limits.max_buffer_size.min(BINDING_CAP.max(max_binding));
        let f16_in_f32 = adapter
            .get_downlevel_capabilities()
            .flags
            .contains(wgpu::DownlevelFlags::SHADER_F16_IN_F32);
        if !f16_in_f32
            || limits.max_storage_buffers_per_shader_stage < 6
            || limits.max_compute_workgroup_size_x < 64
        {
            return Ok(None);
        }
        let descriptor = wgpu::DeviceDescriptor {
            label: Some("pion kernels"),
            required_limits: limits,
            ..Default::default()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&descriptor))
            .map_err(|e| KernelError::new(format!("cannot open the GPU: {e}")))?;
        let uncaptured = Arc::new(Mutex::new(None));
        let sink = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut slot) = sink.lock() {
                *slot = Some(e.to_string());
            }
        }));
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let pipeline = |(kernel, entry): (&str, &str)| {
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(entry),
                source: wgpu::ShaderSource::Wgsl(Cow::Owned(source(kernel))),
            });
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: None,
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        let [attend, merge, summarise, score, dequantise, quantise] = SHADERS.map(pipeline);
        if let Some(e) = pollster::block_on(scope.pop()) {
            refuse!("the GPU refused the kernels: {e}");
        }
        Ok(Some(Gpu {
            device,
            queue,
            info: adapter.get_info(),
            max_binding,
            pipelines: Pipelines {
                attend,
                merge,
                summarise,
                score,
                dequantise,
                quantise,
            },
            uncaptured,
        }))
    }

    /// Whether the adapter is a software one (lavapipe, WARP): correct, never faster
    /// than the CPU paths.
    pub fn is_software(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// The adapter's name and backend.
    pub fn describe(&self) -> String {
        format!("{}, {:?}", self.info.name, self.info.backend)
    }

    fn storage(&self, label: &str, bytes: &[u8]) -> wgpu::Buffer {
        // A binding is never empty.
        let contents: Cow<'_, [u8]> = if bytes.is_empty() {
            Cow::Owned(vec![0; 16])
        } else {
            Cow::Borrowed(bytes)
        };
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: &contents,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            })
    }

    fn output(&self, label: &str, bytes: u64) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes.max(16),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        })
    }

    fn uniform(&self, params: &Params) -> wgpu::Buffer {
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("params"),
                contents: &params.bytes(),
                usage: wgpu::BufferUsages::UNIFORM,
            })
    }

    fn bind(
        &self,
        pipeline: &wgpu::ComputePipeline,
        entries: &[(u32, &wgpu::Buffer)],
    ) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry<'_>> = entries
            .iter()
            .map(|&(binding, buffer)| wgpu::BindGroupEntry {
                binding,
                resource: buffer.as_entire_binding(),
            })
            .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        })
    }

    /// Runs `passes` (pipeline, bind group, workgroups) in order, then reads `bytes`
    /// of `result` back.
    fn run(
        &self,
        passes: &[(&wgpu::ComputePipeline, &wgpu::BindGroup, [u32; 3])],
        result: &wgpu::Buffer,
        bytes: u64,
    ) -> Result<Vec<u8>, KernelError> {
        let bytes = bytes.max(4);
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let readback = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            for (pipeline, group, [x, y, z]) in passes {
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, *group, &[]);
                pass.dispatch_workgroups(*x, *y, *z);
            }
        }
        encoder.copy_buffer_to_buffer(result, 0, &readback, 0, bytes);
        self.queue.submit([encoder.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        readback.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| KernelError::new(format!("GPU: {e}")))?;
        if let Some(e) = pollster::block_on(scope.pop()) {
            refuse!("GPU: {e}");
        }
        if let Ok(Some(e)) = self.uncaptured.lock().map(|mut s| s.take()) {
            refuse!("GPU: {e}");
        }
        match rx.recv() {
            Ok(Ok(())) => {}
            _ => refuse!("GPU: the result could not be read back"),
        }
        let view = readback
            .get_mapped_range(..)
            .map_err(|e| KernelError::new(format!("GPU: {e}")))?;
        Ok(view.to_vec())
    }

    /// Attention of each KV head's rows over its selected blocks (every block for a
    /// dense call); `None` when the call has more rows per head than the shader keeps
    /// (the caller runs the CPU path).
    pub fn attend(
        &self,
        layout: &KvLayout,
        blocks: &[BlockKv<'_>],
        selection: &Selection,
        queries: &Queries<'_>,
    ) -> Result<Option<AttnState>, KernelError> {
        let group = queries.check(layout)?;
        for b in blocks {
            layout.check(b)?;
        }
        if selection.per_head.len() != layout.kv_heads {
            refuse!(
                "a selection for {} KV heads, the layout has {}",
                selection.per_head.len(),
                layout.kv_heads
            );
        }
        if let Some(&bad) = selection
            .per_head
            .iter()
            .flatten()
            .find(|&&i| i >= blocks.len())
        {
            refuse!("block index {bad} out of range: {} blocks", blocks.len());
        }
        let rows = queries.positions * group;
        if rows > MAX_ROWS {
            return Ok(None);
        }
        let d = layout.head_dim;
        // Runs of blocks whose K/V, and whose partial states, fit a binding.
        let part_bytes = (layout.kv_heads * rows * d * 4) as u64;
        let max_blocks = (self.max_binding / part_bytes.max(1)).clamp(1, 65_535) as usize;
        let mut states = Vec::new();
        let mut start = 0;
        while start < blocks.len() || (start == 0 && states.is_empty()) {
            let mut end = start;
            let mut bytes = 0u64;
            while end < blocks.len() && end - start < max_blocks {
                let b = &blocks[end];
                let size = (b.keys.len().div_ceil(4) + b.values.len().div_ceil(4)) as u64 * 4;
                if bytes + size > self.max_binding && end > start {
                    break;
                }
                if size > self.max_binding {
                    refuse!(
                        "a block of {size} bytes exceeds the GPU's {} byte binding",
                        self.max_binding
                    );
                }
                bytes += size;
                end += 1;
            }
            let lists: Vec<Vec<u32>> = selection
                .per_head
                .iter()
                .map(|l| {
                    l.iter()
                        .filter(|&&i| (start..end).contains(&i))
                        .map(|&i| (i - start) as u32)
                        .collect()
                })
                .collect();
            states.push(self.attend_run(layout, &blocks[start..end], &lists, queries, group)?);
            if end == blocks.len() {
                break;
            }
            start = end;
        }
        let refs: Vec<&AttnState> = states.iter().collect();
        merge_states(&refs).map(Some)
    }

    fn attend_run(
        &self,
        layout: &KvLayout,
        blocks: &[BlockKv<'_>],
        lists: &[Vec<u32>],
        queries: &Queries<'_>,
        group: usize,
    ) -> Result<AttnState, KernelError> {
        let d = layout.head_dim;
        let rows = queries.positions * group;
        let max_list = lists.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let packed = pack(blocks)?;
        let mut flat = vec![0u32; layout.kv_heads * max_list];
        for (h, l) in lists.iter().enumerate() {
            flat[h * max_list..h * max_list + l.len()].copy_from_slice(l);
        }
        let counts: Vec<u32> = lists.iter().map(|l| l.len() as u32).collect();
        let scaled: Vec<f32> = queries.data.iter().map(|x| x * queries.scale).collect();
        let mut params = Params::for_layout(layout);
        params.q_heads = queries.q_heads as u32;
        params.positions = queries.positions as u32;
        params.group = group as u32;
        params.rows = rows as u32;
        params.max_list = max_list as u32;
        params.blocks = blocks.len() as u32;
        let kv = self.storage("kv", &packed.kv);
        let table = self.storage("blocks", &u32_bytes(&packed.table));
        let lists_buf = self.storage("lists", &u32_bytes(&flat));
        let counts_buf = self.storage("counts", &u32_bytes(&counts));
        let q = self.storage("queries", &f32_bytes(&scaled));
        let parts = (layout.kv_heads * max_list * rows) as u64;
        let part_out = self.output("part_out", parts * d as u64 * 4);
        let part_lse = self.output("part_lse", parts * 4);
        let out_rows = (queries.positions * queries.q_heads) as u64;
        let merged_bytes = out_rows * (d as u64 + 1) * 4;
        let merged = self.output("merged", merged_bytes);
        let uniform = self.uniform(&params);
        let attend = self.bind(
            &self.pipelines.attend,
            &[
                (0, &kv),
                (1, &table),
                (2, &lists_buf),
                (3, &counts_buf),
                (4, &q),
                (5, &part_out),
                (6, &part_lse),
                (7, &uniform),
            ],
        );
        let merge = self.bind(
            &self.pipelines.merge,
            &[
                (3, &counts_buf),
                (4, &part_out),
                (5, &part_lse),
                (6, &merged),
                (7, &uniform),
            ],
        );
        let merge_groups = (layout.kv_heads * rows).div_ceil(64) as u32;
        let bytes = self.run(
            &[
                (
                    &self.pipelines.attend,
                    &attend,
                    [max_list as u32, layout.kv_heads as u32, 1],
                ),
                (&self.pipelines.merge, &merge, [merge_groups, 1, 1]),
            ],
            &merged,
            merged_bytes,
        )?;
        let floats = f32s(&bytes);
        let split = out_rows as usize * d;
        Ok(AttnState {
            head_dim: d,
            out: floats[..split].to_vec(),
            lse: floats[split..split + out_rows as usize].to_vec(),
        })
    }

    /// [`crate::block_summary`] of every block, on the GPU.
    pub fn block_summaries(
        &self,
        layout: &KvLayout,
        blocks: &[BlockKv<'_>],
    ) -> Result<Vec<BlockSummary>, KernelError> {
        for b in blocks {
            layout.check(b)?;
        }
        if blocks.is_empty() {
            return Ok(Vec::new());
        }
        let packed = pack(blocks)?;
        if packed.kv.len() as u64 > self.max_binding {
            refuse!("blocks exceed the GPU's binding");
        }
        let d = layout.head_dim;
        let mut params = Params::for_layout(layout);
        params.blocks = blocks.len() as u32;
        let kv = self.storage("kv", &packed.kv);
        let table = self.storage("blocks", &u32_bytes(&packed.table));
        let per_block = layout.kv_heads * 3 * d;
        let out_bytes = (blocks.len() * per_block * 4) as u64;
        let out = self.output("summaries", out_bytes);
        let uniform = self.uniform(&params);
        let group = self.bind(
            &self.pipelines.summarise,
            &[(0, &kv), (1, &table), (5, &out), (7, &uniform)],
        );
        let invocations = blocks.len() * layout.kv_heads * d;
        let bytes = self.run(
            &[(
                &self.pipelines.summarise,
                &group,
                [invocations.div_ceil(64) as u32, 1, 1],
            )],
            &out,
            out_bytes,
        )?;
        let floats = f32s(&bytes);
        Ok(blocks
            .iter()
            .enumerate()
            .map(|(i, b)| BlockSummary {
                tokens: b.tokens,
                head_dim: d,
                data: floats[i * per_block..(i + 1) * per_block].to_vec(),
            })
            .collect())
    }

    /// Each KV head's score of every block (`[kv_heads][blocks]`) for the queries, on
    /// the GPU.
    pub fn block_scores(
        &self,
        layout: &KvLayout,
        summaries: &[&BlockSummary],
        queries: &Queries<'_>,
        score: Score,
    ) -> Result<Option<Vec<Vec<f32>>>, KernelError> {
        let group = queries.check(layout)?;
        if summaries
            .iter()
            .any(|s| s.head_dim != layout.head_dim || s.kv_heads() != layout.kv_heads)
        {
            refuse!("a summary is not of this layout");
        }
        if summaries.is_empty() {
            return Ok(Some(vec![Vec::new(); layout.kv_heads]));
        }
        let data: Vec<f32> = summaries
            .iter()
            .flat_map(|s| s.data.iter().copied())
            .collect();
        if data.len() as u64 * 4 > self.max_binding {
            return Ok(None);
        }
        let scaled: Vec<f32> = queries.data.iter().map(|x| x * queries.scale).collect();
        let mut params = Params::for_layout(layout);
        params.q_heads = queries.q_heads as u32;
        params.positions = queries.positions as u32;
        params.group = group as u32;
        params.rows = (queries.positions * group) as u32;
        params.blocks = summaries.len() as u32;
        params.score_mode = match score {
            Score::Quest => 0,
            Score::MeanKey => 1,
        };
        let sums = self.storage("summaries", &f32_bytes(&data));
        let q = self.storage("queries", &f32_bytes(&scaled));
        let n = layout.kv_heads * summaries.len();
        let out = self.output("scores", (n * 4) as u64);
        let uniform = self.uniform(&params);
        let group = self.bind(
            &self.pipelines.score,
            &[(2, &sums), (4, &q), (5, &out), (7, &uniform)],
        );
        let bytes = self.run(
            &[(&self.pipelines.score, &group, [n.div_ceil(64) as u32, 1, 1])],
            &out,
            (n * 4) as u64,
        )?;
        let floats = f32s(&bytes);
        Ok(Some(
            floats[..n]
                .chunks(summaries.len())
                .map(<[f32]>::to_vec)
                .collect(),
        ))
    }

    /// [`quant::decode`] of an int8 or q4 tensor, on the GPU: the same bytes.
    pub fn dequantise(
        &self,
        tier: Tier,
        dtype: DType,
        shape: Shape,
        encoded: &[u8],
    ) -> Result<Vec<u8>, KernelError> {
        if !matches!(tier, Tier::Int8 | Tier::Q4) {
            refuse!(
                "the GPU dequantises the int8 and q4 tiers, not {}",
                tier.name()
            );
        }
        let layout = KvLayout::new(1, shape.head_dim, dtype, tier)?;
        let rows = shape.heads * shape.tokens;
        let want = quant::encoded_len(tier, dtype, shape, Role::Keys);
        if want == 0 && rows > 0 || encoded.len() != want {
            refuse!(
                "expected {want} bytes of {} for shape {shape}, got {}",
                tier.name(),
                encoded.len()
            );
        }
        if encoded.len() as u64 > self.max_binding {
            refuse!("the tensor exceeds the GPU's binding");
        }
        let elements = rows * shape.head_dim;
        if elements == 0 {
            return Ok(Vec::new());
        }
        let mut params = Params::for_layout(&layout);
        params.tensor_rows = rows as u32;
        let out_bytes = (elements * dtype.size()) as u64;
        let kv = self.storage("tensor", encoded);
        let out = self.output("decoded", out_bytes);
        let uniform = self.uniform(&params);
        let group = self.bind(
            &self.pipelines.dequantise,
            &[(0, &kv), (5, &out), (7, &uniform)],
        );
        let words = if dtype == DType::F32 {
            elements
        } else {
            elements / 2
        };
        let mut bytes = self.run(
            &[(
                &self.pipelines.dequantise,
                &group,
                [words.div_ceil(64) as u32, 1, 1],
            )],
            &out,
            out_bytes,
        )?;
        bytes.truncate(out_bytes as usize);
        Ok(bytes)
    }

    /// [`quant::encode`] of a tensor into the int8 or q4 tier, on the GPU: the codes
    /// and the f32 scales and biases are computed by the shader, the parameters then
    /// rounded to the dtype as the store rounds them. The bytes equal the store's
    /// where the device divides and rounds in IEEE f32 (lavapipe does; WGSL allows a
    /// division 2.5 ulp off, which can move a code by one).
    pub fn quantise(
        &self,
        tier: Tier,
        dtype: DType,
        shape: Shape,
        input: &[u8],
    ) -> Result<Vec<u8>, KernelError> {
        if !matches!(tier, Tier::Int8 | Tier::Q4) {
            refuse!(
                "the GPU quantises to the int8 and q4 tiers, not {}",
                tier.name()
            );
        }
        KvLayout::new(1, shape.head_dim, dtype, tier)?;
        let rows = shape.heads * shape.tokens;
        let elements = rows * shape.head_dim;
        if input.len() != elements * dtype.size() {
            refuse!(
                "expected {} bytes of {} for shape {shape}, got {}",
                elements * dtype.size(),
                dtype.name(),
                input.len()
            );
        }
        if input.len() as u64 > self.max_binding {
            refuse!("the tensor exceeds the GPU's binding");
        }
        if elements == 0 {
            return Ok(Vec::new());
        }
        let groups = elements / 32;
        let code_words = groups * if tier == Tier::Q4 { 4 } else { 8 };
        let mut params = Params::for_layout(&KvLayout::new(1, shape.head_dim, dtype, tier)?);
        params.tensor_rows = rows as u32;
        let mut padded = input.to_vec();
        padded.resize(input.len().div_ceil(4) * 4, 0);
        let kv = self.storage("tensor", &padded);
        let out_bytes = ((code_words + 2 * groups) * 4) as u64;
        let out = self.output("quantised", out_bytes);
        let uniform = self.uniform(&params);
        let group = self.bind(
            &self.pipelines.quantise,
            &[(0, &kv), (5, &out), (7, &uniform)],
        );
        let bytes = self.run(
            &[(
                &self.pipelines.quantise,
                &group,
                [groups.div_ceil(64) as u32, 1, 1],
            )],
            &out,
            out_bytes,
        )?;
        let floats = |at: usize| f32s(&bytes[at..at + 4 * groups]);
        let (scales, biases) = (floats(code_words * 4), floats((code_words + groups) * 4));
        let mut encoded = bytes[..code_words * 4].to_vec();
        encoded.extend(quant::from_f32(dtype, &scales));
        encoded.extend(quant::from_f32(dtype, &biases));
        Ok(encoded)
    }
}
