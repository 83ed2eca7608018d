"""The ``pion`` command; ``pion serve`` starts the model server.

``pion serve --model PATH_OR_REPO`` loads an mlx-lm model and serves the OpenAI and
Anthropic APIs on ``--host``/``--port`` with its prompt cache in Pion: the embedded
engine in ``--data`` (``./pion-data``) unless ``--server HOST:PORT`` names a running
pion-server to share. Failures to start (a missing model, an unreachable server, a
data directory in use) are one line on stderr and exit status 1.
"""

import argparse
import re
import sys
from typing import List, Optional

__all__ = ["main", "parser"]


def _size(text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgG]?)(i?[bB])?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 512M, 4G)")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


def _positive(text: str) -> int:
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return v


def parser() -> argparse.ArgumentParser:
    """The command line (``pion serve …``)."""
    p = argparse.ArgumentParser(prog="pion", description="Pion, a memory engine for AI inference.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="serve a model over the OpenAI and Anthropic APIs, its prompt cache in Pion",
                       description="An OpenAI- and Anthropic-compatible model server (mlx-lm) whose prompt cache "
                                   "lives in Pion.")
    s.add_argument("--model", required=True, help="model folder or Hugging Face repository (mlx-lm format)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8080, help="port to listen on (default 8080)")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--server", metavar="HOST:PORT", help="share the prompt cache of a running pion-server")
    where.add_argument("--data", metavar="DIR", default="pion-data",
                       help="embedded engine's data directory (default ./pion-data)")
    s.add_argument("--lane-port", type=_positive,
                   help="binary lane port of the pion-server (its --kvcache-port; default: its port + 1)")
    s.add_argument("--kv-bits", type=int, choices=(4, 8), help="keep K/V quantised (mlx's 4- or 8-bit layout)")
    s.add_argument("--max-tokens", type=_positive, default=8192,
                   help="most tokens in one reply; also the default when a request names none (default 8192)")
    s.add_argument("--api-key", help="require this key (x-api-key or Authorization: Bearer)")
    s.add_argument("--block-tokens", type=_positive, default=256, help="tokens per stored block (default 256)")
    s.add_argument("--prefill-step", type=_positive, default=512,
                   help="prefill chunk in tokens, a multiple of --block-tokens (default 512)")
    s.add_argument("--session-memory", type=_size, default="4G",
                   help="byte budget of live conversations kept in memory (default 4G)")
    s.add_argument("--keepalive", type=float, default=5.0,
                   help="seconds of silence after which a stream gets a keep-alive event (default 5)")
    s.add_argument("--name", help="model name reported by /v1/models (default: the folder's name)")
    return p


def _check_port(host: str, port: int) -> None:
    import socket

    from .server import StartupError

    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
    except OSError as e:
        raise StartupError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the ``pion`` console script."""
    args = parser().parse_args(argv)
    if args.command != "serve":
        return 2
    try:
        from .server import Options, Server, StartupError, build, describe
    except ImportError as e:  # the web stack is an extra
        print(f"pion serve: {e.name or e} is missing; install the serve extra: pip install 'pion[serve]' "
              "(from a checkout: pip install './pion-py[serve]')", file=sys.stderr)
        return 1

    if args.lane_port and not args.server:
        print("pion serve: --lane-port needs --server", file=sys.stderr)
        return 1
    opts = Options(model=args.model, host=args.host, port=args.port, server=args.server, data=args.data,
                   lane_port=args.lane_port,
                   kv_bits=args.kv_bits, max_tokens=args.max_tokens, api_key=args.api_key,
                   block_tokens=args.block_tokens, prefill_step=args.prefill_step,
                   session_bytes=args.session_memory, keepalive=args.keepalive, name=args.name)
    try:
        _check_port(opts.host, opts.port)
        service = build(opts)
        print(describe(service, opts), flush=True)
        server = Server(service, opts.host, opts.port)
    except StartupError as e:
        print(f"pion serve: {e}", file=sys.stderr)
        return 1
    def listening() -> None:
        print(f"listening on http://{opts.host}:{opts.port} (OpenAI: http://{opts.host}:{opts.port}/v1, "
              f"Anthropic: http://{opts.host}:{opts.port})", flush=True)

    # The line is printed once the socket accepts connections: scripts (and the tests)
    # connect as soon as they read it.
    server.run(on_listening=listening)
    return 0


if __name__ == "__main__":
    sys.exit(main())
