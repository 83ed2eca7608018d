"""pion serve through the unmodified openai and anthropic SDKs: every endpoint,
streaming and not, gives exactly the greedy reply of a cold mlx-lm run of the same
prompt — the first time, from the session cache, and from Pion after a restart —
and reports the cached prefix in each API's usage; errors come in each API's format."""

import json

import anthropic
import mlx.core as mx
import openai
import pytest
from mlx_lm import load
from mlx_lm.generate import generate_step

from pion.serve.output import OutputParser
from serve_support import BLOCK, Scripted, health, model_folder, request, start_server, stream_lines

MAX = 24
SYSTEM = "You are a careful assistant. " * 4
QUESTION = {
    "chat": "What is a prefix cache, in one line?",
    "completions": "The prompt cache keeps the K/V of a prefix so that",
    "responses": "Name three uses of a memory engine.",
    "messages": "Why does a restarted server answer fast?",
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return model_folder(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def reference(folder):
    """The model loaded apart from the server, for cold mlx-lm runs."""
    return load(folder)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return tmp_path_factory.mktemp("serve-data")


@pytest.fixture(scope="module")
def server(folder, data, free_port):
    srv = start_server(folder, data, free_port(), Scripted())
    yield srv
    srv.stop()


def cold(reference, prompt_ids, thinking=False):
    """(text, thinking) of mlx-lm's greedy reply to ``prompt_ids`` from a fresh cache."""
    model, tok = reference
    detok = tok.detokenizer
    for n, (t, _) in enumerate(generate_step(mx.array(prompt_ids), model, max_tokens=MAX)):
        t = int(t)
        if t in tok.eos_token_ids:
            break
        detok.add_token(t)
    detok.finalize()
    parser = OutputParser(tok, thinking=thinking)
    segs = parser.feed(detok.text) + parser.close()
    return "".join(s.text for s in segs if s.kind == "text"), "".join(s.text for s in segs if s.kind == "thinking")


def chat_ids(tok, messages):
    text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, enable_thinking=False)
    return tok.encode(text, add_special_tokens=False)


def oai(url):
    return openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)


def ant(url):
    return anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0)


# ---- one request per endpoint, streaming or not: (text, cached tokens) ----------------


def run_chat(url, stream):
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION["chat"]}]
    c = oai(url)
    if not stream:
        r = c.chat.completions.create(model="any", messages=messages, max_tokens=MAX, temperature=0)
        assert r.object == "chat.completion" and r.choices[0].finish_reason in ("stop", "length")
        assert r.usage.prompt_tokens == r.usage.total_tokens - r.usage.completion_tokens
        return r.choices[0].message.content or "", r.usage.prompt_tokens_details.cached_tokens
    chunks = list(c.chat.completions.create(model="any", messages=messages, max_tokens=MAX, temperature=0,
                                            stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-2].choices[0].finish_reason in ("stop", "length")
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    return text, chunks[-1].usage.prompt_tokens_details.cached_tokens


def run_completions(url, stream):
    c = oai(url)
    prompt = SYSTEM + QUESTION["completions"]
    if not stream:
        r = c.completions.create(model="any", prompt=prompt, max_tokens=MAX, temperature=0)
        assert r.object == "text_completion"
        return r.choices[0].text, r.usage.prompt_tokens_details.cached_tokens
    chunks = list(c.completions.create(model="any", prompt=prompt, max_tokens=MAX, temperature=0, stream=True,
                                       stream_options={"include_usage": True}))
    return "".join(ch.choices[0].text for ch in chunks if ch.choices), chunks[-1].usage.prompt_tokens_details.cached_tokens


def run_responses(url, stream):
    c = oai(url)
    kw = dict(model="any", instructions=SYSTEM, input=QUESTION["responses"], max_output_tokens=MAX, temperature=0)
    if not stream:
        r = c.responses.create(**kw)
        assert r.status in ("completed", "incomplete")
        return r.output_text, r.usage.input_tokens_details.cached_tokens
    events = list(c.responses.create(stream=True, **kw))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] in ("response.completed", "response.incomplete")
    assert [e.sequence_number for e in events] == list(range(len(events)))
    final = events[-1].response
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == final.output_text
    return text, final.usage.input_tokens_details.cached_tokens


