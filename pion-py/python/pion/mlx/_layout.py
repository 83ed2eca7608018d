"""What a model's prompt cache is made of, as the store sees it.

A model's cache (``make_prompt_cache(model)``) is a list of mlx-lm cache objects, some
nested in ``CacheList``. Each leaf becomes one *slot*, one manifest layer: per-token
K/V (``KVCache``, ``RotatingKVCache``, ``ChunkedKVCache``) or a recurrent state
(``ArraysCache``). Shapes and dtypes come from a one-token probe forward pass, so no
model family needs special code. The namespace name is derived from everything that
makes K/V incompatible — the model's config, parameter shapes and dtypes (which show
quantisation), a fingerprint of its weights, the slot kinds, the block size and the
storage tier — plus the user's string.
"""

import dataclasses
import hashlib
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

import mlx.core as mx
import numpy as np
from mlx.utils import tree_flatten

from .._pion import PionError

_DTYPES = {mx.float16: "f16", mx.bfloat16: "bf16", mx.float32: "f32"}
_NP_DTYPES = {
    mx.float16: np.float16,
    mx.float32: np.float32,
    mx.uint32: np.uint32,
    mx.int32: np.int32,
    mx.uint8: np.uint8,
    mx.int64: np.int64,
}
_TIER_BITS = {"int8": 8, "q4": 4}


@dataclasses.dataclass
class Slot:
    """One leaf cache: its place in the cache list and its shape."""

    path: Tuple[int, ...]
    """Index into the cache list, then into nested ``CacheList``s."""
    cls: str
    """mlx-lm class name."""
    kind: str
    """``attention``, ``sliding``, ``chunked`` or ``recurrent``."""
    kv_heads: int = 0
    head_dim: int = 0
    window: int = 0
    arrays: Tuple[Tuple[Tuple[int, ...], Any], ...] = ()
    """Recurrent state: (shape, dtype) of every array of the ``ArraysCache``."""

    @property
    def per_token(self) -> bool:
        """Whether the slot holds K/V for every token (not a recurrent state)."""
        return self.kind != "recurrent"

    @property
    def state_bytes(self) -> int:
        """Size of the recurrent state blob."""
        return sum(int(np.prod(s)) * np.dtype(_np_dtype(d)).itemsize for s, d in self.arrays)

    def manifest_layer(self) -> Dict[str, Any]:
        """The slot as a manifest layer."""
        if self.kind == "recurrent":
            return {"kind": "recurrent", "state_bytes": self.state_bytes}
        layer: Dict[str, Any] = {"kind": "attention"}
        if self.kind in ("sliding", "chunked"):
            layer = {"kind": "sliding", "window": self.window}
        layer.update(kv_heads=self.kv_heads, head_dim=self.head_dim)
        return layer


def _np_dtype(dtype: Any) -> Any:
    if dtype == mx.bfloat16:
        raise PionError("bfloat16 recurrent state is not supported")
    try:
        return _NP_DTYPES[dtype]
    except KeyError:
        raise PionError(f"unsupported array dtype {dtype}") from None


def leaves(caches: Sequence[Any], prefix: Tuple[int, ...] = ()) -> List[Tuple[Tuple[int, ...], Any]]:
    """Every leaf cache with its path, ``CacheList``s opened."""
    out = []
    for i, c in enumerate(caches):
        if type(c).__name__ == "CacheList":
            out += leaves(list(c.caches), prefix + (i,))
        else:
            out.append((prefix + (i,), c))
    return out


def leaf_at(caches: Sequence[Any], path: Tuple[int, ...]) -> Any:
    """The leaf cache at ``path``."""
    c: Any = caches[path[0]]
    for i in path[1:]:
        c = c.caches[i]
    return c


def set_leaf(caches: List[Any], path: Tuple[int, ...], leaf: Any) -> None:
    """Replaces the leaf at ``path`` (inside a ``CacheList`` too)."""
    if len(path) == 1:
        caches[path[0]] = leaf
        return
    parent = leaf_at(caches, path[:-1])
    inner = list(parent.caches)
    inner[path[-1]] = leaf
    parent.caches = type(parent.caches)(inner) if isinstance(parent.caches, tuple) else inner


