"""Small mlx-lm models with random weights, for tests, the demo and the benchmark.

No weights can be assumed downloadable, so the prompt-cache tests build models from
mlx-lm's own model classes. Two details make them useful for token-equality tests:
weights are drawn from a normal distribution with standard deviation
``scale / sqrt(fan_in)`` (mlx's default initialisation makes a random model repeat one
token whatever its context, which would make equality prove nothing), and the seed is
fixed, so two processes building the same model get the same weights.
"""

import math
from typing import Any, Dict, Optional

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten, tree_unflatten


def _scale_weights(model: nn.Module, seed: int, scale: float) -> None:
    key = mx.random.key(seed)
    params = []
    for i, (name, p) in enumerate(tree_flatten(model.parameters())):
        k = mx.random.fold_in(key, i) if hasattr(mx.random, "fold_in") else mx.random.key(seed * 100_003 + i)
        if p.ndim >= 2:
            fan_in = p.shape[-1]
            p = mx.random.normal(p.shape, key=k).astype(p.dtype) * (scale / math.sqrt(fan_in))
        params.append((name, p))
    model.update(tree_unflatten(params))


def _seeded(seed: int) -> None:
    # Some layers draw parameters at construction (e.g. a GDN's decay): seed those too.
    mx.random.seed(seed)


def _finish(model: nn.Module, seed: int, scale: float, dtype: Any) -> nn.Module:
    _scale_weights(model, seed, scale)
    model.set_dtype(dtype)
    mx.eval(model.parameters())
    model.eval()
    return model


def llama(
    seed: int = 0,
    layers: int = 4,
    hidden: int = 64,
    kv_heads: int = 2,
    head_dim: int = 32,
    vocab: int = 512,
    dtype: Any = mx.float16,
    scale: float = 3.0,
    mlp_ratio: int = 2,
    gqa: int = 2,
) -> nn.Module:
    """A Llama-style model (every layer full attention: ``KVCache``), ``gqa`` query
    heads per KV head."""
    from mlx_lm.models import llama as arch

    args = arch.ModelArgs(
        model_type="llama",
        hidden_size=hidden,
        num_hidden_layers=layers,
        intermediate_size=hidden * mlp_ratio,
        num_attention_heads=kv_heads * gqa,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        rms_norm_eps=1e-5,
        vocab_size=vocab,
        tie_word_embeddings=True,
    )
    _seeded(seed)
    return _finish(arch.Model(args), seed, scale, dtype)


def gemma3(
    seed: int = 0,
    layers: int = 4,
    hidden: int = 64,
    head_dim: int = 32,
    window: int = 64,
    pattern: int = 2,
    vocab: int = 512,
    dtype: Any = mx.float16,
    scale: float = 3.0,
) -> nn.Module:
    """A Gemma-3-style model: sliding-window layers (``RotatingKVCache`` of ``window``)
    with one full-attention layer every ``pattern``."""
    from mlx_lm.models import gemma3_text as arch

    args = arch.ModelArgs(
        model_type="gemma3_text",
        hidden_size=hidden,
        num_hidden_layers=layers,
        intermediate_size=hidden * 2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=head_dim,
        vocab_size=vocab,
        sliding_window=window,
        sliding_window_pattern=pattern,
        query_pre_attn_scalar=head_dim,
    )
    _seeded(seed)
    return _finish(arch.Model(args), seed, scale, dtype)


def qwen3_next(
    seed: int = 0,
    layers: int = 4,
    hidden: int = 64,
    vocab: int = 512,
    dtype: Any = mx.float32,
    scale: float = 3.0,
) -> nn.Module:
    """A Qwen3-Next-style hybrid: gated-delta-net layers (``ArraysCache``: conv and
    recurrent state) with full attention every fourth layer; dense MLPs."""
    from mlx_lm.models import qwen3_next as arch

    args = arch.ModelArgs(
        model_type="qwen3_next",
        hidden_size=hidden,
        num_hidden_layers=layers,
        intermediate_size=hidden * 2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        linear_num_value_heads=2,
        linear_num_key_heads=1,
        linear_key_head_dim=32,
        linear_value_head_dim=32,
        linear_conv_kernel_dim=4,
        num_experts=0,
        num_experts_per_tok=0,
        decoder_sparse_step=1,
        shared_expert_intermediate_size=hidden,
        mlp_only_layers=list(range(layers)),
        moe_intermediate_size=hidden,
        rms_norm_eps=1e-6,
        vocab_size=vocab,
        rope_theta=10000.0,
        partial_rotary_factor=0.5,
        max_position_embeddings=4096,
        full_attention_interval=4,
    )
    _seeded(seed)
    return _finish(arch.Model(args), seed, scale, dtype)


def falcon_h1(
    seed: int = 0,
    layers: int = 2,
    hidden: int = 64,
    vocab: int = 512,
    dtype: Any = mx.float32,
    scale: float = 3.0,
) -> nn.Module:
    """A Falcon-H1-style hybrid: every layer runs attention and a Mamba-2 mixer side by
    side, so its cache is a ``CacheList(ArraysCache, KVCache)`` per layer."""
    from mlx_lm.models import falcon_h1 as arch

    args = arch.ModelArgs(
        hidden_size=hidden,
        num_hidden_layers=layers,
        intermediate_size=hidden * 2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        mamba_d_ssm=64,
        mamba_n_heads=2,
        mamba_d_head=32,
        mamba_d_state=16,
        mamba_chunk_size=64,
        vocab_size=vocab,
    )
    _seeded(seed)
    return _finish(arch.Model(args), seed, scale, dtype)


def llama_1b_layout(
    seed: int = 0, hidden: int = 128, vocab: int = 1024, dtype: Any = mx.float16
) -> nn.Module:
    """Llama-3.2-1B's attention layout (16 layers, 8 KV heads, head_dim 64: 64 MiB of
    f16 K/V at 2,048 tokens) with a narrow hidden size, for the benchmark."""
    return llama(seed, layers=16, hidden=hidden, kv_heads=8, head_dim=64, vocab=vocab, dtype=dtype, mlp_ratio=4)


BUILDERS: Dict[str, Any] = {
    "llama": llama,
    "gemma3": gemma3,
    "qwen3_next": qwen3_next,
    "falcon_h1": falcon_h1,
    "llama_1b_layout": llama_1b_layout,
}


def build(name: str, seed: int = 0, **kwargs: Any) -> nn.Module:
    """One of :data:`BUILDERS` by name (so a second process can build the same model)."""
    return BUILDERS[name](seed=seed, **kwargs)


def greedy(model: nn.Module, prompt: Any, cache: Optional[list] = None, tokens: int = 32, **kw: Any) -> list:
    """``tokens`` greedy tokens after ``prompt`` with mlx-lm's own ``generate_step``
    (a fresh cache when ``cache`` is None)."""
    from mlx_lm.generate import generate_step

    out = []
    for tok, _ in generate_step(mx.array(prompt), model, max_tokens=tokens, prompt_cache=cache, **kw):
        out.append(int(tok))
    return out
