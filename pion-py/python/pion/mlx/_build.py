"""Cache objects built directly from stored arrays.

Nothing here goes through an mlx-lm file format (mlx-lm 0.32.2 changed
``save_prompt_cache``'s layout): the objects come from ``make_prompt_cache(model)``
and get their arrays and counters set. Caches whose buffers are not simply "every
token in order" — ``RotatingKVCache``'s ring and ``ChunkedKVCache``'s moving start —
are rebuilt by a *shadow replay*: the installed mlx-lm's own ``update_and_fetch`` runs
over tiny arrays that hold token positions instead of K/V, with the chunks a cold
prefill would use, and the real rows are then gathered into the positions it left.
The result is what a cold prefill would have left, whatever mlx-lm version runs.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

import mlx.core as mx
import numpy as np

from ._layout import Slot, _np_dtype

_NP_RAW = {"f16": np.float16, "bf16": np.uint16, "f32": np.float32}


def schedule(n: int, step: int, block_tokens: int, recurrent: bool, start: int = 0) -> List[int]:
    """Where prefill chunks end, from ``start`` to ``n``: every ``step`` tokens (as
    mlx-lm chunks a prompt), and, for models with recurrent state, also at the last
    block boundary, so that the state there can be stored for later extensions."""
    cuts = set(range(start + step, n, step))
    if recurrent:
        last_full = n // block_tokens * block_tokens
        if start < last_full < n:
            cuts.add(last_full)
    cuts.add(n)
    return sorted(c for c in cuts if c > start)


def to_np(a: mx.array) -> np.ndarray:
    """An mlx array's elements as numpy (bfloat16 as its raw 16-bit words)."""
    if a.dtype == mx.bfloat16:
        a = a.view(mx.uint16)
    return np.array(a, copy=False)


# ---- recurrent state ---------------------------------------------------------------


def encode_state(slot: Slot, arrays: Sequence[mx.array]) -> bytes:
    """An ``ArraysCache``'s arrays as one blob (each array's elements, in order)."""
    parts = []
    for a, (shape, dtype) in zip(arrays, slot.arrays):
        if tuple(a.shape) != shape or a.dtype != dtype:
            raise ValueError(f"state array {a.shape} {a.dtype}, expected {shape} {dtype}")
        parts.append(np.ascontiguousarray(np.array(a)).tobytes())
    return b"".join(parts)


def decode_state(slot: Slot, blob: Any) -> List[mx.array]:
    """The arrays of a state blob (float32 state stays float32)."""
    out, at = [], 0
    view = memoryview(blob).cast("B")
    for shape, dtype in slot.arrays:
        np_dtype = np.dtype(_np_dtype(dtype))
        size = int(np.prod(shape)) * np_dtype.itemsize
        out.append(mx.array(np.frombuffer(view[at : at + size], dtype=np_dtype).reshape(shape)))
        at += size
    return out


# ---- per-token layers --------------------------------------------------------------


def shadow_replay(leaf: Any, n: int, cuts: Sequence[int]) -> np.ndarray:
    """Feeds positions through ``leaf`` (a fresh sliding or chunked cache) in the
    chunks ending at ``cuts``; returns the position held by every row of its buffer
    (-1: an unused row). ``leaf`` keeps the counters a real prefill would leave."""
    at = 0
    chunked = type(leaf).__name__ == "ChunkedKVCache"
    for end in cuts:
        marks = mx.arange(at + 1, end + 1, dtype=mx.float32).reshape(1, 1, end - at, 1)
        if chunked:
            leaf.maybe_trim_front()
        leaf.update_and_fetch(marks, marks)
        at = end
    if chunked:
        held = leaf.keys[0, 0, : leaf.offset - leaf.start_position, 0]
    else:
        held = leaf.keys[0, 0, :, 0]
    return np.array(held).astype(np.int64) - 1


