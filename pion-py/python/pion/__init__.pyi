from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

__version__: str

Tokens = Union[Sequence[int], bytes]
Arg = Union[bytes, str, int]

class PionError(Exception):
    """An error reply from Pion (the message is the server's)."""

def pack_tokens(tokens: Tokens) -> bytes:
    """Token ids as little-endian u32 bytes."""

class PrefixOps:
    """Prompt-cache operations over the KV.* commands."""

    def execute(self, *args: Arg) -> Any: ...
    def register(self, namespace: str, manifest: Dict[str, Any]) -> None: ...
    def manifest(self, namespace: str) -> Dict[str, Any]: ...
    def block_ids(self, namespace: str, tokens: Tokens) -> List[str]: ...
    def match(self, namespace: str, tokens: Tokens) -> Tuple[int, List[str]]: ...
    def store_block(
        self, namespace: str, parent: Optional[str], tokens: Tokens, layers: Sequence[Any]
    ) -> str: ...
    def fetch(
        self, namespace: str, block_id: str, layers: Optional[Sequence[int]] = None
    ) -> Tuple[int, List[Optional[bytes]]]: ...
    def export(
        self, namespace: str, tokens: Tokens, layout: str = "mlx-lm"
    ) -> Tuple[int, Optional[str]]: ...
    def info(self, namespace: Optional[str] = None) -> Dict[str, int]: ...

class Engine(PrefixOps):
    """The embedded engine: durable in ``path``, or in memory when ``path`` is None."""

    def __init__(self, path: Optional[str] = None, appendfsync: str = "everysec") -> None: ...
    def execute(self, *args: Arg) -> Any:
        """Runs any command; raises PionError on an error reply."""
    def store_block(
        self, namespace: str, parent: Optional[str], tokens: Tokens, layers: Sequence[Any]
    ) -> str:
        """Stores one block; each layer is read in place from its buffer."""
    def fetch(
        self, namespace: str, block_id: str, layers: Optional[Sequence[int]] = None
    ) -> Tuple[int, List[Optional[memoryview]]]:
        """A block's token count and read-only views of its stored layers."""
    def fetch_many(
        self, namespace: str, block_ids: Sequence[str], layers: Optional[Sequence[int]] = None
    ) -> List[Tuple[int, List[Optional[memoryview]]]]:
        """Several blocks, each layer a read-only view of the store's bytes."""
    def close(self) -> None:
        """Flushes the log and releases the data directory."""
    def __enter__(self) -> "Engine": ...
    def __exit__(self, *exc: Any) -> bool: ...

class Client(PrefixOps):
    """A connection to a running pion-server (RESP plus the binary lane)."""

    def execute(self, *args: Arg) -> Any: ...
    def fetch_many(
        self, namespace: str, block_ids: Sequence[str], layers: Optional[Sequence[int]] = None
    ) -> List[Tuple[int, List[Optional[memoryview]]]]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Client": ...
    def __exit__(self, *exc: Any) -> bool: ...

def connect(
    host: str = "127.0.0.1",
    port: int = 1974,
    password: Optional[str] = None,
    lane_port: Optional[int] = None,
) -> Client: ...
