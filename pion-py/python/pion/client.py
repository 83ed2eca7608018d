"""A client for a running pion-server: RESP on its port for every command, and the
binary lane (port + 1) for bulk block fetches, with the same interface as the embedded
``pion.Engine``."""

import socket
import struct
from typing import Any, List, Optional, Sequence, Tuple

from ._ops import PrefixOps, Tokens, pack_tokens
from ._pion import PionError

_MAGIC = 0xCA5E


def _encode(args: Sequence[Any]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        elif not isinstance(a, bytes):
            a = bytes(memoryview(a))
        out.append(b"$%d\r\n" % len(a))
        out.append(a)
        out.append(b"\r\n")
    return b"".join(out)


def _send_parts(sock: socket.socket, parts: List[Any]) -> None:
    """Sends every buffer in order with vectored writes (``sendmsg`` may send part)."""
    views = [memoryview(p).cast("B") for p in parts]
    while views:
        sent = sock.sendmsg(views[:512])
        while sent:
            if sent >= views[0].nbytes:
                sent -= views[0].nbytes
                views.pop(0)
            else:
                views[0] = views[0][sent:]
                sent = 0
        while views and views[0].nbytes == 0:
            views.pop(0)


class _Reader:
    def __init__(self, sock: socket.socket) -> None:
        self.f = sock.makefile("rb", buffering=1 << 20)

    def exact(self, n: int) -> bytes:
        data = self.f.read(n)
        if data is None or len(data) < n:
            raise ConnectionError("pion-server closed the connection")
        return data

    def reply(self) -> Any:
        line = self.f.readline()
        if not line:
            raise ConnectionError("pion-server closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise PionError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.exact(n + 2)
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            if n < 0:
                return None
            return [self.reply() for _ in range(n)]
        raise PionError("unexpected reply %r" % line)


class Client(PrefixOps):
    """A connection to pion-server (use :func:`connect`)."""

    def __init__(self, host: str, port: int, password: Optional[str], lane_port: Optional[int]):
        self.host = host
        self.lane_port = port + 1 if lane_port is None else lane_port
        self.password = password
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = _Reader(self.sock)
        self.lane: Optional[socket.socket] = None
        if password is not None:
            self.execute("AUTH", password)

    def execute(self, *args: Any) -> Any:
        """Runs any command; raises PionError on an error reply."""
        if not args:
            raise PionError("execute() needs a command")
        self.sock.sendall(_encode(args))
        return self.reader.reply()

    def _lane_call(self, op: int, *body: Any) -> memoryview:
        """One binary-lane request (its body in parts, sent without joining them);
        the reply body as a view of one buffer the socket filled directly."""
        if self.lane is None:
            self.lane = socket.create_connection((self.host, self.lane_port))
            self.lane.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.password is not None:
                self._lane_call(0x02, self.password.encode())
        size = sum(memoryview(b).nbytes for b in body)
        _send_parts(self.lane, [struct.pack("<HBI", _MAGIC, op, size), *body])
        head = self._lane_exact(7)
        magic, rop, n = struct.unpack("<HBI", head)
        data = self._lane_exact(n) if n else memoryview(b"")
        if rop == 0xFF:
            raise PionError(bytes(data).decode())
        return data

    def _lane_exact(self, n: int) -> memoryview:
        assert self.lane is not None
        view = memoryview(bytearray(n))
        got = 0
        while got < n:
            k = self.lane.recv_into(view[got:])
            if k == 0:
                raise ConnectionError("the binary lane closed the connection")
            got += k
        return view

    def store_block(
        self,
        namespace: str,
        parent: Optional[str],
        tokens: Tokens,
        layers: Sequence[Any],
    ) -> str:
        """Stores one block over the binary lane (the layers' buffers are sent as they
        are, without copies); returns its id."""
        ns = namespace.encode()
        packed = pack_tokens(tokens)
        parent_id = 0 if parent is None else int(parent, 16)
        head = [
            struct.pack("<H", len(ns)) + ns + parent_id.to_bytes(16, "little"),
            struct.pack("<I", len(packed) // 4) + packed + struct.pack("<I", len(layers)),
        ]
        parts: List[Any] = head
        for layer in layers:
            view = memoryview(layer).cast("B") if not isinstance(layer, bytes) else layer
            parts += [struct.pack("<Q", len(view)), view]
        reply = self._lane_call(0x11, *parts)
        return "%032x" % int.from_bytes(bytes(reply), "little")

    def fetch_many(
        self, namespace: str, block_ids: Sequence[str], layers: Optional[Sequence[int]] = None
    ) -> List[Tuple[int, List[Optional[memoryview]]]]:
        """Several blocks in one binary-lane round trip; each layer is a view into the
        one reply buffer (no copy), or None for absent recurrent state."""
        ns = namespace.encode()
        body = struct.pack("<H", len(ns)) + ns + struct.pack("<I", len(block_ids))
        body += b"".join(int(b, 16).to_bytes(16, "little") for b in block_ids)
        wanted = list(layers or [])
        body += struct.pack("<I", len(wanted)) + b"".join(struct.pack("<I", l) for l in wanted)
        data = self._lane_call(0x13, body)
        (count,) = struct.unpack_from("<I", data)
        at = 4
        out = []
        for _ in range(count):
            tokens, nl = struct.unpack_from("<II", data, at)
            at += 8
            layer_data: List[Optional[memoryview]] = []
            for _ in range(nl):
                present = data[at]
                at += 1
                if present:
                    (n,) = struct.unpack_from("<Q", data, at)
                    at += 8
                    layer_data.append(data[at : at + n])
                    at += n
                else:
                    layer_data.append(None)
            out.append((tokens, layer_data))
        return out

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
        """``ATTEND.QUERY`` over the binary lane (the queries' buffer sent as it is):
        the output and the log-sum-exp per row, as numpy f32 arrays viewing the one
        reply buffer."""
        import numpy as np

        ns, name = namespace.encode(), view.encode()
        q = memoryview(queries).cast("B")
        head = struct.pack("<H", len(ns)) + ns + struct.pack("<H", len(name)) + name
        head += struct.pack("<IfII", positions, float(scale), budget or 0, 1)
        head += struct.pack("<II", layer, q.nbytes // 4)
        data = self._lane_call(0x14, head, q)
        (layers,) = struct.unpack_from("<I", data)
        if layers != 1:
            raise PionError(f"ATTEND answered {layers} layers, asked for 1")
        rows, head_dim, _tokens, _blocks = struct.unpack_from("<IIQQ", data, 4)
        at = 28
        out = np.frombuffer(data, dtype="<f4", count=rows * head_dim, offset=at)
        lse = np.frombuffer(data, dtype="<f4", count=rows, offset=at + 4 * rows * head_dim)
        return out, lse

    def close(self) -> None:
        """Closes both connections."""
        for s in (self.sock, self.lane):
            if s is not None:
                s.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.close()
        return False


def connect(
    host: str = "127.0.0.1",
    port: int = 1974,
    password: Optional[str] = None,
    lane_port: Optional[int] = None,
) -> Client:
    """Connects to pion-server (its binary lane is on ``port + 1`` unless given)."""
    return Client(host, port, password, lane_port)
