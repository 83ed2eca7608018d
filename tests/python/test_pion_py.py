"""The `pion` Python package: the embedded engine in-process, durable in a directory."""

import pytest

import pion


def test_commands_and_errors(tmp_path):
    with pion.Engine(str(tmp_path / "data")) as e:
        assert e.execute("SET", "k", b"v\x00\r\n") == "OK"
        assert e.execute("GET", "k") == b"v\x00\r\n"
        assert e.execute("INCRBY", "n", 5) == 5
        assert e.execute("RPUSH", "l", "a", "b") == 2
        assert e.execute("LRANGE", "l", 0, -1) == [b"a", b"b"]
        assert e.execute("GET", "missing") is None
        with pytest.raises(pion.PionError, match="WRONGTYPE"):
            e.execute("INCR", "l")
        with pytest.raises(pion.PionError, match="unknown command"):
            e.execute("NOPE")


def test_data_survives_reopening_and_the_directory_is_locked(tmp_path):
    path = str(tmp_path / "data")
    e = pion.Engine(path)
    e.execute("HSET", "h", "f", "1")
    with pytest.raises(pion.PionError, match="in use by another process"):
        pion.Engine(path)
    e.close()
    with pytest.raises(pion.PionError, match="closed"):
        e.execute("PING")
    with pion.Engine(path) as again:
        assert again.execute("HGET", "h", "f") == b"1"


def test_in_memory_engine_and_prompt_cache_commands():
    import json
    import struct

    e = pion.Engine()
    manifest = {
        "model": "py",
        "block_tokens": 4,
        "layers": [{"kind": "attention", "kv_heads": 1, "head_dim": 8}],
    }
    assert e.execute("KV.REGISTER", "py", json.dumps(manifest)) == "OK"
    tokens = struct.pack("<4I", 1, 2, 3, 4)
    layer = bytes(range(128))
    block = e.execute("KV.PUT", "py", "root", tokens, layer)
    assert e.execute("KV.MATCH", "py", tokens) == [4, [block]]
    assert e.execute("KV.GET", "py", block) == [4, layer]
    # The typed operations over the same commands.
    assert e.match("py", [1, 2, 3, 4]) == (4, [block.decode()])
    assert e.fetch("py", block.decode()) == (4, [layer])
    assert pion.pack_tokens([1, 2, 3, 4]) == tokens
    assert pion.__version__
