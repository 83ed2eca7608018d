"""pion.mlx.PionPromptCache with mlx-lm models built from random weights: every route
(miss, hit, partial hit, a second process, after SIGKILL, the export lane, the
embedded engine) must give exactly the greedy tokens of a cold prefill, for a
Llama-style model (KVCache), a Gemma-3-style one (RotatingKVCache, a window shorter
than the prefix) and two hybrids with recurrent state (ArraysCache): a Qwen3-Next-style
one and a Falcon-H1-style one whose layers hold CacheList(ArraysCache, KVCache)."""

import json
import os
import subprocess
import sys

import mlx.core as mx
import numpy as np
import pytest

import pion
import pion.mlx
from mlx_lm.models.cache import load_prompt_cache, make_prompt_cache
from pion.mlx import random_models

SEED = 3
BLOCK = 64
STEP = 128
PREFIX = [(i * 37 + 11) % 500 + 1 for i in range(300)]
# Shares the first three blocks (192 tokens) with PREFIX, then differs.
PREFIX2 = PREFIX[:200] + [(i * 13 + 5) % 500 + 1 for i in range(90)]
QUESTION = [5, 9, 11, 42, 7]
HERE = os.path.dirname(__file__)
HYBRIDS = ("qwen3_next", "falcon_h1")


@pytest.fixture(scope="module", params=["llama", "gemma3", "qwen3_next", "falcon_h1"])
def case(request):
    """(model name, model, cold tokens after PREFIX, cold tokens after PREFIX2)."""
    model = random_models.build(request.param, seed=SEED)
    cold = random_models.greedy(model, PREFIX + QUESTION)
    cold2 = random_models.greedy(model, PREFIX2 + QUESTION)
    # A random model that ignores its context would make equality prove nothing.
    assert cold != cold2
    assert len(set(cold)) > 4
    return request.param, model, cold, cold2


def answer(model, cache):
    return random_models.greedy(model, QUESTION, cache=cache)


def prompt_cache(model, **kw):
    return pion.mlx.PionPromptCache(model, block_tokens=BLOCK, prefill_step_size=STEP, **kw)


def test_kinds_of_layers(case):
    name, model, _, _ = case
    kinds = {s.kind for s in prompt_cache(model, engine=pion.Engine()).slots}
    assert kinds == {"llama": {"attention"}, "gemma3": {"attention", "sliding"},
                     "qwen3_next": {"attention", "recurrent"},
                     "falcon_h1": {"attention", "recurrent"}}[name]


def test_embedded_engine_routes(case, tmp_path):
    name, model, cold, cold2 = case
    with pion.Engine(str(tmp_path / "engine")) as engine:
        store = prompt_cache(model, engine=engine)
        assert answer(model, store.get_or_prefill(PREFIX)) == cold
        assert store.last["route"] == "miss" and store.last["prefilled"] == len(PREFIX)
        assert answer(model, store.get_or_prefill(PREFIX)) == cold
        assert store.last["route"] == "hit" and store.last["via"] == "engine"
        # The longest usable stored prefix is fetched, the rest prefilled: three full
        # blocks, or for the hybrid the last block with recurrent state (states are
        # kept at every prefill step and at the last full block of a prefix).
        assert answer(model, store.get_or_prefill(PREFIX2)) == cold2
        assert store.last["route"] == "partial"
        assert store.last["matched"] == (STEP if name in HYBRIDS else 192)
        assert answer(model, store.get_or_prefill(PREFIX2)) == cold2
        assert store.last["route"] == "hit"
    # Durable: a new engine on the same directory has the prefix.
    with pion.Engine(str(tmp_path / "engine")) as engine:
        store = prompt_cache(model, engine=engine)
        assert answer(model, store.get_or_prefill(PREFIX)) == cold
        assert store.last["route"] == "hit"


