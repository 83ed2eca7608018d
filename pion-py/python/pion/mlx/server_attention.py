"""Attention over the stored prefix on the server: the client keeps only its suffix.

``PionPromptCache(model, ..., attention="server")`` returns caches whose attention
layers hold no prefix K/V at all. Each is a :class:`ServerAttentionCache`: it keeps
the K/V of the tokens after the prefix, and the model's positions (RoPE offsets)
continue after the prefix. In each attention call the layer's queries go to the server
(``ATTEND.QUERY``), which attends them over the stored prefix and returns the output
normalised over the prefix with its log-sum-exp; the client attends the same queries
over its own suffix (``mx.logsumexp`` for the LSE, since mlx's fused attention does not
return it) and merges the two exactly.

What is patched: mlx-lm's model modules call ``scaled_dot_product_attention`` as they
imported it from ``mlx_lm.models.base``. :func:`install` replaces that name in the
module of every submodule of the model with a wrapper that takes the server path for a
``ServerAttentionCache`` and calls the original for every other cache, so other
models and caches in the process are untouched.
"""

import sys
import uuid
import weakref
from typing import Any, List, Optional

import mlx.core as mx
import numpy as np

from .._pion import PionError

__all__ = ["ServerAttentionCache", "install", "server_caches"]

_STEP = 256


class _View:
    """A server-side view of a stored prefix, dropped on the server once no cache
    refers to it."""

    def __init__(self, store: Any, namespace: str, block_ids: List[str], budget: Optional[int] = None):
        self.store, self.namespace, self.budget = store, namespace, budget
        self.name = "pion-py-" + uuid.uuid4().hex
        self.tokens, self.blocks = store.attend_view(namespace, self.name, block_ids)
        weakref.finalize(self, _drop_view, store, namespace, self.name)


def _drop_view(store: Any, namespace: str, name: str) -> None:
    try:
        store.attend_drop(namespace, name)
    except Exception:  # the server may be gone; a view is only memory there
        pass


try:
    from mlx_lm.models.cache import KVCache as _KVCache
except ImportError:  # mlx-lm missing: the module still imports, install() says so
    _KVCache = object


