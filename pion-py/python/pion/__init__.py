"""Pion, a memory engine for AI inference.

``pion.Engine(path)`` runs the engine in this process (no server), durable in
``path``; ``pion.connect(host, port)`` talks to a running pion-server. Both have
``execute(*args)`` for any command and the prompt-cache operations (``register``,
``store_block``, ``match``, ``fetch`` …).
"""

from typing import Any, List, Optional, Sequence, Tuple

from . import _pion
from ._ops import PrefixOps, Tokens, block_hex, pack_tokens
from ._pion import PionError, __version__
from .client import Client, connect


def _byte_view(data: Any) -> memoryview:
    """``data``'s bytes as a flat unsigned-byte view, without a copy when the buffer
    is C-contiguous (numpy and mlx arrays, bytes, memoryviews)."""
    view = data if isinstance(data, memoryview) else memoryview(data)
    if not view.c_contiguous:
        view = memoryview(view.tobytes())
    return view if (view.format == "B" and view.ndim == 1) else view.cast("B")


class Engine(_pion.Engine, PrefixOps):
    """The embedded engine: durable in ``path``, or in memory when ``path`` is None.

    Layers cross without Python-side copies: ``store_block`` reads each layer in place
    from its buffer into the store, and ``fetch``/``fetch_many`` return read-only
    memoryviews of the store's own bytes (``numpy.frombuffer(view, dtype)`` is free).
    """

    def store_block(
        self, namespace: str, parent: Optional[str], tokens: Tokens, layers: Sequence[Any]
    ) -> str:
        """Stores one block after ``parent`` (None: a first block); each layer is
        anything with the buffer protocol (numpy arrays: K then V), read in place."""
        views = [_byte_view(l) for l in layers]
        return self._store_block(namespace, block_hex(parent), pack_tokens(tokens), views)

    def fetch(
        self, namespace: str, block_id: str, layers: Optional[Sequence[int]] = None
    ) -> Tuple[int, List[Optional[memoryview]]]:
        """A block's token count and its layers as read-only views of the store's
        bytes (None: absent recurrent state); the views keep the bytes alive."""
        return self.fetch_many(namespace, [block_id], layers)[0]

    def fetch_many(
        self, namespace: str, block_ids: Sequence[str], layers: Optional[Sequence[int]] = None
    ) -> List[Tuple[int, List[Optional[memoryview]]]]:
        """Several blocks at once (see ``fetch``)."""
        wanted = None if layers is None else list(layers)
        got = self._fetch_many(namespace, list(block_ids), wanted)
        return [(n, [None if l is None else memoryview(l) for l in ls]) for n, ls in got]


__all__ = ["Engine", "Client", "connect", "PionError", "PrefixOps", "pack_tokens", "__version__"]