def second_process(name, server, prefix, export):
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "mlx_cache_client.py"), name, str(SEED),
         str(server.port), str(server.lane), "1" if export else "0", json.dumps(prefix),
         json.dumps(QUESTION), str(BLOCK), str(STEP)],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_server_routes(case, pion_server):
    name, model, cold, cold2 = case
    store = prompt_cache(model, port=pion_server.port, lane_port=pion_server.lane, export=False)
    assert answer(model, store.get_or_prefill(PREFIX, namespace="tests")) == cold
    assert store.last["route"] == "miss"

    # Another process, over the binary lane.
    got = second_process(name, pion_server, PREFIX, export=False)
    assert got["tokens"] == cold
    assert got["last"]["route"] == "hit" and got["last"]["via"] == "lane"

    # Another process, through the export lane (a file the server wrote).
    got = second_process(name, pion_server, PREFIX, export=True)
    assert got["tokens"] == cold
    assert got["last"]["route"] == "hit" and got["last"]["via"] == "export"

    # A partial hit from another process stores the new blocks for the next one.
    got = second_process(name, pion_server, PREFIX2, export=True)
    assert got["tokens"] == cold2 and got["last"]["route"] == "partial"

    # SIGKILL and restart: every acknowledged block is still there.
    pion_server.kill9()
    pion_server.start()
    for export in (False, True):
        store = prompt_cache(model, port=pion_server.port, lane_port=pion_server.lane, export=export)
        assert answer(model, store.get_or_prefill(PREFIX, namespace="tests")) == cold
        assert store.last["route"] == "hit"
        assert answer(model, store.get_or_prefill(PREFIX2, namespace="tests")) == cold2
        assert store.last["route"] == "hit"
        assert store.last["via"] == ("export" if export else "lane")


@pytest.mark.parametrize("bits", [4, 8])
def test_quantised_tiers_match_mlx_lm_quantized_cache(bits):
    model = random_models.build("llama", seed=SEED)
    # mlx-lm's own QuantizedKVCache holding the prefix, at the same bits.
    ref = make_prompt_cache(model)
    random_models.greedy(model, PREFIX, cache=ref, tokens=0, prefill_step_size=STEP)
    ref = [c.to_quantized(group_size=32, bits=bits) for c in ref]
    expected = random_models.greedy(model, QUESTION, cache=ref)

    store = prompt_cache(model, engine=pion.Engine(), kv_bits=bits)
    miss = store.get_or_prefill(PREFIX)
    assert answer(model, miss) == expected
    hit = store.get_or_prefill(PREFIX)
    assert store.last["route"] == "hit"
    assert type(hit[0]).__name__ == "QuantizedKVCache" and hit[0].bits == bits
    # The stored tier bytes are mlx's own: the arrays are bit-identical.
    for a, b in zip(ref, hit):
        for x, y in zip(a.keys + a.values, b.keys + b.values):
            n = b.offset
            assert np.array_equal(np.array(x[..., :n, :]), np.array(y[..., :n, :]))
    assert answer(model, hit) == expected
    # A partial hit continues from the stored (quantised) blocks, as mlx-lm continues
    # from its own quantised cache of the shared part.
    partial = store.get_or_prefill(PREFIX2)
    assert store.last["route"] == "partial" and store.last["matched"] == 192
    ref = _quantised_ref(model, PREFIX2[:192], bits)
    assert answer(model, partial) == random_models.greedy(model, PREFIX2[192:] + QUESTION, cache=ref)


def _quantised_ref(model, prefix, bits):
    ref = make_prompt_cache(model)
    random_models.greedy(model, prefix, cache=ref, tokens=0, prefill_step_size=STEP)
    return [c.to_quantized(group_size=32, bits=bits) for c in ref]


def test_namespace_is_derived_from_the_model():
    engine = pion.Engine()
    a = prompt_cache(random_models.build("llama", seed=1), engine=engine)
    same = prompt_cache(random_models.build("llama", seed=1), engine=engine)
    other_weights = prompt_cache(random_models.build("llama", seed=2), engine=engine)
    other_shape = prompt_cache(random_models.build("llama", seed=1, layers=3), engine=engine)
    quantised = prompt_cache(random_models.build("llama", seed=1), engine=engine, kv_bits=4)
    tuned = random_models.build("llama", seed=1)
    norm = tuned.model.layers[1].input_layernorm
    norm.weight = norm.weight * 1.5  # one small parameter in the middle of the model
    tuned = prompt_cache(tuned, engine=engine)
    names = [c.namespace("app") for c in (a, same, other_weights, other_shape, quantised, tuned)]
    assert names[0] == names[1]
    assert len(set(names)) == 5
    assert a.namespace("app") != a.namespace("other-app")
    a.get_or_prefill(PREFIX, namespace="app")
    # A model with other weights never receives these K/V.
    other_weights.get_or_prefill(PREFIX, namespace="app")
    assert other_weights.last["route"] == "miss"


