"""pion.mlx.PionPromptCache(attention="server"): the prefix's K/V stays in Pion and
every attention call merges the server's prefix attention (ATTEND.QUERY) with the
client's own suffix attention. Greedy decoding must give exactly the tokens of local
attention after a cold prefill, on random-weight Llama-style models with GQA ratios 2
and 4, embedded and over the wire, while the client holds only the suffix's K/V."""

import mlx.core as mx
import numpy as np
import pytest

import pion
import pion.mlx
from pion.mlx import random_models
from pion.mlx.server_attention import ServerAttentionCache, local_kv_bytes

BLOCK = 64
STEP = 128
PREFIX = [(i * 37 + 11) % 500 + 1 for i in range(300)]
PREFIX2 = PREFIX[:200] + [(i * 13 + 5) % 500 + 1 for i in range(90)]
QUESTION = [5, 9, 11, 42, 7]
TOKENS = 32


@pytest.fixture(scope="module", params=[2, 4], ids=["gqa2", "gqa4"])
def case(request):
    """(model, cold tokens after PREFIX, cold tokens after PREFIX2)."""
    # f32: the server attends in f32; an f16 model would differ from mlx's f16 attention
    # in the last bits and flip a near-tie of the random model's logits.
    model = random_models.llama(seed=5, kv_heads=2, gqa=request.param, dtype=mx.float32)
    cold = random_models.greedy(model, PREFIX + QUESTION, tokens=TOKENS)
    cold2 = random_models.greedy(model, PREFIX2 + QUESTION, tokens=TOKENS)
    # A model that ignores its context would make equality prove nothing.
    assert cold != cold2 and len(set(cold)) > 4
    return model, cold, cold2


def answer(model, cache):
    return random_models.greedy(model, QUESTION, cache=cache, tokens=TOKENS)


def prompt_cache(model, **kw):
    return pion.mlx.PionPromptCache(
        model, block_tokens=BLOCK, prefill_step_size=STEP, attention="server", **kw
    )


def test_server_attention_decodes_as_local_attention_embedded(case):
    model, cold, cold2 = case
    with pion.Engine() as engine:
        store = prompt_cache(model, engine=engine)
        caches = store.get_or_prefill(PREFIX)
        assert store.last["route"] == "miss" and store.last["via"] == "server"
        assert all(isinstance(c, ServerAttentionCache) for c in caches)
        assert all(c.offset == len(PREFIX) and c.local == 0 for c in caches)
        assert answer(model, caches) == cold
        # The client held only the suffix: QUESTION and the generated tokens (mlx-lm
        # computes one step ahead of what it yields).
        assert all(len(QUESTION) + TOKENS - 1 <= c.local <= len(QUESTION) + TOKENS for c in caches)
        held = local_kv_bytes(caches)
        local = pion.mlx.PionPromptCache(model, engine=engine, block_tokens=BLOCK, prefill_step_size=STEP)
        full = local.get_or_prefill(PREFIX)
        assert answer(model, full) == cold
        local_bytes = local_kv_bytes(full)
        assert held * 1.5 < local_bytes, (held, local_bytes)
        # A hit attends the stored prefix without fetching it.
        caches = store.get_or_prefill(PREFIX)
        assert store.last["route"] == "hit" and store.last["prefilled"] == 0
        assert answer(model, caches) == cold
        # A partial hit: the rest is prefilled and stored, then viewed whole.
        caches = store.get_or_prefill(PREFIX2)
        assert store.last["route"] == "partial" and store.last["matched"] == 192
        assert answer(model, caches) == cold2
        info = engine.execute("INFO", "attention").decode()
        assert "attend_layer_queries:" in info and "attend_views:" in info
        queries = int(info.split("attend_layer_queries:")[1].split()[0])
        assert queries >= 3 * TOKENS * len(model.layers)


def test_server_attention_over_the_wire(case, pion_server):
    model, cold, _ = case
    store = prompt_cache(model, port=pion_server.port, lane_port=pion_server.lane)
    assert answer(model, store.get_or_prefill(PREFIX)) == cold
    assert answer(model, store.get_or_prefill(PREFIX)) == cold
    assert store.last["route"] == "hit"


def test_views_are_dropped_with_their_caches():
    model = random_models.llama(seed=6)
    with pion.Engine() as engine:
        store = prompt_cache(model, engine=engine)
        caches = store.get_or_prefill(PREFIX)

        def views():
            info = engine.execute("INFO", "attention").decode()
            return int(info.split("attend_views:")[1].split()[0])

        assert views() == 1
        del caches
        import gc

        gc.collect()
        assert views() == 0


def test_server_attention_refuses_models_it_cannot_serve():
    model = random_models.build("gemma3", seed=3)
    with pion.Engine() as engine:
        with pytest.raises(pion.PionError, match="full attention"):
            prompt_cache(model, engine=engine)
        with pytest.raises(pion.PionError, match="'local' or 'server'"):
            pion.mlx.PionPromptCache(random_models.llama(seed=1), engine=engine, attention="remote")


def test_merge_of_prefix_and_suffix_equals_attention_over_both():
    """ATTEND.QUERY's state merged with local suffix attention equals mlx's attention
    over the concatenated K/V (the algebra the cache relies on)."""
    model = random_models.llama(seed=7, dtype=mx.float32)
    with pion.Engine() as engine:
        store = prompt_cache(model, engine=engine)
        caches = store.get_or_prefill(PREFIX[:130])
        local = pion.mlx.PionPromptCache(model, engine=engine, block_tokens=BLOCK, prefill_step_size=STEP)
        full = local.get_or_prefill(PREFIX[:130])
        rng = np.random.default_rng(0)
        H, D, L = 4, 32, 3
        q = mx.array(rng.standard_normal((1, H, L, D)).astype(np.float32))
        k_new = mx.array(rng.standard_normal((1, 2, L, D)).astype(np.float32))
        v_new = mx.array(rng.standard_normal((1, 2, L, D)).astype(np.float32))
        keys, values = caches[0].update_and_fetch(k_new, v_new)
        got = caches[0].attend(q, keys, values, 0.2)
        all_k, all_v = full[0].update_and_fetch(k_new, v_new)
        want = mx.fast.scaled_dot_product_attention(q, all_k, all_v, scale=0.2, mask="causal")
        assert np.allclose(np.array(got), np.array(want), atol=2e-4)


def test_sparse_budget_covering_the_prefix_is_dense_and_a_small_one_attends_less(case):
    model, cold, _ = case
    with pion.Engine() as engine:
        whole = prompt_cache(model, engine=engine, sparse_budget=4096)
        assert answer(model, whole.get_or_prefill(PREFIX)) == cold
        small = prompt_cache(model, engine=engine, sparse_budget=128)
        tokens = answer(model, small.get_or_prefill(PREFIX))
        assert len(tokens) == TOKENS
        info = engine.execute("INFO", "attention").decode()
        sparse = int(info.split("attend_sparse_queries:")[1].split()[0])
        assert sparse >= 2 * TOKENS * len(model.layers)
        with pytest.raises(pion.PionError, match="sparse_budget"):
            pion.mlx.PionPromptCache(model, engine=engine, sparse_budget=128)