class Rows:
    """K and V of one per-token slot over positions ``[0, n)``, filled block by block
    from stored bytes (rows of blocks that were not fetched stay zero)."""

    def __init__(self, slot: Slot, n: int, dtype: str, bits: Optional[int]):
        self.slot, self.n, self.dtype, self.bits = slot, n, dtype, bits
        h, d = slot.kv_heads, slot.head_dim
        if bits is None:
            self.parts = [np.zeros((2, h, n, d), dtype=_NP_RAW[dtype])]
        else:
            g = d // 32
            self.parts = [
                np.zeros((2, h, n, d * bits // 32), dtype=np.uint32),
                np.zeros((2, h, n, g), dtype=_NP_RAW[dtype]),
                np.zeros((2, h, n, g), dtype=_NP_RAW[dtype]),
            ]

    def put(self, start: int, tokens: int, data: Any) -> None:
        """Copies one block's stored bytes (K then V) into rows ``start..``."""
        view = memoryview(data).cast("B")
        h, end = self.slot.kv_heads, start + tokens
        if self.bits is None:
            src = np.frombuffer(view, dtype=self.parts[0].dtype).reshape(2, h, tokens, -1)
            self.parts[0][:, :, start:end] = src
            return
        at = 0
        for kv in range(2):
            for part in self.parts:
                row = part.shape[-1]
                size = h * tokens * row * part.dtype.itemsize
                src = np.frombuffer(view[at : at + size], dtype=part.dtype)
                part[kv, :, start:end] = src.reshape(h, tokens, row)
                at += size

    def arrays(self, positions: Optional[np.ndarray] = None) -> Tuple[Any, Any]:
        """(keys, values) as mlx arrays ``[1, H, rows, …]``; with ``positions``, the
        rows at those positions (zeros where a position is -1)."""
        out = []
        for kv in range(2):
            tensors = []
            for part in self.parts:
                p = part[kv]
                if positions is not None:
                    p = np.where((positions >= 0)[None, :, None], p[:, np.maximum(positions, 0)], 0).astype(p.dtype)
                t = mx.array(p[None])
                tensors.append(t.view(mx.bfloat16) if (self.dtype == "bf16" and p.dtype == np.uint16) else t)
            out.append(tensors[0] if self.bits is None else tuple(tensors))
        return out[0], out[1]


def fill_leaf(leaf: Any, slot: Slot, rows: Rows, n: int, cuts: Sequence[int]) -> Any:
    """Sets a fresh leaf cache's arrays from ``rows``; returns the leaf to use (a
    ``QuantizedKVCache`` replaces a ``KVCache`` for quantised tiers)."""
    if slot.kind == "attention":
        keys, values = rows.arrays()
        if rows.bits is not None:
            from mlx_lm.models.cache import QuantizedKVCache

            leaf = QuantizedKVCache(group_size=32, bits=rows.bits)
        leaf.keys, leaf.values, leaf.offset = keys, values, n
        return leaf
    positions = shadow_replay(leaf, n, cuts)
    leaf.keys, leaf.values = rows.arrays(positions)
    return leaf


def needed_positions(slot: Slot, leaf_template: Any, n: int, cuts: Sequence[int]) -> np.ndarray:
    """The positions a per-token slot needs after a prefill of ``n`` tokens."""
    if slot.kind == "attention":
        return np.arange(n)
    import copy

    pos = shadow_replay(copy.deepcopy(leaf_template), n, cuts)
    return pos[pos >= 0]


def blocks_needed(positions: np.ndarray, starts: Sequence[int], ends: Sequence[int]) -> List[int]:
    """Indexes of the blocks (``[starts[i], ends[i])``) that hold any of ``positions``."""
    if positions.size == 0:
        return []
    idx = np.searchsorted(np.asarray(ends), positions, side="right")
    return sorted(set(int(i) for i in idx))


def split_kv(keys: mx.array, values: mx.array) -> Tuple[np.ndarray, np.ndarray]:
    """Recorded K and V (``[1, H, t, D]``) as numpy ``[H, t, D]``."""
    return to_np(keys)[0], to_np(values)[0]


def block_payload(k: np.ndarray, v: np.ndarray, a: int, b: int) -> np.ndarray:
    """One block's K then V (``[2, H, b - a, D]``), contiguous."""
    out = np.empty((2, k.shape[0], b - a, k.shape[2]), dtype=k.dtype)
    out[0] = k[:, a:b]
    out[1] = v[:, a:b]
    return out


def from_export(arrays: Dict[str, mx.array], i: int, bits: Optional[int]) -> Tuple[Any, Any]:
    """Slot ``i``'s K and V from an export file's arrays."""
    if bits is None:
        return arrays[f"{i}.0"], arrays[f"{i}.1"]
    return (
        tuple(arrays[f"{i}.0.{j}"] for j in range(3)),
        tuple(arrays[f"{i}.1.{j}"] for j in range(3)),
    )
