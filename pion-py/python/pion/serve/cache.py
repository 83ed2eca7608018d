"""The server's prompt cache: live conversations in memory, Pion under them.

A request's prompt is matched against two places, and the longer reusable prefix wins:

- **the session cache**, in memory: the mlx-lm cache objects of recent conversations,
  each with the exact tokens it holds, bounded by one byte budget (least recently used
  first out). A hit here costs nothing; a prefix shorter than the entry is reused by
  trimming (where every layer can be trimmed), so a regenerated or edited turn still
  starts at the point where it differs.
- **Pion** (the embedded engine or a shared pion-server), through
  :class:`pion.mlx.PionPromptCache`: the longest stored block-aligned prefix, for a
  restarted server, a second process or another tool. Hybrid models get attention K/V
  only with the matching recurrent state, which is stored at every block boundary.

While a request runs, a :class:`Live` records the K/V the model computes (per layer,
before any quantisation) and the recurrent states at block boundaries; when it ends,
:meth:`PromptCache.finish` stores every full block of what the next turn can reuse in
Pion and puts the live cache back into memory, trimmed to that length.

**Tails.** A conversation rarely ends on a block boundary, and the next turn's block
at that place holds other tokens, so full blocks alone would leave a second process
up to a block short of what the first one knew. For models whose layers are all full
attention (no recurrent state, no quantised tier), the last, partial block of what
the next turn can reuse is stored too, and its length recorded in a set beside its
parent block (``<namespace>:tails:<parent id>``, a plain Redis set in the same
store); a lookup tries those lengths after the full-block match, so another process
starts exactly where this one stopped.
"""

import threading
import time
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Sequence, Tuple

import mlx.core as mx
from mlx.utils import tree_flatten

from ..mlx import PionPromptCache, _build
from ..mlx._layout import leaf_at, set_leaf

__all__ = ["PromptCache", "Live", "common_prefix"]


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the longest common prefix of two token sequences."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class _Recorder:
    """Keeps the K/V handed to one leaf cache's ``update_and_fetch``; can move to the
    leaf that replaces it (a ``QuantizedKVCache`` after a prefill)."""

    def __init__(self, leaf: Any):
        self.keys: List[mx.array] = []
        self.values: List[mx.array] = []
        self.leaf: Any = None
        self.attach(leaf)

    def attach(self, leaf: Any) -> None:
        self.detach()
        self.leaf, self.inner = leaf, leaf.update_and_fetch
        leaf.update_and_fetch = self

    def detach(self) -> None:
        if self.leaf is not None:
            del self.leaf.update_and_fetch
            self.leaf = None

    def __call__(self, keys: mx.array, values: mx.array) -> Any:
        self.keys.append(keys)
        self.values.append(values)
        return self.inner(keys, values)


class _Entry:
    """A conversation's cache in memory: ``tokens`` are what ``caches`` hold; the
    first ``stored`` of them are in Pion as ``ids``; ``pending`` has, per per-token
    slot, K and V of positions ``stored..len(tokens)`` (less than one block)."""

    def __init__(self, tokens: List[int], caches: List[Any], stored: int, ids: List[str], pending: Dict[int, Tuple[Any, Any]]):
        self.tokens, self.caches, self.stored, self.ids, self.pending = tokens, caches, stored, ids, pending
        self.nbytes = sum(a.nbytes for c in caches for _, a in tree_flatten(c.state) if isinstance(a, mx.array))


def _slice(kv: Tuple[Any, Any], a: int, b: int) -> Tuple[Any, Any]:
    return kv[0][:, :, a:b], kv[1][:, :, a:b]