def probe(model: Any) -> Tuple[List[Slot], str]:
    """Runs one token through a fresh cache and describes every slot; also returns
    the K/V dtype name."""
    from mlx_lm.models.cache import make_prompt_cache

    caches = make_prompt_cache(model)
    model(mx.array([[0]]), cache=caches)
    slots: List[Slot] = []
    dtypes = set()
    for path, c in leaves(caches):
        name = type(c).__name__
        if name in ("KVCache", "RotatingKVCache", "ChunkedKVCache"):
            keys, values = c.keys, c.values
            if keys.shape[-1] != values.shape[-1] or keys.shape[1] != values.shape[1]:
                raise PionError(
                    f"layer {path}: keys {keys.shape} and values {values.shape} differ in "
                    "shape; the store keeps K and V of one shape per layer"
                )
            mx.eval(keys)
            dtypes.add(keys.dtype)
            kind = {"KVCache": "attention", "RotatingKVCache": "sliding", "ChunkedKVCache": "chunked"}[name]
            window = c.max_size if name == "RotatingKVCache" else getattr(c, "chunk_size", 0)
            slots.append(Slot(path, name, kind, keys.shape[1], keys.shape[-1], window))
        elif name == "ArraysCache":
            if any(a is None for a in c.cache):
                raise PionError(f"layer {path}: ArraysCache entry not set after a forward pass")
            mx.eval(c.cache)
            arrays = tuple((tuple(a.shape), a.dtype) for a in c.cache)
            for _, d in arrays:
                _np_dtype(d)
            slots.append(Slot(path, name, "recurrent", arrays=arrays))
        else:
            raise PionError(f"layer {path}: unsupported cache class {name}")
    if len(dtypes) > 1:
        raise PionError(f"K/V of several dtypes ({sorted(map(str, dtypes))}); one is supported")
    if not dtypes:
        raise PionError("the model has no attention layer; nothing to key a prefix on")
    dtype = dtypes.pop()
    if dtype not in _DTYPES:
        raise PionError(f"K/V dtype {dtype} is not f16, bf16 or f32")
    return slots, _DTYPES[dtype]


def _config(model: Any) -> Any:
    args = getattr(model, "args", None)
    if args is None:
        return type(model).__module__ + "." + type(model).__name__
    if dataclasses.is_dataclass(args):
        return dataclasses.asdict(args)
    return vars(args)


def fingerprint(model: Any) -> str:
    """A hash of the model's config, parameter names, shapes and dtypes, and a sample
    of its weights (the first 16 values of every parameter)."""
    h = hashlib.sha256()
    h.update(type(model).__module__.encode())
    h.update(json.dumps(_config(model), sort_keys=True, default=str).encode())
    params = tree_flatten(model.parameters())
    for name, p in params:
        h.update(f"{name}:{tuple(p.shape)}:{p.dtype};".encode())
    if params:
        # The first 16 values of every parameter, in one evaluation.
        sample = mx.concatenate([p.reshape(-1)[:16].astype(mx.float32) for _, p in params])
        h.update(np.array(sample).tobytes())
    return h.hexdigest()


def manifest(
    model_fingerprint: str, slots: Sequence[Slot], dtype: str, block_tokens: int, tier: str
) -> Dict[str, Any]:
    """The namespace's manifest."""
    return {
        "model": "mlx-lm",
        "revision": model_fingerprint[:32],
        "block_tokens": block_tokens,
        "dtype": dtype,
        "tier": tier,
        "layers": [s.manifest_layer() for s in slots],
    }


def namespace_name(user: str, model: Any, man: Dict[str, Any], slots: Sequence[Slot]) -> str:
    """``user`` plus a hash of the manifest and the slot classes (and, through the
    manifest's revision, the model fingerprint)."""
    h = hashlib.sha256(json.dumps(man, sort_keys=True).encode())
    h.update(json.dumps([(s.cls, s.path, s.window) for s in slots]).encode())
    model_type = getattr(getattr(model, "args", None), "model_type", type(model).__name__)
    return f"{user}:{model_type}:{h.hexdigest()[:20]}"


def tier_bits(tier: str) -> Optional[int]:
    """Bits of a quantised tier whose bytes are mlx's affine layout (None otherwise)."""
    return _TIER_BITS.get(tier)
