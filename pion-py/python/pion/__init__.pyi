from typing import Any, Optional, Union

__version__: str

class PionError(Exception):
    """An error reply from Pion (the message is the server's)."""

Arg = Union[bytes, str, int]

class Engine:
    """The embedded engine: durable in ``path``, or in memory when ``path`` is None."""

    def __init__(self, path: Optional[str] = None, appendfsync: str = "everysec") -> None: ...
    def execute(self, *args: Arg) -> Any:
        """Runs any command; raises PionError on an error reply."""
    def close(self) -> None:
        """Flushes the log and releases the data directory."""
    def __enter__(self) -> "Engine": ...
    def __exit__(self, *exc: Any) -> bool: ...