class Live:
    """One request's cache while the model runs: ``caches`` hold ``tokens``;
    ``reused`` of them came from ``source`` (``memory``, ``pion`` or ``cold``)."""

    def __init__(self, owner: "PromptCache", caches: List[Any], tokens: List[int], source: str,
                 stored: int, ids: List[str], pending: Dict[int, Tuple[Any, Any]], storable: bool):
        self.owner, self.caches, self.tokens, self.source = owner, caches, list(tokens), source
        self.reused = len(tokens)
        self.stored, self.ids, self.pending, self.storable = stored, list(ids), pending, storable
        self.states: Dict[int, Dict[int, bytes]] = {}
        slots = owner.pion.slots
        self.recorders = {i: _Recorder(leaf_at(caches, s.path)) for i, s in enumerate(slots) if s.per_token}

    def advance(self, tokens: Sequence[int]) -> None:
        """Notes that the model has just processed ``tokens``; keeps the recurrent
        state when they end on a block boundary."""
        self.tokens.extend(int(t) for t in tokens)
        pion = self.owner.pion
        if pion.recurrent and len(self.tokens) % pion.block_tokens == 0:
            self.states[len(self.tokens)] = {
                i: _build.encode_state(s, leaf_at(self.caches, s.path).cache)
                for i, s in enumerate(pion.slots)
                if not s.per_token
            }

    def quantize(self, bits: int) -> None:
        """Replaces full-precision ``KVCache`` leaves by ``QuantizedKVCache`` (group
        size 32), as mlx-lm's ``kv_bits`` does after a prefill; recording goes on."""
        for i, s in enumerate(self.owner.pion.slots):
            leaf = leaf_at(self.caches, s.path)
            if type(leaf).__name__ == "KVCache":
                new = leaf.to_quantized(group_size=32, bits=bits)
                set_leaf(self.caches, s.path, new)
                if i in self.recorders:
                    self.recorders[i].attach(new)

    def _release(self) -> Dict[int, Tuple[Any, Any]]:
        """K and V of positions ``stored..len(tokens)`` per per-token slot."""
        out = {}
        for i, r in self.recorders.items():
            r.detach()
            parts_k = ([self.pending[i][0]] if i in self.pending else []) + r.keys
            parts_v = ([self.pending[i][1]] if i in self.pending else []) + r.values
            if parts_k:
                out[i] = (mx.concatenate(parts_k, axis=2), mx.concatenate(parts_v, axis=2))
        self.recorders = {}
        return out


