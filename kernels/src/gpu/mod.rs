//! The GPU paths: the WGSL shaders in `shaders/` run through wgpu on whatever adapter
//! the machine has (Vulkan, Metal, DX12; Mesa's lavapipe runs them on a CPU). The
//! kernels compute what the CPU paths do, over the same stored bytes, uploaded as they
//! are: dequantisation happens in the shaders' loads.
//!
//! Limits come from the adapter: the device is opened with the adapter's own limits,
//! storage bindings capped at 128 MiB (lavapipe's cap, and a size every backend
//! takes); a call whose blocks exceed a binding is split into runs of blocks whose
//! states merge exactly. No subgroup size is assumed (workgroups are 64 invocations
//! that share workgroup memory only), and f16 is read with `unpack2x16float`, so no
//! optional feature is needed.
//!
//! [`Kernels`] is what callers hold: it opens an adapter when asked to, and sends each
//! call to the GPU or the CPU path.

mod host;
#[cfg(test)]
mod tests;

use crate::attend::{decode_partial, sparse_partial, Queries};
use crate::error::KernelError;
use crate::layout::{BlockKv, KvLayout};
use crate::select::{block_select, SelectOptions, Selection};
use crate::state::AttnState;
use crate::summary::BlockSummary;

pub use host::Gpu;

/// Where a kernel ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// The optimised CPU path.
    Cpu,
    /// A wgpu adapter.
    Gpu,
}

impl Device {
    /// `cpu` or `gpu`.
    pub fn name(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Gpu => "gpu",
        }
    }
}

/// Which device a [`Kernels`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DevicePolicy {
    /// Only the CPU paths.
    Cpu,
    /// A hardware adapter (not a software one such as lavapipe) when there is one, for
    /// calls large enough to pay for the upload; the CPU otherwise.
    Auto,
    /// Any adapter, software ones included, for every call it can run (the CPU path
    /// only for calls the shaders do not take): what the tests use to check the
    /// shaders.
    Gpu,
}

impl DevicePolicy {
    /// Every policy.
    pub const ALL: [DevicePolicy; 3] = [DevicePolicy::Auto, DevicePolicy::Cpu, DevicePolicy::Gpu];

    /// Its name, as a configuration takes it (`auto`, `cpu`, `gpu`).
    pub fn name(self) -> &'static str {
        match self {
            DevicePolicy::Cpu => "cpu",
            DevicePolicy::Auto => "auto",
            DevicePolicy::Gpu => "gpu",
        }
    }

    /// The policy `name` names, in any case.
    pub fn parse(name: &str) -> Option<DevicePolicy> {
        DevicePolicy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }
}

/// Calls reading fewer stored bytes than this run on the CPU under
/// [`DevicePolicy::Auto`]: below it the upload and the round trip cost more than the
/// CPU's whole computation.
pub const GPU_MIN_BYTES: usize = 8 << 20;

/// The kernels with a device choice: the entry point callers hold.
pub struct Kernels {
    gpu: Option<Gpu>,
    policy: DevicePolicy,
}

impl Kernels {
    /// CPU paths only.
    pub fn cpu() -> Kernels {
        Kernels {
            gpu: None,
            policy: DevicePolicy::Cpu,
        }
    }

    /// Kernels under `policy`: [`DevicePolicy::Auto`] opens a hardware adapter if
    /// there is one (none is not an error), [`DevicePolicy::Gpu`] any adapter and
    /// fails when there is none.
    pub fn open(policy: DevicePolicy) -> Result<Kernels, KernelError> {
        let gpu = match policy {
            DevicePolicy::Cpu => None,
            DevicePolicy::Auto => Gpu::open_hardware()?,
            DevicePolicy::Gpu => {
                Some(Gpu::open()?.ok_or_else(|| KernelError::new("no GPU adapter"))?)
            }
        };
        Ok(Kernels { gpu, policy })
    }

    /// The adapter in use, if any.
    pub fn gpu(&self) -> Option<&Gpu> {
        self.gpu.as_ref()
    }

    /// What the kernels run on, for INFO: `cpu`, or `gpu (<adapter>, <backend>)`.
    pub fn describe(&self) -> String {
        match &self.gpu {
            Some(g) => format!("gpu ({})", g.describe()),
            None => "cpu".into(),
        }
    }

    fn gpu_for(&self, bytes: usize) -> Option<&Gpu> {
        let gpu = self.gpu.as_ref()?;
        match self.policy {
            DevicePolicy::Gpu => Some(gpu),
            DevicePolicy::Auto if bytes >= GPU_MIN_BYTES => Some(gpu),
            _ => None,
        }
    }

    /// [`decode_partial`] on the chosen device.
    pub fn decode_partial(
        &self,
        layout: &KvLayout,
        blocks: &[BlockKv<'_>],
        queries: &Queries<'_>,
    ) -> Result<(AttnState, Device), KernelError> {
        if let Some(gpu) = self.gpu_for(stored_bytes(blocks, None)) {
            let selection = Selection::all(layout.kv_heads, blocks.len());
            if let Some(state) = gpu.attend(layout, blocks, &selection, queries)? {
                return Ok((state, Device::Gpu));
            }
        }
        Ok((decode_partial(layout, blocks, queries)?, Device::Cpu))
    }

    /// [`sparse_partial`] on the chosen device.
    pub fn sparse_partial(
        &self,
        layout: &KvLayout,
        blocks: &[BlockKv<'_>],
        selection: &Selection,
        queries: &Queries<'_>,
    ) -> Result<(AttnState, Device), KernelError> {
        if let Some(gpu) = self.gpu_for(stored_bytes(blocks, Some(selection))) {
            if let Some(state) = gpu.attend(layout, blocks, selection, queries)? {
                return Ok((state, Device::Gpu));
            }
        }
        Ok((
            sparse_partial(layout, blocks, selection, queries)?,
            Device::Cpu,
        ))
    }

    /// [`block_select`]: scores on the chosen device, the ranking on the CPU.
    pub fn block_select(
        &self,
        layout: &KvLayout,
        summaries: &[&BlockSummary],
        queries: &Queries<'_>,
        options: &SelectOptions,
    ) -> Result<(Selection, Device), KernelError> {
        // Summaries are a few floats per block: only a policy that sends everything
        // to the GPU scores them there.
        if let (Some(gpu), DevicePolicy::Gpu) = (&self.gpu, self.policy) {
            if let Some(scores) = gpu.block_scores(layout, summaries, queries, options.score)? {
                let selection = crate::select::choose(summaries, &scores, options);
                return Ok((selection, Device::Gpu));
            }
        }
        Ok((
            block_select(layout, summaries, queries, options)?,
            Device::Cpu,
        ))
    }
}

/// Stored bytes a call reads: of every block, or of each head's selected blocks.
fn stored_bytes(blocks: &[BlockKv<'_>], selection: Option<&Selection>) -> usize {
    let size = |b: &BlockKv<'_>| b.keys.len() + b.values.len();
    match selection {
        None => blocks.iter().map(size).sum(),
        Some(s) => {
            let heads = s.per_head.len().max(1);
            s.per_head
                .iter()
                .flatten()
                .filter_map(|&i| blocks.get(i))
                .map(size)
                .sum::<usize>()
                / heads
        }
    }
}
