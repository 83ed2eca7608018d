"""Pion's prompt cache for mlx-lm.

``PionPromptCache(model, host=..., port=...)`` (or ``engine=pion.Engine(path)``)
gives ``get_or_prefill(prefix_ids, namespace=...)``: exactly what
``mlx_lm.models.cache.make_prompt_cache(model)`` returns, with ``prefix_ids`` already
in it. The first time a prefix is seen it is prefilled (in mlx-lm's chunks) and its
K/V stored in blocks; afterwards any process gets it back from the store — the
longest stored prefix, with only the rest prefilled::

    import pion.mlx
    cache_store = pion.mlx.PionPromptCache(model, port=1974)
    cache = cache_store.get_or_prefill(system_prompt_ids, namespace="my-app")
    for token, _ in generate_step(mx.array(question_ids), model, prompt_cache=cache):
        ...

``kv_bits=4`` (or 8) stores K/V in the ``q4`` (``int8``) tier, whose bytes are mlx's
own packed layout, and returns ``QuantizedKVCache`` objects (group size 32), as
mlx-lm's ``kv_bits`` option does. On the same machine as the server, a hit is read
from an export file the server writes once per stored prefix (``KV.EXPORT``) instead
of over TCP; elsewhere the binary lane carries the blocks.

``attention="server"`` keeps the prefix on the server: the returned caches hold no
prefix K/V, and every attention call sends the layer's queries to Pion, which attends
them over the stored prefix (``ATTEND.QUERY``); the client merges that with its own
suffix attention (see :mod:`pion.mlx.server_attention` for what is patched). It needs a
model whose every layer is full attention (``KVCache``). ``sparse_budget=N`` has the
server attend, per KV head, only the prefix blocks its selector keeps within N tokens.
"""

import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import mlx.core as mx
import numpy as np

from .._ops import pack_tokens
from .._pion import PionError
from ..client import connect
from . import _build
from ._layout import fingerprint, leaf_at, manifest, namespace_name, probe, set_leaf, tier_bits

__all__ = ["PionPromptCache", "mlx_lm_layout"]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def mlx_lm_layout() -> str:
    """The prompt-cache file layout the installed mlx-lm reads: ``mlx-lm`` (0.32.2
    and later: state with counters, no ``meta_state``) or ``mlx-lm-legacy``."""
    from mlx_lm.models import cache

    return "mlx-lm-legacy" if hasattr(cache._BaseCache, "meta_state") else "mlx-lm"


class _Recorder:
    """Wraps a leaf cache's ``update_and_fetch`` during a prefill to keep the K/V
    the model computes for the new tokens (before any quantisation)."""

    def __init__(self, leaf: Any):
        self.leaf, self.keys, self.values = leaf, [], []
        self.inner = leaf.update_and_fetch
        leaf.update_and_fetch = self

    def __call__(self, keys: mx.array, values: mx.array) -> Any:
        self.keys.append(keys)
        self.values.append(values)
        return self.inner(keys, values)

    def release(self) -> Tuple[Optional[mx.array], Optional[mx.array]]:
        del self.leaf.update_and_fetch
        if not self.keys:
            return None, None
        return mx.concatenate(self.keys, axis=2), mx.concatenate(self.values, axis=2)


