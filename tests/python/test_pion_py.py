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


def test_the_embedded_engine_counts_the_memory_it_holds():
    def memory(e):
        text = e.execute("INFO", "memory")
        text = text.decode() if isinstance(text, bytes) else text
        return dict(l.split(":", 1) for l in text.splitlines() if ":" in l)

    with pion.Engine() as e:
        assert memory(e)["mem_allocator"].startswith("mimalloc-")
        before = int(memory(e)["used_memory"])
        for i in range(2000):
            e.execute("SET", f"k{i}", b"x" * 1000)
        grown = int(memory(e)["used_memory"]) - before
        # The values, and what holds them: counted by the allocator, not estimated.
        assert grown >= 2000 * 1000
        e.execute("FLUSHALL")
        assert int(memory(e)["used_memory"]) < before + grown // 4


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


def test_layers_cross_without_copies_and_views_outlive_the_block(tmp_path):
    import numpy as np

    manifest = {
        "model": "zc",
        "block_tokens": 4,
        "layers": [
            {"kind": "attention", "kv_heads": 2, "head_dim": 8},
            {"kind": "recurrent", "state_bytes": 12},
        ],
    }
    for path in (None, str(tmp_path / "data")):
        with pion.Engine(path) as e:
            e.register("zc", manifest)
            rng = np.random.default_rng(7)
            # K then V, [kv_heads, tokens, head_dim] each, f16.
            kv = rng.standard_normal((2, 2, 4, 8)).astype(np.float16)
            state = np.arange(3, dtype=np.float32)
            first = e.store_block("zc", None, [1, 2, 3, 4], [kv, state])
            # A strided (non-contiguous) array is stored too, through one copy.
            wide = rng.standard_normal((2, 2, 4, 16)).astype(np.float16)
            second = e.store_block("zc", first, [5, 6, 7, 8], [wide[..., ::2], b""])
            n, (k_v, st) = e.fetch("zc", first)
            assert n == 4 and isinstance(k_v, memoryview) and k_v.readonly
            assert np.array_equal(np.frombuffer(k_v, dtype=np.float16).reshape(kv.shape), kv)
            assert np.array_equal(np.frombuffer(st, dtype=np.float32), state)
            assert k_v == kv.tobytes()
            with pytest.raises(TypeError):
                k_v[0] = 1
            [(_, got), (_, (again, none))] = e.fetch_many("zc", [second, first], [0, 1])
            assert np.array_equal(np.frombuffer(got[0], np.float16), wide[..., ::2].ravel())
            assert got[1] is None and again == k_v and none == st
            assert e.fetch("zc", first, [1]) == (4, [state.tobytes()])
            # The view keeps the store's bytes alive after the block is gone.
            e.execute("KV.DROP", "zc")
            assert np.array_equal(np.frombuffer(k_v, np.float16).reshape(kv.shape), kv)
            with pytest.raises(pion.PionError, match="no namespace|not registered|unknown"):
                e.fetch("zc", first)
            e.register("zc", manifest)
            with pytest.raises(pion.PionError, match="expected 256 bytes"):
                e.store_block("zc", None, [1, 2, 3, 4], [kv[:1], state])
        with pytest.raises(pion.PionError, match="closed"):
            e.store_block("zc", None, [1, 2, 3, 4], [kv, state])


def embed_model_dir():
    """The all-MiniLM-L6-v2 folder the test command installs (PION_EMBED_MODEL)."""
    import os

    d = os.environ.get("PION_EMBED_MODEL")
    if not d or not os.path.isfile(os.path.join(d, "model.safetensors")):
        pytest.skip("PION_EMBED_MODEL names no model folder (scripts/test.sh sets it)")
    return d


def test_embedded_engine_embeds_and_caches_with_a_model(tmp_path):
    import numpy as np

    with pion.Engine(str(tmp_path / "data"), embed_model=embed_model_dir()) as e:
        blobs = e.execute("AI.EMBED", "What is the capital of France?", "capital of France?")
        a, b = (np.frombuffer(x, dtype=np.float32) for x in blobs)
        assert a.shape == (384,)
        assert abs(float(np.linalg.norm(a)) - 1.0) < 1e-4
        assert float(a @ b) > 0.9
        assert e.execute("AI.SEMANTIC_CACHE", "SET", "qa", "capital of France?", "Paris") == "OK"
        hit = e.execute("AI.SEMANTIC_CACHE", "GET", "qa", "What is the capital of France?")
        assert hit[0] == b"Paris" and 0.9 < float(hit[1]) < 1.0
        assert e.execute("AI.SEMANTIC_CACHE", "GET", "qa", "Best pizza toppings for a party") is None
    # Without a model the commands say so; a folder that does not load fails the open.
    with pytest.raises(pion.PionError, match="model"):
        pion.Engine().execute("AI.EMBED", "x")
    with pytest.raises(pion.PionError, match="embedding model"):
        pion.Engine(embed_model=str(tmp_path / "no-such-model"))
