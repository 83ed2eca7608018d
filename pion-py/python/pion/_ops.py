"""Prompt-cache operations shared by the embedded engine and the network client: thin,
typed wrappers over the ``KV.*`` commands (see doc/protocol.md)."""

import json
import struct
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

Tokens = Union[Sequence[int], bytes]


def pack_tokens(tokens: Tokens) -> bytes:
    """Token ids as little-endian u32 bytes (a list, a numpy array or bytes)."""
    if isinstance(tokens, (bytes, bytearray, memoryview)):
        return bytes(tokens)
    tobytes = getattr(tokens, "astype", None)
    if tobytes is not None:
        return tokens.astype("<u4").tobytes()  # numpy
    return struct.pack("<%dI" % len(tokens), *tokens)


def _as_bytes(data: Any) -> bytes:
    """``data``'s bytes (numpy arrays, memoryviews, bytearrays: one copy)."""
    return data if isinstance(data, bytes) else memoryview(data).tobytes()


def block_hex(block_id: Union[str, bytes, None]) -> bytes:
    """A block id as the server spells it (``None``: the root)."""
    if block_id is None:
        return b"root"
    return block_id.encode() if isinstance(block_id, str) else block_id


class PrefixOps:
    """``register``, ``store_block``, ``match``, ``fetch`` … over ``execute``."""

    execute: Any
    """Runs any command (``pion.Engine.execute`` or ``Client.execute``)."""

    def register(self, namespace: str, manifest: Dict[str, Any]) -> None:
        """Registers a namespace with its manifest (idempotent for the same one)."""
        self.execute("KV.REGISTER", namespace, json.dumps(manifest))

    def manifest(self, namespace: str) -> Dict[str, Any]:
        """The namespace's manifest."""
        return json.loads(self.execute("KV.MANIFEST", namespace))

    def block_ids(self, namespace: str, tokens: Tokens) -> List[str]:
        """The ids of every block of ``tokens`` (stored or not)."""
        return [i.decode() for i in self.execute("KV.BLOCKIDS", namespace, pack_tokens(tokens))]

    def match(self, namespace: str, tokens: Tokens) -> Tuple[int, List[str]]:
        """The longest usable stored prefix: tokens matched and its block ids."""
        n, ids = self.execute("KV.MATCH", namespace, pack_tokens(tokens))
        return n, [i.decode() for i in ids]

    def store_block(
        self,
        namespace: str,
        parent: Optional[str],
        tokens: Tokens,
        layers: Sequence[Any],
    ) -> str:
        """Stores one block after ``parent`` (None: a first block); each layer is
        bytes or anything with the buffer protocol (numpy arrays: K then V)."""
        # The network client overrides this to send the buffers without copies.
        data = [_as_bytes(l) for l in layers]
        return self.execute(
            "KV.PUT", namespace, block_hex(parent), pack_tokens(tokens), *data
        ).decode()

    def fetch(
        self, namespace: str, block_id: str, layers: Optional[Sequence[int]] = None
    ) -> Tuple[int, List[Optional[bytes]]]:
        """A block's token count and its layers' bytes (None: absent recurrent state)."""
        args: List[Any] = ["KV.GET", namespace, block_id]
        if layers is not None:
            args += ["LAYERS", *layers]
        reply = self.execute(*args)
        return reply[0], reply[1:]

    def export(
        self, namespace: str, tokens: Tokens, layout: str = "mlx-lm"
    ) -> Tuple[int, Optional[str]]:
        """The longest usable stored prefix of ``tokens`` as a safetensors file the
        server writes (once) in its data directory: tokens matched and the file's path
        (None when nothing matches). ``layout``: ``mlx-lm`` or ``mlx-lm-legacy``."""
        n, path = self.execute("KV.EXPORT", namespace, pack_tokens(tokens), "LAYOUT", layout)
        return n, (path.decode() if isinstance(path, bytes) else path)

    def attend_view(self, namespace: str, view: str, block_ids: Sequence[str]) -> Tuple[int, int]:
        """Names the stored prefix ``block_ids`` (in order, from a sequence's start) as
        attention view ``view``: its tokens and blocks."""
        tokens, blocks = self.execute("ATTEND.VIEW", namespace, view, "BLOCKS", *block_ids)
        return tokens, blocks

    def attend(
        self,
        namespace: str,
        view: str,
        layer: int,
        queries: Any,
        positions: int,
        scale: float,
        budget: Optional[int] = None,
    ) -> Tuple[Any, Any]:
        """Attention of ``queries`` (little-endian f32 ``[positions, q_heads, head_dim]``,
        e.g. a numpy array) over the view's stored prefix for ``layer`` (only the blocks
        the selector keeps within ``budget`` tokens per KV head, when given): the output
        (normalised over what was attended) and the log-sum-exp per row, as numpy f32
        arrays ``[positions * q_heads * head_dim]`` and ``[positions * q_heads]``."""
        import numpy as np

        sparse = ["SPARSE", budget] if budget else []
        reply = self.execute(
            "ATTEND.QUERY", namespace, view, "LAYER", layer, "Q", _as_bytes(queries),
            "POSITIONS", positions, "SCALE", repr(float(scale)), *sparse,
        )
        out, lse = reply[0][0], reply[0][1]
        return np.frombuffer(out, dtype="<f4"), np.frombuffer(lse, dtype="<f4")

    def attend_drop(self, namespace: str, view: str) -> bool:
        """Forgets an attention view; whether it existed."""
        return bool(self.execute("ATTEND.DROP", namespace, view))

    def info(self, namespace: Optional[str] = None) -> Dict[str, int]:
        """Prompt-cache counters."""
        args = ["KV.INFO"] + ([namespace] if namespace else [])
        reply = self.execute(*args)
        if isinstance(reply, list):  # RESP2 flat pairs
            reply = dict(zip(reply[::2], reply[1::2]))
        return {(k.decode() if isinstance(k, bytes) else k): v for k, v in reply.items()}