class ServerAttentionCache(_KVCache):  # type: ignore[misc, valid-type]
    """A ``KVCache`` for one attention layer whose prefix lives on the server.

    ``offset`` counts the prefix and the local suffix (the model's positions);
    ``keys``/``values`` hold only the suffix. Attention goes through :meth:`attend`.
    """

    def __init__(self, view: _View, layer: int):
        super().__init__()
        self.view, self.layer = view, layer
        self.prefix = view.tokens
        self.offset = view.tokens
        self.local = 0

    # ---- the local suffix ------------------------------------------------------

    def update_and_fetch(self, keys: mx.array, values: mx.array) -> Any:
        n = keys.shape[2]
        if self.keys is None or self.local + n > self.keys.shape[2]:
            B, H, _, Dk = keys.shape
            grow = ((n + _STEP - 1) // _STEP) * _STEP
            nk = mx.zeros((B, H, grow, Dk), keys.dtype)
            nv = mx.zeros((B, H, grow, values.shape[3]), values.dtype)
            if self.keys is not None:
                nk = mx.concatenate([self.keys[..., : self.local, :], nk], axis=2)
                nv = mx.concatenate([self.values[..., : self.local, :], nv], axis=2)
            self.keys, self.values = nk, nv
        self.keys[..., self.local : self.local + n, :] = keys
        self.values[..., self.local : self.local + n, :] = values
        self.local += n
        self.offset += n
        return self.keys[..., : self.local, :], self.values[..., : self.local, :]

    @property
    def state(self) -> Any:
        if self.keys is None:
            return []
        return self.keys[..., : self.local, :], self.values[..., : self.local, :]

    @state.setter
    def state(self, v: Any) -> None:
        raise PionError("a ServerAttentionCache cannot be restored from a saved state")

    def is_trimmable(self) -> bool:
        return True

    def trim(self, n: int) -> int:
        n = min(self.local, n)
        self.local -= n
        self.offset -= n
        return n

    def to_quantized(self, group_size: int = 64, bits: int = 4) -> Any:
        raise PionError("a ServerAttentionCache keeps its suffix unquantised")

    def nbytes_local(self) -> int:
        """Bytes of K/V this process holds for the layer (the suffix's)."""
        if self.keys is None:
            return 0
        return int(self.keys.nbytes + self.values.nbytes)

    # ---- attention -------------------------------------------------------------

    def attend(self, queries: mx.array, keys: mx.array, values: mx.array, scale: float) -> mx.array:
        """Attention of ``queries`` ``[1, H, L, D]`` over the stored prefix (on the
        server) and the local suffix ``keys``/``values`` (causal), merged exactly."""
        B, H, L, D = queries.shape
        if B != 1:
            raise PionError("server attention serves a batch of one sequence")
        kv_heads, S = keys.shape[1], keys.shape[2]
        group = H // kv_heads
        q = queries.astype(mx.float32)
        qg = q.reshape(1, kv_heads, group, L, D)
        k = keys.astype(mx.float32)[:, :, None]
        v = values.astype(mx.float32)[:, :, None]
        scores = (qg * scale) @ k.swapaxes(-1, -2)  # [1, kv, g, L, S]
        if L > 1:
            visible = mx.arange(S)[None, :] <= (S - L + mx.arange(L))[:, None]
            scores = mx.where(visible, scores, -mx.inf)
        lse_local = mx.logsumexp(scores, axis=-1)
        out_local = mx.softmax(scores, axis=-1) @ v  # [1, kv, g, L, D]
        # [L, H, D] rows for the server (position-major).
        rows = np.ascontiguousarray(np.array(q.reshape(H, L, D).transpose(1, 0, 2)), dtype="<f4")
        out, lse = self.view.store.attend(
            self.view.namespace, self.view.name, self.layer, rows, L, scale, self.view.budget
        )
        out_srv = mx.array(out).reshape(L, H, D).transpose(1, 0, 2).reshape(1, kv_heads, group, L, D)
        lse_srv = mx.array(lse).reshape(L, H).transpose(1, 0).reshape(1, kv_heads, group, L)
        top = mx.maximum(lse_local, lse_srv)
        w_local = mx.exp(lse_local - top)
        w_srv = mx.where(lse_srv == -mx.inf, 0.0, mx.exp(lse_srv - top))
        total = w_local + w_srv
        out = (w_local[..., None] * out_local + w_srv[..., None] * out_srv) / total[..., None]
        return out.reshape(1, H, L, D).astype(queries.dtype)


def _wrap(original: Any) -> Any:
    def scaled_dot_product_attention(queries, keys, values, cache, scale, mask, sinks=None):
        if isinstance(cache, ServerAttentionCache):
            if sinks is not None:
                raise PionError("server attention does not take attention sinks")
            return cache.attend(queries, keys, values, scale)
        if sinks is None:
            return original(queries, keys, values, cache=cache, scale=scale, mask=mask)
        return original(queries, keys, values, cache=cache, scale=scale, mask=mask, sinks=sinks)

    scaled_dot_product_attention._pion_original = original  # type: ignore[attr-defined]
    return scaled_dot_product_attention


def install(model: Any) -> List[str]:
    """Routes the attention of ``model``'s layers through :class:`ServerAttentionCache`
    where their cache is one; returns the modules patched (each once)."""
    if _KVCache is object:
        raise PionError("server attention needs mlx-lm")
    patched = []
    for m in model.modules():
        mod = sys.modules.get(type(m).__module__)
        fn = getattr(mod, "scaled_dot_product_attention", None)
        if fn is None or hasattr(fn, "_pion_original"):
            continue
        setattr(mod, "scaled_dot_product_attention", _wrap(fn))
        patched.append(mod.__name__)
    return patched


def server_caches(
    model: Any, store: Any, namespace: str, block_ids: List[str], tokens: int, budget: Optional[int] = None
) -> List[Any]:
    """The model's cache list for a prefix of ``tokens`` stored as ``block_ids``, every
    attention layer a :class:`ServerAttentionCache` of one shared view (attending only
    the blocks the server's selector keeps within ``budget`` tokens, when given)."""
    view = _View(store, namespace, block_ids, budget)
    if view.tokens != tokens:
        raise PionError(f"the view covers {view.tokens} tokens, expected {tokens}")
    return [ServerAttentionCache(view, i) for i in range(len(model.layers))]


def local_kv_bytes(caches: List[Any]) -> Optional[int]:
    """Bytes of K/V a cache list holds in this process (keys and values of every
    layer), for comparing the two modes."""
    total = 0
    for c in caches:
        if isinstance(c, ServerAttentionCache):
            total += c.nbytes_local()
        elif getattr(c, "keys", None) is not None:
            total += int(c.keys.nbytes + c.values.nbytes)
    return total
