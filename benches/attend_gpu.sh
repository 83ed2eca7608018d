#!/usr/bin/env bash
# Dense and sparse decode attention on this machine's GPU (wgpu: Vulkan, Metal, DX12),
# beside the same run on its CPU: one command that builds the benchmark and runs both.
# For a machine with an accelerator; the test suite never needs one.
#
# Usage: benches/attend_gpu.sh [--tokens 32768,65536,131072] [--reps 20]
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/pion-target}"
cargo build -q --release -p pion-benches --bin attend_bench
bin="$CARGO_TARGET_DIR/release/attend_bench"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,memory.total,clocks.max.memory --format=csv || true
echo "== GPU"
"$bin" --device gpu --tiers f16,int8,q4 "$@"
echo "== CPU"
"$bin" --device cpu --tiers f16,int8,q4 "$@"
