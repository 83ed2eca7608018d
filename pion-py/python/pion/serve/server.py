"""Putting ``pion serve`` together: model, prompt store, worker, application, uvicorn.

:class:`Options` is everything the command line sets; :func:`build` loads the model
on the worker thread and connects the prompt cache (the embedded engine in a data
directory, or a shared pion-server); :class:`Server` runs the application with
uvicorn, in the foreground (the command) or on a thread (tests, embedding). Start-up
failures are :class:`StartupError`\\ s with one line of text.
"""

import dataclasses
import os
import socket
import threading
import time
from typing import Any, Callable, Optional

from .app import Service, create_app
from .cache import PromptCache
from .worker import Generator, Worker

__all__ = ["Options", "StartupError", "build", "Server"]


class StartupError(Exception):
    """Why the server cannot start, shown without a traceback: one line, the first
    non-empty line of the message it is given (a library's error text may run over
    several, as the Hugging Face Hub's do)."""

    def __init__(self, message: str):
        lines = [line.strip() for line in str(message).splitlines() if line.strip()]
        super().__init__(lines[0] if lines else "unknown error")


@dataclasses.dataclass
class Options:
    """What ``pion serve`` is told (see ``pion serve --help``)."""

    model: str
    host: str = "127.0.0.1"
    port: int = 8080
    server: Optional[str] = None
    lane_port: Optional[int] = None
    data: str = "pion-data"
    kv_bits: Optional[int] = None
    max_tokens: int = 8192
    api_key: Optional[str] = None
    block_tokens: int = 256
    prefill_step: int = 512
    session_bytes: int = 4 << 30
    keepalive: float = 5.0
    name: Optional[str] = None
    namespace: str = "serve"


def _model_path(spec: str) -> str:
    local = os.path.expanduser(spec)
    if os.path.exists(local):
        if not os.path.isfile(os.path.join(local, "config.json")):
            raise StartupError(f"{spec}: not a model folder (no config.json)")
        return local
    looks_like_repo = spec.count("/") == 1 and not spec.startswith((".", "/", "~"))
    if not looks_like_repo:
        raise StartupError(f"{spec}: no such model folder")
    return spec


def _store(opts: Options) -> "tuple[dict, str]":
    """Keyword arguments for PionPromptCache, and where the cache lives (in words)."""
    import pion

    if opts.server:
        host, _, port = opts.server.rpartition(":")
        if not host or not port.isdigit():
            raise StartupError(f"--server {opts.server}: expected HOST:PORT")
        try:
            with socket.create_connection((host, int(port)), timeout=3):
                pass
            client = pion.connect(host, int(port))
            client.execute("PING")
            client.close()
        except OSError as e:
            raise StartupError(f"cannot reach pion-server at {opts.server}: {e.strerror or e}") from None
        except pion.PionError as e:
            raise StartupError(f"pion-server at {opts.server} refused PING: {e}") from None
        lane = opts.lane_port or int(port) + 1
        try:
            with socket.create_connection((host, lane), timeout=3):
                pass
        except OSError as e:
            raise StartupError(f"cannot reach the binary lane of pion-server at {host}:{lane} ({e.strerror or e}); "
                               "pass --lane-port if the server was started with --kvcache-port") from None
        return {"host": host, "port": int(port), "lane_port": lane}, f"pion-server at {opts.server} (lane {lane})"
    try:
        engine = pion.Engine(opts.data)
    except pion.PionError as e:
        raise StartupError(f"cannot open the embedded engine in {opts.data}: {e}") from None
    return {"engine": engine}, f"embedded engine in {os.path.abspath(opts.data)}"


