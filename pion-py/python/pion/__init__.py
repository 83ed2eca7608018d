"""Pion, a memory engine for AI inference.

``pion.Engine(path)`` runs the engine in this process (no server), durable in
``path``; ``pion.connect(host, port)`` talks to a running pion-server. Both have
``execute(*args)`` for any command and the prompt-cache operations (``register``,
``store_block``, ``match``, ``fetch`` …).
"""

from . import _pion
from ._ops import PrefixOps, pack_tokens
from ._pion import PionError, __version__
from .client import Client, connect


class Engine(_pion.Engine, PrefixOps):
    """The embedded engine: durable in ``path``, or in memory when ``path`` is None."""


__all__ = ["Engine", "Client", "connect", "PionError", "PrefixOps", "pack_tokens", "__version__"]