def test_export_file_is_read_by_mlx_lm(pion_server):
    model = random_models.build("llama", seed=SEED)
    cold = random_models.greedy(model, PREFIX + QUESTION)
    store = prompt_cache(model, port=pion_server.port, lane_port=pion_server.lane)
    store.get_or_prefill(PREFIX, namespace="export-file")
    ns = store.namespace("export-file")
    n, path = store.store.execute("KV.EXPORT", ns, pion.pack_tokens(PREFIX), "LAYOUT", pion.mlx.mlx_lm_layout())
    assert n == len(PREFIX)
    # mlx-lm's own loader reads the server's file and the model answers as cold.
    cache, meta = load_prompt_cache(path.decode(), return_metadata=True)
    assert meta["pion_tokens"] == str(len(PREFIX))
    assert answer(model, cache) == cold


def test_legacy_mlx_lm_layout(pion_server):
    legacy = os.environ.get("PION_LEGACY_MLX_LM")
    if not legacy:
        pytest.skip("PION_LEGACY_MLX_LM (a pre-0.32.2 mlx-lm cache module) is not set")
    sys.path.insert(0, legacy)
    from mlx_lm_legacy.models.cache import load_prompt_cache as legacy_load

    model = random_models.build("llama", seed=SEED)
    store = prompt_cache(model, port=pion_server.port, lane_port=pion_server.lane)
    cache = store.get_or_prefill(PREFIX, namespace="legacy")
    ns = store.namespace("legacy")
    _, path = store.store.execute("KV.EXPORT", ns, pion.pack_tokens(PREFIX), "LAYOUT", "mlx-lm-legacy")
    old = legacy_load(path.decode())
    assert [type(c).__name__ for c in old] == ["KVCache"] * len(cache)
    for a, b in zip(old, cache):
        assert a.offset == b.offset == len(PREFIX)
        n = b.offset
        assert np.array_equal(np.array(a.keys[..., :n, :]), np.array(b.keys[..., :n, :]))
        assert np.array_equal(np.array(a.values[..., :n, :]), np.array(b.values[..., :n, :]))


@pytest.mark.parametrize(
    "make, n",
    [
        (lambda: __import__("mlx_lm.models.cache", fromlist=["x"]).RotatingKVCache(max_size=40, keep=4), 257),
        (lambda: __import__("mlx_lm.models.cache", fromlist=["x"]).RotatingKVCache(max_size=40), 100),
        (lambda: __import__("mlx_lm.models.cache", fromlist=["x"]).ChunkedKVCache(chunk_size=48), 300),
    ],
)
def test_shadow_replay_rebuilds_what_a_prefill_leaves(make, n):
    """A sliding or chunked cache rebuilt from per-token rows equals, array for array
    and counter for counter, the cache a prefill fed chunk by chunk (including a
    one-token chunk, which RotatingKVCache handles in place)."""
    from pion.mlx import _build
    from pion.mlx._layout import Slot

    step = 128
    cuts = _build.schedule(n, step, 64, False)
    rng = np.random.default_rng(n)
    k = rng.standard_normal((1, 2, n, 32)).astype(np.float16)
    v = rng.standard_normal((1, 2, n, 32)).astype(np.float16)
    fed, at = make(), 0
    for end in cuts:
        if type(fed).__name__ == "ChunkedKVCache":
            fed.maybe_trim_front()
        fed.update_and_fetch(mx.array(k[:, :, at:end]), mx.array(v[:, :, at:end]))
        at = end
    slot = Slot((0,), type(fed).__name__, "sliding", 2, 32, 40)
    rows = _build.Rows(slot, n, "f16", None)
    for a in range(0, n, 64):
        b = min(a + 64, n)
        rows.put(a, b - a, _build.block_payload(k[0], v[0], a, b))
    built = _build.fill_leaf(make(), slot, rows, n, cuts)
    for attr in ("offset", "_idx", "keep", "max_size", "start_position"):
        assert getattr(built, attr, None) == getattr(fed, attr, None), attr
    end = fed.offset - getattr(fed, "start_position", 0) if hasattr(fed, "start_position") else fed.keys.shape[2]
    assert np.array_equal(np.array(built.keys[..., :end, :]), np.array(fed.keys[..., :end, :]))
    assert np.array_equal(np.array(built.values[..., :end, :]), np.array(fed.values[..., :end, :]))
