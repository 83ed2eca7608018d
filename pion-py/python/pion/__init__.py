"""Pion, a memory engine for AI inference.

``pion.Engine(path)`` runs the engine in this process (no server), durable in
``path``; ``engine.execute(*args)`` runs any command and returns Python values.
"""

from ._pion import Engine, PionError, __version__

__all__ = ["Engine", "PionError", "__version__"]