class PionPromptCache:
    """A model's prompt cache kept in Pion (see the module documentation).

    ``host``/``port``/``password``/``lane_port`` reach a pion-server; ``engine`` (a
    ``pion.Engine``) uses the embedded engine instead. ``block_tokens`` is the store's
    block size; ``kv_bits`` (None, 8 or 4) the storage tier; ``prefill_step_size`` the
    prefill chunk, as mlx-lm's; ``export`` ("auto", True or False) whether hits on a
    local server are read from export files. After each call, ``last`` says what
    happened: ``route`` (``miss``, ``hit``, ``partial``, ``empty``), ``matched``,
    ``prefilled``, ``via`` (``engine``, ``lane``, ``export``) and ``seconds``.
    """

    def __init__(
        self,
        model: Any,
        host: str = "127.0.0.1",
        port: int = 1974,
        *,
        engine: Any = None,
        password: Optional[str] = None,
        lane_port: Optional[int] = None,
        block_tokens: int = 256,
        kv_bits: Optional[int] = None,
        prefill_step_size: int = 2048,
        export: Any = "auto",
        attention: str = "local",
        sparse_budget: Optional[int] = None,
    ):
        if kv_bits not in (None, 4, 8):
            raise PionError(f"kv_bits must be None, 4 or 8, got {kv_bits!r}")
        if prefill_step_size % block_tokens:
            raise PionError("prefill_step_size must be a multiple of block_tokens")
        self.model = model
        self.block_tokens = block_tokens
        self.step = prefill_step_size
        self.tier = {None: "as-given", 8: "int8", 4: "q4"}[kv_bits]
        self.bits = tier_bits(self.tier)
        self.slots, self.dtype = probe(model)
        if self.bits is not None and any(s.kind in ("sliding", "chunked") for s in self.slots):
            raise PionError(
                "kv_bits needs every attention layer to be a KVCache (mlx-lm cannot "
                "quantise RotatingKVCache or ChunkedKVCache either)"
            )
        self.recurrent = any(s.kind == "recurrent" for s in self.slots)
        self.manifest = manifest(fingerprint(model), self.slots, self.dtype, block_tokens, self.tier)
        if engine is not None:
            self.store, self.via = engine, "engine"
            self.export = False
        else:
            self.store, self.via = connect(host, port, password, lane_port), "lane"
            self.export = (host in _LOOPBACK) if export == "auto" else bool(export)
        self.layout = mlx_lm_layout()
        if attention not in ("local", "server"):
            raise PionError(f"attention must be 'local' or 'server', got {attention!r}")
        self.attention = attention
        if sparse_budget is not None and (attention != "server" or sparse_budget <= 0):
            raise PionError("sparse_budget is a positive token count, with attention='server'")
        self.sparse_budget = sparse_budget
        if attention == "server":
            if any(s.kind != "attention" or s.path != (i,) for i, s in enumerate(self.slots)):
                raise PionError(
                    "attention='server' needs every layer to be full attention (KVCache); "
                    "sliding-window and recurrent layers keep their state locally"
                )
            from . import server_attention

            server_attention.install(model)
        self._namespaces: Dict[str, str] = {}
        self.last: Dict[str, Any] = {}

    # ---- namespaces ----------------------------------------------------------------

    def namespace(self, name: str = "default") -> str:
        """The store's namespace for this model and ``name`` (registered on first use)."""
        full = self._namespaces.get(name)
        if full is None:
            full = namespace_name(name, self.model, self.manifest, self.slots)
            self.store.register(full, self.manifest)
            self._namespaces[name] = full
        return full

    # ---- the one call --------------------------------------------------------------

    def get_or_prefill(self, prefix_ids: Sequence[int], namespace: str = "default") -> List[Any]:
        """The model's cache list holding ``prefix_ids``: fetched when stored, the
        stored part fetched and the rest prefilled and stored on a partial hit,
        prefilled and stored on a miss."""
        t0 = time.perf_counter()
        tokens = [int(t) for t in (prefix_ids.tolist() if hasattr(prefix_ids, "tolist") else prefix_ids)]
        n = len(tokens)
        from mlx_lm.models.cache import make_prompt_cache

        if n == 0:
            self.last = {"route": "empty", "matched": 0, "prefilled": 0, "via": None, "seconds": 0.0}
            return make_prompt_cache(self.model)
        ns = self.namespace(namespace)
        if self.attention == "server":
            return self._server_caches(ns, tokens, t0)
        caches, matched, ids, via = self.fetch_prefix(ns, tokens)
        if caches is None:
            caches = make_prompt_cache(self.model)
        route = "hit" if matched == n else ("partial" if matched else "miss")
        if matched < n:
            self._prefill_and_store(ns, caches, tokens, matched, ids)
        self.last = {
            "route": route,
            "matched": matched,
            "prefilled": n - matched,
            "via": via if matched else None,
            "seconds": time.perf_counter() - t0,
        }
        return caches

    def _server_caches(self, ns: str, tokens: List[int], t0: float) -> List[Any]:
        """Caches whose prefix stays on the server: the prefix is made whole in the
        store first (prefilled and stored where it is missing), then viewed."""
        from . import server_attention

        n = len(tokens)
        matched, ids = self.store.match(ns, pack_tokens(tokens))
        route = "hit" if matched == n else ("partial" if matched else "miss")
        first = matched
        if matched < n:
            caches, got, got_ids, _ = self.fetch_prefix(ns, tokens)
            if caches is None:
                from mlx_lm.models.cache import make_prompt_cache

                caches = make_prompt_cache(self.model)
            self._prefill_and_store(ns, caches, tokens, got, got_ids)
            del caches  # the prefix's K/V leaves this process
            matched, ids = self.store.match(ns, pack_tokens(tokens))
            if matched != n:
                raise PionError(f"the store kept {matched} of {n} prefix tokens (kv-budget?)")
        caches = server_attention.server_caches(self.model, self.store, ns, ids, n, self.sparse_budget)
        self.last = {
            "route": route,
            "matched": first,
            "prefilled": n - first,
            "via": "server",
            "seconds": time.perf_counter() - t0,
        }
        return caches

    # ---- the two halves, for callers that prefill themselves ----------------------

    def fetch_prefix(self, ns: str, tokens: List[int]) -> Tuple[Optional[List[Any]], int, List[str], Optional[str]]:
        """The model's cache list holding the longest stored prefix of ``tokens`` in
        the (registered) namespace ``ns``: ``(caches, matched, block_ids, via)``, or
        ``(None, 0, [], None)`` when nothing is stored."""
        if self.export:
            caches, matched, ids = self._from_export(ns, tokens)
            if caches is not None:
                return caches, matched, ids, "export"
        matched, ids = self.store.match(ns, pack_tokens(tokens))
        if not matched:
            return None, 0, [], None
        return self._from_blocks(ns, matched, ids), matched, ids, self.via

    def store_blocks(
        self,
        ns: str,
        parent: Optional[str],
        tokens: Sequence[int],
        start: int,
        end: int,
        kv: Dict[int, Tuple[np.ndarray, np.ndarray]],
        states: Dict[int, Dict[int, bytes]],
    ) -> List[str]:
        """Stores the blocks of ``tokens[start:end]`` after ``parent`` (the block
        ending at ``start``; None at 0) and returns their ids. ``kv`` holds, per
        per-token slot, K and V (numpy ``[H, t, D]``) of positions ``start..``;
        ``states`` the recurrent states (slot -> blob) at block ends. A block whose
        end has no state is stored without it (the server's hybrid rule stops a match
        before such a block until a later store fills the state in)."""
        bt, out = self.block_tokens, []
        for a in range(start, end, bt):
            b = min(a + bt, end)
            layers: List[Any] = []
            for i, s in enumerate(self.slots):
                if s.per_token:
                    k, v = kv[i]
                    layers.append(_build.block_payload(k, v, a - start, b - start))
                else:
                    layers.append(states.get(b, {}).get(i, b""))
            parent = self.store.store_block(ns, parent, tokens[a:b], layers)
            out.append(parent)
        return out

    # ---- miss: prefill and store ---------------------------------------------------

    def _prefill_and_store(self, ns: str, caches: List[Any], tokens: List[int], start: int, ids: List[str]) -> None:
        n, bt = len(tokens), self.block_tokens
        recorders = {
            i: _Recorder(leaf_at(caches, s.path)) for i, s in enumerate(self.slots) if s.per_token
        }
        states: Dict[int, Dict[int, bytes]] = {}
        at = start
        try:
            for end in _build.schedule(n, self.step, bt, self.recurrent, start):
                self.model(mx.array(tokens[at:end])[None], cache=caches)
                mx.eval([c.state for c in caches])
                if self.recurrent and (end % bt == 0 or end == n):
                    states[end] = {
                        i: _build.encode_state(s, leaf_at(caches, s.path).cache)
                        for i, s in enumerate(self.slots)
                        if not s.per_token
                    }
                at = end
        finally:
            recorded = {i: r.release() for i, r in recorders.items()}
        if self.bits is not None:
            for i, s in enumerate(self.slots):
                leaf = leaf_at(caches, s.path)
                if type(leaf).__name__ == "KVCache":
                    set_leaf(caches, s.path, leaf.to_quantized(group_size=32, bits=self.bits))
        kv = {i: _build.split_kv(k, v) for i, (k, v) in recorded.items() if k is not None}
        self.store_blocks(ns, ids[-1] if ids else None, tokens, start, n, kv, states)
        if self.export:
            self._export(ns, tokens)

    # ---- hit: build from blocks ----------------------------------------------------

    def _fetch_blocks(self, ns: str, ids: List[str], layers: List[int]) -> List[Tuple[int, List[Any]]]:
        many = getattr(self.store, "fetch_many", None)
        if many is not None:
            return many(ns, ids, layers)
        return [self.store.fetch(ns, i, layers) for i in ids]

    def _from_blocks(self, ns: str, n: int, ids: List[str]) -> List[Any]:
        from mlx_lm.models.cache import make_prompt_cache

        bt = self.block_tokens
        starts = [j * bt for j in range(len(ids))]
        ends = [min(s + bt, n) for s in starts]
        caches = make_prompt_cache(self.model)
        cuts = _build.schedule(n, self.step, bt, self.recurrent)
        need: Dict[int, set] = {}
        for i, s in enumerate(self.slots):
            if s.per_token:
                pos = _build.needed_positions(s, leaf_at(caches, s.path), n, cuts)
                blocks = _build.blocks_needed(pos, starts, ends)
            else:
                blocks = [len(ids) - 1]
            for b in blocks:
                need.setdefault(b, set()).add(i)
        groups: Dict[Tuple[int, ...], List[int]] = {}
        for b, layer_set in sorted(need.items()):
            groups.setdefault(tuple(sorted(layer_set)), []).append(b)
        rows = {i: _build.Rows(s, n, self.dtype, self.bits) for i, s in enumerate(self.slots) if s.per_token}
        state_blobs: Dict[int, Any] = {}
        for layer_ids, blocks in groups.items():
            fetched = self._fetch_blocks(ns, [ids[b] for b in blocks], list(layer_ids))
            for b, (count, datas) in zip(blocks, fetched):
                for i, data in zip(layer_ids, datas):
                    if i in rows:
                        rows[i].put(starts[b], count, data)
                    elif data is not None:
                        state_blobs[i] = data
        for i, s in enumerate(self.slots):
            leaf = leaf_at(caches, s.path)
            if s.per_token:
                new = _build.fill_leaf(leaf, s, rows[i], n, cuts)
                if new is not leaf:
                    set_leaf(caches, s.path, new)
            else:
                if i not in state_blobs:
                    raise PionError(f"stored prefix lacks the state of layer {i}")
                leaf.cache = _build.decode_state(s, state_blobs[i])
        return caches

    # ---- hit: build from an export file --------------------------------------------

    def _export(self, ns: str, tokens: List[int]) -> Tuple[int, Optional[str]]:
        try:
            return self.store.export(ns, tokens, self.layout)
        except PionError as e:
            if "needs a data directory" in str(e):
                self.export = False  # an in-memory server: use the lane from now on
                return 0, None
            raise

    def _from_export(self, ns: str, tokens: List[int]) -> Tuple[Optional[List[Any]], int, List[str]]:
        from mlx_lm.models.cache import make_prompt_cache

        n, path = self._export(ns, tokens)
        if not n or path is None:
            return None, 0, []
        try:
            arrays = mx.load(path)
        except (OSError, RuntimeError, ValueError):
            return None, 0, []  # removed meanwhile (evicted): ask again over the lane
        caches = make_prompt_cache(self.model)
        cuts = _build.schedule(n, self.step, self.block_tokens, self.recurrent)
        for i, s in enumerate(self.slots):
            leaf = leaf_at(caches, s.path)
            if not s.per_token:
                leaf.cache = _build.decode_state(s, np.array(arrays[f"{i}.0"]))
                continue
            keys, values = _build.from_export(arrays, i, self.bits)
            if s.kind == "attention":
                if self.bits is not None:
                    from mlx_lm.models.cache import QuantizedKVCache

                    new = QuantizedKVCache(group_size=32, bits=self.bits)
                    new.keys, new.values, new.offset = keys, values, n
                    set_leaf(caches, s.path, new)
                else:
                    leaf.keys, leaf.values, leaf.offset = keys, values, n
                continue
            pos = _build.shadow_replay(leaf, n, cuts)
            take = mx.array(np.maximum(pos, 0).astype(np.int32))
            keep = mx.array(pos >= 0)[None, None, :, None]
            leaf.keys = mx.where(keep, mx.take(keys, take, axis=2), mx.zeros((), keys.dtype))
            leaf.values = mx.where(keep, mx.take(values, take, axis=2), mx.zeros((), values.dtype))
        # The file covers the prefix; block ids are only needed to extend it.
        ids = self.store.block_ids(ns, pack_tokens(tokens[:n])) if n < len(tokens) else []
        return caches, n, ids