class PromptCache:
    """The session cache (``budget_bytes`` of mlx-lm cache objects in memory) over
    ``pion`` (a :class:`pion.mlx.PionPromptCache`), in namespace ``namespace``."""

    def __init__(self, pion: PionPromptCache, budget_bytes: int, namespace: str = "serve"):
        self.pion = pion
        self.ns = pion.namespace(namespace)
        self.budget = budget_bytes
        self.entries: "OrderedDict[int, _Entry]" = OrderedDict()
        self._next = 0
        self._lock = threading.Lock()
        self.stats = {"memory_hits": 0, "pion_hits": 0, "misses": 0, "reused_tokens": 0,
                      "stored_blocks": 0, "stored_tails": 0, "tail_hits": 0, "store_errors": 0, "evictions": 0}
        per_token = [s for s in pion.slots if s.per_token]
        self.tails = not pion.recurrent and pion.bits is None and all(s.kind == "attention" for s in per_token)
        self.last_error: Optional[str] = None

    # ---- lookup --------------------------------------------------------------------

    def _trimmable(self, caches: List[Any]) -> bool:
        from mlx_lm.models.cache import can_trim_prompt_cache

        return can_trim_prompt_cache(caches)

    def _best_entry(self, prompt: List[int]) -> Tuple[Optional[int], int]:
        limit = len(prompt) - 1  # the last prompt token is fed to get the first logits
        best, best_n = None, 0
        for key, e in self.entries.items():
            c = min(common_prefix(e.tokens, prompt), limit)
            if 0 < c < len(e.tokens):
                # A shorter prefix needs a trim, and before ``stored`` the K/V of the
                # block it leaves off in, which plain KVCache layers can give.
                if not self._trimmable(e.caches) or (c < e.stored and not self._plain(e.caches)):
                    continue
            if c > best_n:
                best, best_n = key, c
        return best, best_n

    def _plain(self, caches: List[Any]) -> bool:
        return all(type(leaf_at(caches, s.path)).__name__ == "KVCache" for s in self.pion.slots if s.per_token)

    def begin(self, prompt: List[int]) -> Live:
        """The cache to run ``prompt`` on: the longest reusable prefix of
        ``prompt[:-1]`` from memory or Pion (or an empty cache), with recording on."""
        from mlx_lm.models.cache import make_prompt_cache, trim_prompt_cache

        with self._lock:
            key, mem_n = self._best_entry(prompt)
        head = prompt[:-1]
        pion_n, pion_ids = 0, []
        try:
            pion_n, pion_ids = self.pion.store.match(self.ns, _pack(head))
        except Exception as e:  # the shared server went away: memory only
            self._error(e)
        pion_best = pion_n
        bt = self.pion.block_tokens
        if self.tails and pion_n % bt == 0 and mem_n < pion_n + bt:
            try:
                pion_best = max(pion_n, self._tail(head, pion_n, pion_ids[-1] if pion_ids else None))
            except Exception as e:
                self._error(e)
        if key is not None and mem_n > 0 and mem_n >= pion_best:
            with self._lock:
                e = self.entries.pop(key)
            storable = True
            if mem_n < len(e.tokens):
                trim_prompt_cache(e.caches, len(e.tokens) - mem_n)
            stored, ids, pending = e.stored, e.ids, e.pending
            if mem_n < stored:
                # The branch leaves the stored chain inside a block: that block's
                # first rows come from the (plain KVCache) layers themselves.
                stored = mem_n // bt * bt
                ids = ids[: stored // bt]
                pending = {}
                for i, s in enumerate(self.pion.slots):
                    if s.per_token:
                        leaf = leaf_at(e.caches, s.path)
                        pending[i] = (leaf.keys[:, :, stored:mem_n], leaf.values[:, :, stored:mem_n])
                if self.pion.recurrent:
                    storable = False
            else:
                pending = {i: _slice(kv, 0, mem_n - stored) for i, kv in pending.items()}
            if pion_n > stored and pion_n <= mem_n:
                # Another process stored more of this prefix meanwhile: adopt it.
                try:
                    ids = self.pion.store.block_ids(self.ns, _pack(head[:pion_n]))
                    pending = {i: _slice(kv, pion_n - stored, mem_n - stored) for i, kv in pending.items()}
                    stored = pion_n
                except Exception as err:
                    self._error(err)
            self.stats["memory_hits"] += 1
            self.stats["reused_tokens"] += mem_n
            return Live(self, e.caches, e.tokens[:mem_n], "memory", stored, ids, pending, storable)
        if pion_best:
            try:
                caches, n, ids, _via = self.pion.fetch_prefix(self.ns, head[:pion_best])
            except Exception as e:
                self._error(e)
                caches, n, ids = None, 0, []
            if caches is not None and n:
                self.stats["pion_hits"] += 1
                self.stats["reused_tokens"] += n
                full = n // bt * bt
                pending: Dict[int, Tuple[Any, Any]] = {}
                if full < n:
                    # A tail: its rows become pending K/V, so that the next store
                    # writes the full block that replaces it.
                    self.stats["tail_hits"] += 1
                    for i, s in enumerate(self.pion.slots):
                        leaf = leaf_at(caches, s.path)
                        pending[i] = (leaf.keys[:, :, full:n], leaf.values[:, :, full:n])
                return Live(self, caches, head[:n], "pion", full, ids[: full // bt], pending, True)
        self.stats["misses"] += 1
        return Live(self, make_prompt_cache(self.pion.model), [], "cold", 0, [], {}, True)

    def _tails_key(self, parent: Optional[str]) -> str:
        return f"{self.ns}:tails:{parent or 'root'}"

    def _tail(self, head: List[int], full: int, parent: Optional[str]) -> int:
        """The end of the longest stored tail after the ``full`` matched tokens of
        ``head`` (whose last block is ``parent``); 0: none."""
        bt = self.pion.block_tokens
        lengths = self.pion.store.execute("SMEMBERS", self._tails_key(parent))
        for length in sorted((int(x) for x in lengths), reverse=True):
            end = full + length
            if length >= bt or end > len(head):
                continue
            n, _ = self.pion.store.match(self.ns, _pack(head[:end]))
            if n == end:
                return end
        return 0

    # ---- after a reply -------------------------------------------------------------

    def finish(self, live: Live, keep: int) -> None:
        """Ends ``live``: stores in Pion every full block of ``live.tokens[:keep]``
        not yet stored, and keeps the cache in memory (trimmed to ``keep`` where the
        layers allow; otherwise whole, reusable only by prompts that extend it)."""
        from mlx_lm.models.cache import trim_prompt_cache

        kv = live._release()
        tokens, bt = live.tokens, self.pion.block_tokens
        keep = max(0, min(keep, len(tokens)))
        upto = keep // bt * bt
        stored, ids = live.stored, live.ids
        if live.storable and upto > stored:
            try:
                arrays = {i: _build.split_kv(k[:, :, : upto - stored], v[:, :, : upto - stored]) for i, (k, v) in kv.items()}
                new = self.pion.store_blocks(self.ns, ids[-1] if ids else None, tokens, stored, upto, arrays, live.states)
                ids = ids + new
                self.stats["stored_blocks"] += len(new)
                stored = upto
            except Exception as e:
                self._error(e)
        if self.tails and live.storable and stored == upto and keep > upto:
            try:
                arrays = {i: _build.split_kv(k[:, :, upto - live.stored : keep - live.stored],
                                             v[:, :, upto - live.stored : keep - live.stored])
                          for i, (k, v) in kv.items()}
                parent = ids[-1] if ids else None
                self.pion.store_blocks(self.ns, parent, tokens, upto, keep, arrays, {})
                self.pion.store.execute("SADD", self._tails_key(parent), str(keep - upto))
                self.stats["stored_tails"] += 1
            except Exception as e:
                self._error(e)
        caches = live.caches
        if keep < len(tokens) and self._trimmable(caches):
            trim_prompt_cache(caches, len(tokens) - keep)
            tokens = tokens[:keep]
        # Not trimmable (recurrent layers): the whole sequence stays in memory, and
        # what lies past ``keep`` is stored only if a later prompt extends it.
        pending = {i: _slice(kv_i, stored - live.stored, len(tokens) - live.stored) for i, kv_i in kv.items()}
        entry = _Entry(tokens, caches, stored, ids, pending)
        with self._lock:
            self.entries[self._next] = entry
            self._next += 1
            self._evict()

    def close(self) -> None:
        """Closes the store (the embedded engine releases its data directory)."""
        close = getattr(self.pion.store, "close", None)
        if close is not None:
            close()

    def discard(self, live: Live) -> None:
        """Drops ``live`` after a failure (its cache may be half-updated)."""
        for r in live.recorders.values():
            r.detach()
        live.recorders = {}

    def _evict(self) -> None:
        total = sum(e.nbytes for e in self.entries.values())
        while self.entries and total > self.budget:
            _, e = self.entries.popitem(last=False)
            total -= e.nbytes
            self.stats["evictions"] += 1

    def _error(self, e: Exception) -> None:
        self.stats["store_errors"] += 1
        self.last_error = f"{type(e).__name__}: {e}"
        import sys

        print(f"pion serve: prompt store: {self.last_error}", file=sys.stderr, flush=True)

    def info(self) -> Dict[str, Any]:
        """Counters and the memory in use, for ``/health``."""
        with self._lock:
            return dict(self.stats, entries=len(self.entries),
                        memory_bytes=sum(e.nbytes for e in self.entries.values()),
                        memory_budget=self.budget, namespace=self.ns,
                        block_tokens=self.pion.block_tokens, last_error=self.last_error,
                        time=time.time())


def _pack(tokens: Sequence[int]) -> bytes:
    from .._ops import pack_tokens

    return pack_tokens(list(tokens))