def run_messages(url, stream):
    c = ant(url)
    kw = dict(model="any", max_tokens=MAX, system=[{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
              messages=[{"role": "user", "content": QUESTION["messages"]}], extra_body={"temperature": 0})
    if not stream:
        m = c.messages.create(**kw)
    else:
        with c.messages.stream(**kw) as s:
            m = s.get_final_message()
    assert m.stop_reason in ("end_turn", "max_tokens")
    text = "".join(b.text for b in m.content if b.type == "text")
    return text, m.usage.cache_read_input_tokens


RUNS = {"chat": run_chat, "completions": run_completions, "responses": run_responses, "messages": run_messages}


def prompt_of(tok, endpoint):
    if endpoint == "chat":
        return chat_ids(tok, [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION["chat"]}])
    if endpoint == "completions":
        return tok.encode(SYSTEM + QUESTION["completions"])
    return chat_ids(tok, [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION[endpoint]}])


def test_every_endpoint_gives_the_cold_greedy_reply_first_cached_and_after_restart(folder, tmp_path, reference, free_port):
    tok = reference[1]
    expected = {e: cold(reference, prompt_of(tok, e))[0] for e in RUNS}
    # A random model that ignores its prompt would make equality prove nothing.
    assert len(set(expected.values())) == len(expected)
    srv = start_server(folder, tmp_path / "restart", free_port())
    try:
        for e, run in RUNS.items():
            n = len(prompt_of(tok, e))
            for stream in (False, True):
                text, cached = run(srv.url, stream)
                assert text == expected[e], (e, stream)
            # The second request was served from the session cache: the whole prompt
            # but its last token.
            assert cached == n - 1, e
            assert health(srv.url)["last"]["source"] == "memory"
    finally:
        srv.stop()
    # A restarted server (same data directory) gets the block-aligned prefix from Pion.
    srv = start_server(folder, tmp_path / "restart", free_port())
    try:
        for e, run in RUNS.items():
            n = len(prompt_of(tok, e))
            text, cached = run(srv.url, stream=True)
            assert text == expected[e], e
            assert cached == (n - 1) // BLOCK * BLOCK, e
            last = health(srv.url)["last"]
            assert last["source"] == "pion" and last["prefilled_tokens"] == n - cached
    finally:
        srv.stop()


def test_models_health_and_query_strings(server):
    c = oai(server.url)
    assert [m.id for m in c.models.list().data] == [server.service.model_id]
    h = health(server.url)
    assert h["status"] == "ok" and "embedded engine" in h["cache"]
    # Claude Code posts to /v1/messages?beta=true; any model name is accepted.
    status, body = request("POST", server.url + "/v1/messages?beta=true", {
        "model": "claude-sonnet-4-5", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]})
    assert status == 200 and body["type"] == "message"


def test_count_tokens_matches_the_prompt(server, reference):
    tok = reference[1]
    n = ant(server.url).messages.count_tokens(
        model="any", system="sys", messages=[{"role": "user", "content": "count me"}]).input_tokens
    assert n == len(chat_ids(tok, [{"role": "system", "content": "sys"}, {"role": "user", "content": "count me"}]))


def test_volatile_billing_header_is_removed(server, reference):
    tok = reference[1]
    sys_blocks = [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.3; cc_entrypoint=cli; cch=4f2a1;"},
                  {"type": "text", "text": "You are a coding agent."}]
    n = ant(server.url).messages.count_tokens(model="any", system=sys_blocks,
                                              messages=[{"role": "user", "content": "q"}]).input_tokens
    assert n == len(chat_ids(tok, [{"role": "system", "content": "You are a coding agent."},
                                   {"role": "user", "content": "q"}]))


