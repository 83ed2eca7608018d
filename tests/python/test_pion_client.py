"""`pion.connect()` against a real pion-server, and the prompt-cache operations with the
same results through the embedded engine and over the wire (RESP and binary lane)."""

import numpy as np
import pytest

import pion
from conftest import PionServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc = PionServerProcess(tmp_path_factory.mktemp("pion-client-data")).start()
    yield proc.port, proc.lane
    proc.stop()


MANIFEST = {
    "model": "client-test",
    "block_tokens": 8,
    "dtype": "f16",
    "layers": [
        {"kind": "attention", "kv_heads": 2, "head_dim": 16},
        {"kind": "recurrent", "state_bytes": 32},
    ],
}


def _store(cache, ns, tokens):
    """Stores a sequence the way a client does: match first, send the rest."""
    cache.register(ns, MANIFEST)
    _, have = cache.match(ns, tokens)
    ids = cache.block_ids(ns, tokens)
    for i in range(len(have), len(ids)):
        chunk = tokens[i * 8 : (i + 1) * 8]
        kv = np.arange(2 * 2 * len(chunk) * 16, dtype=np.float16) + i
        state = np.full(8, float(i), dtype=np.float32)
        got = cache.store_block(ns, ids[i - 1] if i else None, chunk, [kv, state])
        assert got == ids[i]
    return ids


def test_engine_and_server_agree(server, tmp_path):
    port, lane = server
    tokens = np.arange(100, 124, dtype=np.uint32)
    with pion.Engine(str(tmp_path / "e")) as engine, pion.connect(
        port=port, lane_port=lane
    ) as client:
        ids_engine = _store(engine, "c", tokens)
        ids_client = _store(client, "c", tokens)
        assert ids_engine == ids_client
        assert engine.match("c", tokens) == client.match("c", tokens) == (24, ids_client)
        for i, block in enumerate(ids_client):
            assert engine.fetch("c", block) == client.fetch("c", block)
        # The binary lane returns the same bytes as RESP.
        many = client.fetch_many("c", ids_client)
        assert many == [client.fetch("c", b) for b in ids_client]
        tokens0, layers = many[0]
        assert tokens0 == 8
        np.testing.assert_array_equal(
            np.frombuffer(layers[0], dtype=np.float16),
            np.arange(2 * 2 * 8 * 16, dtype=np.float16),
        )
        assert client.info("c")["blocks"] == 3


def test_errors_are_pion_errors(server):
    port, lane = server
    with pion.connect(port=port, lane_port=lane) as client:
        with pytest.raises(pion.PionError, match="unknown namespace"):
            client.match("nope", [1, 2])
        with pytest.raises(pion.PionError, match="unknown namespace"):
            client.fetch_many("nope", ["0" * 32])
        assert client.execute("PING") == "PONG"