def build(opts: Options, generator: Optional[Generator] = None) -> Service:
    """Loads everything and returns the service (its worker started)."""
    if opts.kv_bits not in (None, 4, 8):
        raise StartupError("--kv-bits must be 4 or 8")
    if opts.prefill_step % opts.block_tokens:
        raise StartupError("--prefill-step must be a multiple of --block-tokens")
    path = _model_path(opts.model)
    store_kw, where = _store(opts)

    # mlx-lm (and the Hugging Face libraries under it) imported here, on the main
    # thread: imported first on the worker thread, a failed load often ends with the
    # interpreter aborting at exit ("terminate called without an active exception")
    # instead of the command's exit status 1.
    from mlx_lm import load as mlx_load

    def load() -> Any:
        from ..mlx import PionPromptCache

        try:
            model, tokenizer = mlx_load(path)
        except Exception as e:
            raise StartupError(f"cannot load the model {opts.model}: {type(e).__name__}: {e}") from None
        try:
            pion_cache = PionPromptCache(model, block_tokens=opts.block_tokens, kv_bits=opts.kv_bits,
                                         prefill_step_size=opts.prefill_step, **store_kw)
            cache = PromptCache(pion_cache, opts.session_bytes, opts.namespace)
        except Exception as e:
            raise StartupError(f"cannot set up the prompt cache ({where}): {e}") from None
        return model, tokenizer, cache

    worker = Worker(load, generator, prefill_step=opts.prefill_step, kv_bits=opts.kv_bits)
    try:
        worker.start()
    except BaseException:
        # The data directory is free again for whoever tries next.
        engine = store_kw.get("engine")
        if engine is not None:
            engine.close()
        raise
    name = opts.name or os.path.basename(os.path.normpath(opts.model))
    return Service(worker, name, keepalive=opts.keepalive, max_tokens=opts.max_tokens,
                   api_key=opts.api_key, cache_where=where)


def describe(service: Service, opts: Options) -> str:
    """The start-up lines: what was loaded and where the cache lives."""
    from mlx.utils import tree_flatten

    w = service.worker
    model = w.model
    params = sum(p.size for _, p in tree_flatten(model.parameters()))
    pion = w.cache.pion
    kinds = sorted({s.kind for s in pion.slots})
    info = w.cache.info()
    lines = [
        f"model: {opts.model} ({getattr(model.args, 'model_type', type(model).__name__)}, "
        f"{len(model.layers)} layers, {params / 1e6:.1f}M parameters; layers: {', '.join(kinds)})",
        f"prompt cache: {service.cache_where}, namespace {info['namespace']}, blocks of {pion.block_tokens} "
        f"tokens, tier {pion.tier}; session memory {opts.session_bytes / (1 << 30):.2f} GiB",
    ]
    return "\n".join(lines)


class Server:
    """uvicorn serving ``service`` on ``host:port``."""

    def __init__(self, service: Service, host: str = "127.0.0.1", port: int = 8080):
        import uvicorn

        self.service, self.host, self.port = service, host, port
        config = uvicorn.Config(create_app(service), host=host, port=port, log_level="warning",
                                timeout_graceful_shutdown=2, access_log=False)
        self.uvicorn = uvicorn.Server(config)
        self.thread: Optional[threading.Thread] = None

    def run(self, on_listening: Optional[Callable[[], None]] = None) -> None:
        """Serves in the foreground until SIGINT/SIGTERM; ``on_listening`` is called
        (from a watcher thread) once the port accepts connections, so whoever waits
        for it never connects before the socket is bound."""
        if on_listening is not None:

            def watch() -> None:
                while not self.uvicorn.started:
                    if self.uvicorn.should_exit:
                        return
                    time.sleep(0.01)
                on_listening()

            threading.Thread(target=watch, name="pion-serve-listening", daemon=True).start()
        self.uvicorn.run()
        self.service.worker.stop()

    def start(self) -> "Server":
        """Serves on a thread; returns once the port accepts connections."""
        self.thread = threading.Thread(target=self.uvicorn.run, name="pion-serve-http", daemon=True)
        self.thread.start()
        deadline = time.time() + 30
        while not self.uvicorn.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise StartupError(f"the HTTP server did not start on {self.host}:{self.port}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Stops serving and ends the worker thread."""
        self.uvicorn.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=10)
        self.service.worker.stop()

    @property
    def url(self) -> str:
        """The base URL (without ``/v1``)."""
        return f"http://{self.host}:{self.port}"