def test_sampling_parameters_are_honoured(server):
    c = oai(server.url)
    msgs = [{"role": "user", "content": "sample something"}]

    def once(**kw):
        return c.chat.completions.create(model="any", messages=msgs, max_tokens=12, **kw).choices[0].message.content

    # Same seed, same tokens; the seed changes them; max_tokens bounds the reply.
    a, b = once(temperature=1.0, seed=11), once(temperature=1.0, seed=11)
    assert a == b
    sampled = [once(temperature=1.0, seed=s) for s in (12, 13, 14)]
    assert any(x != a for x in sampled)
    r = c.chat.completions.create(model="any", messages=msgs, max_tokens=3, temperature=0)
    assert r.usage.completion_tokens == 3 and r.choices[0].finish_reason == "length"
    greedy = once(temperature=0)
    # top_p: a nucleus this small holds the most likely token alone, whatever the seed.
    assert any(x != greedy for x in sampled)
    assert [once(temperature=1.0, top_p=1e-6, seed=s) for s in (12, 13, 14)] == [greedy] * 3
    stop = greedy[4:6]
    r = c.chat.completions.create(model="any", messages=msgs, max_tokens=12, temperature=0, stop=[stop])
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].message.content == greedy[: greedy.index(stop)]
    m = ant(server.url).messages.create(model="any", max_tokens=12, messages=msgs, stop_sequences=[stop],
                                        extra_body={"temperature": 0})
    assert m.stop_reason == "stop_sequence" and m.stop_sequence == stop
    assert m.content[0].text == greedy[: greedy.index(stop)]

    # /v1/completions too, streamed and not.
    prompt = "Stop sequences end a completion early:"
    full = c.completions.create(model="any", prompt=prompt, max_tokens=12, temperature=0).choices[0].text
    stop = full[4:6]
    r = c.completions.create(model="any", prompt=prompt, max_tokens=12, temperature=0, stop=[stop])
    assert r.choices[0].finish_reason == "stop" and r.choices[0].text == full[: full.index(stop)]
    chunks = list(c.completions.create(model="any", prompt=prompt, max_tokens=12, temperature=0, stop=stop,
                                       stream=True))
    assert "".join(ch.choices[0].text for ch in chunks) == full[: full.index(stop)]
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_errors_come_in_each_apis_format(server):
    c, a = oai(server.url), ant(server.url)
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(model="any", messages=[], max_tokens=3)
    assert e.value.body["type"] == "invalid_request_error" and "messages" in e.value.body["message"]
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(model="any", messages=[{"role": "user", "content": "x"}], n=2)
    assert e.value.body["param"] == "n"
    with pytest.raises(openai.BadRequestError):
        c.responses.create(model="any", input="x", previous_response_id="resp_123")
    with pytest.raises(anthropic.BadRequestError) as e:
        a.messages.create(model="any", max_tokens=3, messages=[{"role": "robot", "content": "x"}])
    assert e.value.body["type"] == "error" and e.value.body["error"]["type"] == "invalid_request_error"
    status, body = request("POST", server.url + "/v1/messages", raw=b"{not json")
    assert status == 400 and body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    status, body = request("POST", server.url + "/v1/chat/completions", raw=b"[1]")
    assert status == 400 and body["error"]["type"] == "invalid_request_error" and body["error"]["param"] is None
    status, body = request("GET", server.url + "/v1/nothing")
    assert status == 404 and "error" in body
    status, body = request("GET", server.url + "/v1/messages")
    assert status == 405 and body["type"] == "error"


def test_api_key_is_checked(folder, tmp_path, free_port):
    srv = start_server(folder, tmp_path / "keyed", free_port(), api_key="sekret")
    try:
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=srv.url + "/v1", api_key="wrong", max_retries=0).models.list()
        with pytest.raises(anthropic.AuthenticationError) as e:
            anthropic.Anthropic(base_url=srv.url, api_key="wrong", max_retries=0).messages.create(
                model="any", max_tokens=2, messages=[{"role": "user", "content": "x"}])
        assert e.value.body["error"]["type"] == "authentication_error"
        assert openai.OpenAI(base_url=srv.url + "/v1", api_key="sekret").models.list().data
        r = anthropic.Anthropic(base_url=srv.url, api_key="sekret").messages.create(
            model="any", max_tokens=2, messages=[{"role": "user", "content": "x"}])
        assert r.usage.output_tokens == 2
    finally:
        srv.stop()


def test_raw_anthropic_stream_names_every_event(server):
    lines = stream_lines(server.url + "/v1/messages", {
        "model": "any", "max_tokens": 5, "stream": True, "temperature": 0,
        "messages": [{"role": "user", "content": "events"}]})
    events = [l[len("event: "):] for l in lines if l.startswith("event: ")]
    datas = [json.loads(l[len("data: "):]) for l in lines if l.startswith("data: ")]
    assert len(events) == len(datas) and all(d["type"] == e for e, d in zip(events, datas))
    assert events[0] == "message_start" and events[-2:] == ["message_delta", "message_stop"]
    assert "content_block_start" in events and "content_block_stop" in events
    out = datas[-2]["usage"]["output_tokens"]
    assert 1 <= out <= 5 and datas[-2]["delta"]["stop_reason"] == ("max_tokens" if out == 5 else "end_turn")
    assert datas[0]["message"]["usage"]["input_tokens"] >= datas[-2]["usage"]["input_tokens"]
