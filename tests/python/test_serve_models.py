"""pion serve with other cache layouts: hybrid models (gated-delta-net layers with
recurrent state, Qwen3-Next-style; Mamba layers beside attention, Falcon-H1-style), a
sliding-window one (Gemma-3-style) and quantised K/V (--kv-bits 4 and 8). Greedy
replies stay the cold ones from memory and from Pion after a restart, and a hybrid's
next turn resumes from the session cache or the block-boundary state. A session
memory budget too small for any conversation leaves every next request to Pion."""

import mlx.core as mx
import openai
import pytest
from mlx_lm import load
from mlx_lm.generate import generate_step

from serve_support import BLOCK, STEP, Scripted, health, model_folder, settled, start_server

MAX = 16
SYSTEM = "Layers of several kinds keep this prompt. " * 3


def _ask(url, messages):
    r = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0).chat.completions.create(
        model="any", messages=messages, max_tokens=MAX, temperature=0)
    return r.choices[0].message.content, r.usage.prompt_tokens, r.usage.prompt_tokens_details.cached_tokens


def _cold(folder, messages):
    model, tok = load(folder)
    ids = tok.encode(tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False,
                                             enable_thinking=False), add_special_tokens=False)
    detok = tok.detokenizer
    for t, _ in generate_step(mx.array(ids), model, max_tokens=MAX):
        if int(t) in tok.eos_token_ids:
            break
        detok.add_token(int(t))
    detok.finalize()
    return detok.text


@pytest.mark.parametrize("arch", ["qwen3_next", "falcon_h1", "gemma3"])
def test_hybrid_and_sliding_models(arch, tmp_path_factory, tmp_path, free_port):
    folder = model_folder(tmp_path_factory.mktemp("models"), arch)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"Hello {arch}."}]
    expected = _cold(folder, messages)
    gen = Scripted()
    srv = start_server(folder, tmp_path / "d", free_port(), gen)
    try:
        text, n, cached = _ask(srv.url, messages)
        assert text == expected and cached == 0
        text, n, cached = _ask(srv.url, messages)
        assert text == expected
        # Neither recurrent state nor a sliding window that has wrapped can be trimmed
        # back to the prompt: the stored block boundary before its end is the resume
        # point.
        assert health(srv.url)["last"]["source"] == "pion" and cached == (n - 1) // BLOCK * BLOCK
        # A next turn whose history is the reply as generated resumes from memory.
        gen.scripts = ["Short reply.", "Another one."]
        _, n2, _ = _ask(srv.url, messages + [{"role": "user", "content": "Turn two."}])
        turn2 = messages + [{"role": "user", "content": "Turn two."},
                            {"role": "assistant", "content": "Short reply."},
                            {"role": "user", "content": "Turn three."}]
        _, n3, cached3 = _ask(srv.url, turn2)
        last = health(srv.url)["last"]
        # Everything up to the end of the reply is reused: only the new turn is prefilled.
        reply = len(srv.service.tokenizer.encode("Short reply.", add_special_tokens=False))
        assert last["source"] == "memory" and cached3 == n2 + reply
    finally:
        srv.stop()
    srv = start_server(folder, tmp_path / "d", free_port())
    try:
        text, n, cached = _ask(srv.url, messages)
        assert text == expected and cached == (n - 1) // BLOCK * BLOCK
        assert health(srv.url)["last"]["source"] == "pion"
    finally:
        srv.stop()


def _quantised(folder, messages, bits, at):
    """The greedy reply when the first ``at`` prompt tokens are prefilled in full
    precision (in the server's chunks), K/V then quantised to ``bits`` (group size
    32), the rest prefilled and the reply decoded over the quantised K/V: what the
    server computes cold (``at``: the prompt but its last token) and when it resumes
    from the stored tier (``at``: the cached prefix)."""
    from mlx_lm.models.cache import make_prompt_cache

    model, tok = load(folder)
    ids = tok.encode(tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False,
                                             enable_thinking=False), add_special_tokens=False)
    cache = make_prompt_cache(model)
    for a in range(0, at, STEP):
        model(mx.array(ids[a:min(a + STEP, at)])[None], cache=cache)
    cache = [c.to_quantized(group_size=32, bits=bits) for c in cache]
    if at < len(ids) - 1:
        model(mx.array(ids[at:-1])[None], cache=cache)
    y, detok = ids[-1], tok.detokenizer
    for _ in range(MAX):
        y = int(mx.argmax(model(mx.array([[y]]), cache=cache)[:, -1, :], axis=-1).item())
        if y in tok.eos_token_ids:
            break
        detok.add_token(y)
    detok.finalize()
    return detok.text


@pytest.mark.parametrize("bits", [4, 8])
def test_quantised_kv(bits, tmp_path_factory, tmp_path, free_port):
    folder = model_folder(tmp_path_factory.mktemp("models"))
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Quantised?"}]
    srv = start_server(folder, tmp_path / "q", free_port(), kv_bits=bits)
    try:
        first, n, _ = _ask(srv.url, messages)
        assert first == _quantised(folder, messages, bits, n - 1)
        again, _, cached = _ask(srv.url, messages)
        assert again == first and cached == n - 1
        info = health(srv.url)["prompt_cache"]
        assert info["stored_blocks"] > 0
    finally:
        srv.stop()
    srv = start_server(folder, tmp_path / "q", free_port(), kv_bits=bits)
    try:
        text, n, cached = _ask(srv.url, messages)
        # The restarted server reads the tier back (QuantizedKVCache from the stored
        # codes, those mlx's own quantisation gives) and goes on from there. (At 8
        # bits that is the first reply again; at 4 bits, the rest of the prompt
        # prefilled over quantised K/V can change a random model's greedy choice.)
        assert cached == (n - 1) // BLOCK * BLOCK and text == _quantised(folder, messages, bits, cached)
        if bits == 8:
            assert text == first
        assert srv.service.worker.cache.pion.tier == {4: "q4", 8: "int8"}[bits]
    finally:
        srv.stop()


def test_a_session_memory_budget_too_small_evicts(tmp_path_factory, tmp_path, free_port):
    folder = model_folder(tmp_path_factory.mktemp("models"))
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Evicted?"}]
    srv = start_server(folder, tmp_path / "budget", free_port(), session_bytes=1)
    try:
        first, n, _ = _ask(srv.url, messages)
        info = settled(srv.url)["prompt_cache"]
        assert info["evictions"] == 1 and info["entries"] == 0 and info["memory_bytes"] == 0
        again, _, cached = _ask(srv.url, messages)
        last = health(srv.url)["last"]
        # Nothing in memory: the stored prefix comes from Pion, and the reply is the same.
        assert last["source"] == "pion" and cached >= (n - 1) // BLOCK * BLOCK > 0 and again == first
        assert last["prefilled_tokens"] == n - cached
        assert settled(srv.url)["prompt_cache"]["evictions"] == 2
    finally:
        srv.stop()
