"""What coding agents need from pion serve, with a scripted token stream (a random
model never writes a tool call): tool calls in each API's shape, thinking blocks,
tool results in the history, a multi-turn conversation that prefills only its new
tokens, cancellation when the client goes away, and keep-alives during a slow
prefill."""

import http.client
import json
import threading
import time
import urllib.parse

import anthropic
import openai
import pytest

from pion.serve import anthropic_api
from pion.serve.cache import common_prefix
from pion.serve.testmodel import CHAT_TEMPLATE
from serve_support import BLOCK, Scripted, health, model_folder, settled, start_server

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
TOOLS_OPENAI = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
TOOLS_ANTHROPIC = [{"name": "get_weather", "description": "Weather of a city",
                    "input_schema": TOOLS_OPENAI[0]["function"]["parameters"]}]
TOOLS_RESPONSES = [{"type": "function", "name": "get_weather", "description": "Weather of a city",
                    "parameters": TOOLS_OPENAI[0]["function"]["parameters"]}]


# A template that refuses to render a conversation ending on an assistant turn without
# a generation prompt: the cache cannot re-render a reply with it.
REFUSES_FINAL_REPLY = ("{%- if not add_generation_prompt and messages[-1].role == 'assistant' %}"
                       "{{ raise_exception('no final assistant turn without a generation prompt') }}{%- endif %}"
                       + CHAT_TEMPLATE)
# Qwen3's way: an assistant turn's reasoning is rendered only after the last user
# message, so the next request rewrites the previous reply without it.
QWEN3_STYLE = ("{%- set ns = namespace(last_user=-1) %}{%- for m in messages %}{%- if m.role == 'user' %}"
               "{%- set ns.last_user = loop.index0 %}{%- endif %}{%- endfor %}"
               + CHAT_TEMPLATE.replace("{% if message.reasoning_content %}",
                                       "{% if message.reasoning_content and loop.index0 > ns.last_user %}"))
assert QWEN3_STYLE.count("ns.last_user") == 2  # the replacement took place


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return model_folder(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def gen():
    return Scripted()


@pytest.fixture(scope="module")
def server(folder, tmp_path_factory, free_port, gen):
    srv = start_server(folder, tmp_path_factory.mktemp("agent-data"), free_port(), gen)
    yield srv
    srv.stop()


def oai(url):
    return openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)


def ant(url):
    return anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0)


ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def test_chat_completions_tool_calls(server, gen):
    c = oai(server.url)
    gen.scripts = ["Let me check." + CALL]
    r = c.chat.completions.create(model="any", messages=ASK, tools=TOOLS_OPENAI, max_tokens=200)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content == "Let me check."
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.id.startswith("call_") and call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}

    # Streamed: tool_calls deltas (id and name first, then the arguments), which the
    # SDK's own accumulator puts back together.
    gen.scripts = ["Let me check." + CALL]
    with c.chat.completions.stream(model="any", messages=ASK, tools=TOOLS_OPENAI, max_tokens=200,
                                   stream_options={"include_usage": True}) as s:
        deltas = [e.chunk for e in s if e.type == "chunk"]
        final = s.get_final_completion()
    tool_deltas = [d.choices[0].delta.tool_calls for d in deltas if d.choices and d.choices[0].delta.tool_calls]
    assert tool_deltas[0][0].id and tool_deltas[0][0].function.name == "get_weather"
    assert final.choices[0].finish_reason == "tool_calls"
    assert final.choices[0].message.tool_calls[0].function.arguments == '{"city": "Paris"}'
    assert final.usage.completion_tokens == len(gen.tokenizer.encode("Let me check." + CALL)) + 1

    # The call and its result in the history render through the template.
    history = ASK + [{"role": "assistant", "content": "Let me check.", "tool_calls": [
        {"id": call.id, "type": "function", "function": {"name": "get_weather", "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"}]
    gen.scripts = ["It is sunny."]
    r = c.chat.completions.create(model="any", messages=history, tools=TOOLS_OPENAI, max_tokens=50)
    assert r.choices[0].message.content == "It is sunny." and r.choices[0].finish_reason == "stop"
    assert r.usage.prompt_tokens_details.cached_tokens > 0


def test_responses_function_call_events(server, gen):
    c = oai(server.url)
    gen.scripts = ["Checking." + CALL]
    with c.responses.stream(model="any", input="Weather in Paris?", tools=TOOLS_RESPONSES,
                            max_output_tokens=200) as s:
        events = list(s)
        final = s.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    for k in ("response.output_item.added", "response.content_part.added", "response.output_text.delta",
              "response.output_text.done", "response.function_call_arguments.delta",
              "response.function_call_arguments.done", "response.output_item.done"):
        assert k in kinds, k
    msg, call = final.output
    assert msg.type == "message" and msg.content[0].text == "Checking."
    assert call.type == "function_call" and call.name == "get_weather" and call.call_id.startswith("call_")
    assert json.loads(call.arguments) == {"city": "Paris"}
    assert final.usage.input_tokens_details.cached_tokens >= 0

    # Not streamed: the same two output items.
    gen.scripts = ["Checking." + CALL]
    r = c.responses.create(model="any", input="Weather in Paris?", tools=TOOLS_RESPONSES, max_output_tokens=200)
    assert r.status == "completed" and [o.type for o in r.output] == ["message", "function_call"]
    assert r.output[0].content[0].text == "Checking."
    nc = r.output[1]
    assert nc.name == "get_weather" and nc.call_id.startswith("call_") and nc.status == "completed"
    assert json.loads(nc.arguments) == {"city": "Paris"}

    # Codex sends the call and its output back as input items.
    gen.scripts = ["Sunny."]
    r = c.responses.create(model="any", tools=TOOLS_RESPONSES, max_output_tokens=50, input=[
        {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
        {"type": "function_call", "call_id": call.call_id, "name": "get_weather", "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}])
    assert r.status == "completed" and r.output_text == "Sunny."
    # The previous reply re-renders as sent: only the new input is prefilled.
    assert r.usage.input_tokens_details.cached_tokens > r.usage.input_tokens // 2


def test_anthropic_tool_use_and_thinking(server, gen):
    a = ant(server.url)
    gen.scripts = ["I will look it up." + CALL]
    with a.messages.stream(model="any", max_tokens=200, tools=TOOLS_ANTHROPIC, messages=ASK) as s:
        events = [e.type for e in s]
        m = s.get_final_message()
    assert m.stop_reason == "tool_use"
    text, use = m.content
    assert text.type == "text" and text.text == "I will look it up."
    assert use.type == "tool_use" and use.name == "get_weather" and use.input == {"city": "Paris"}
    assert use.id.startswith("toolu_")
    assert "input_json" in events
    # Not streamed: the same blocks and stop reason.
    gen.scripts = ["I will look it up." + CALL]
    m = a.messages.create(model="any", max_tokens=200, tools=TOOLS_ANTHROPIC, messages=ASK)
    assert m.stop_reason == "tool_use" and [b.type for b in m.content] == ["text", "tool_use"]
    assert m.content[0].text == "I will look it up."
    assert m.content[1].name == "get_weather" and m.content[1].input == {"city": "Paris"}

    # Thinking on: the template opens a thinking block, which comes back as one.
    gen.scripts = ["The user wants weather.</think>\n\nIt is sunny."]
    m = a.messages.create(model="any", max_tokens=2000, messages=ASK, thinking={"type": "enabled", "budget_tokens": 1024})
    assert [b.type for b in m.content] == ["thinking", "text"]
    assert m.content[0].thinking == "The user wants weather." and m.content[1].text == "It is sunny."
    gen.scripts = ["Plan.</think>\n\nAnswer."]
    with a.messages.stream(model="any", max_tokens=2000, messages=ASK, thinking={"type": "enabled", "budget_tokens": 1024}) as s:
        m = s.get_final_message()
    assert m.content[0].type == "thinking" and m.content[0].thinking == "Plan." and m.content[1].text == "Answer."

    # The budget is honoured: thinking that runs past it is closed there, and the
    # reply goes on as text.
    gen.scripts = ["x" * 1500 + "</think>\n\nDone."]
    m = a.messages.create(model="any", max_tokens=1800, messages=ASK, thinking={"type": "enabled", "budget_tokens": 1024})
    assert [b.type for b in m.content] == ["thinking", "text"]
    assert m.content[0].thinking == "x" * 1024
    # A budget the API would refuse is refused.
    for bad in ({"type": "enabled", "budget_tokens": 100}, {"type": "enabled"}):
        with pytest.raises(anthropic.BadRequestError):
            a.messages.create(model="any", max_tokens=2000, messages=ASK, thinking=bad)
    with pytest.raises(anthropic.BadRequestError):
        a.messages.create(model="any", max_tokens=1024, messages=ASK, thinking={"type": "enabled", "budget_tokens": 1024})

    # OpenAI: reasoning_content, when a reasoning effort is asked for.
    gen.scripts = ["Plan.</think>\n\nAnswer."]
    r = oai(server.url).chat.completions.create(model="any", messages=ASK, reasoning_effort="medium", max_tokens=50)
    assert r.choices[0].message.content == "Answer."
    assert r.choices[0].message.model_extra["reasoning_content"] == "Plan."


def _prompt_ids(server, body):
    conv, _ = anthropic_api.conversation_from(body)
    return conv.render(server.service.tokenizer)


def test_multi_turn_prefills_only_new_tokens(server, gen, folder, tmp_path, free_port):
    """Turn after turn (text, a tool call, its result) only the new tokens are
    prefilled, from memory and after a restart."""
    srv = start_server(folder, tmp_path / "turns", free_port(), gen)
    system = "You are a coding agent working in a repository. " * 6
    replies = ["I will read the file." + CALL, "The file says hello.", "Done: renamed it."]
    users = [[{"type": "text", "text": "Read main.py please."}], None, [{"type": "text", "text": "Now rename it."}]]
    messages = []
    previous = last = None
    try:
        for turn, reply in enumerate(replies):
            if turn == 1:
                use = last.content[-1]
                messages.append({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": use.id, "content": "print('hello')"}]})
            else:
                messages.append({"role": "user", "content": users[turn]})
            body = {"system": system, "messages": messages, "tools": TOOLS_ANTHROPIC, "max_tokens": 200}
            prompt = _prompt_ids(srv, body)
            gen.scripts = [reply]
            last = ant(srv.url).messages.create(model="any", **body)
            h = health(srv.url)["last"]
            if previous is not None:
                new = len(prompt) - common_prefix(prompt, previous)
                assert h["prefilled_tokens"] == new, (turn, h)
                assert last.usage.cache_read_input_tokens == len(prompt) - new
            assert h["prompt_tokens"] == len(prompt)
            messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in last.content]})
            # What the cache should hold: this prompt and the reply, as generated.
            previous = prompt + gen.tokenizer.encode(reply, add_special_tokens=False)
    finally:
        srv.stop()
    # A restarted server: the stored block-aligned prefix, then the rest.
    srv = start_server(folder, tmp_path / "turns", free_port(), gen)
    try:
        messages.append({"role": "user", "content": "And commit."})
        body = {"system": system, "messages": messages, "tools": TOOLS_ANTHROPIC, "max_tokens": 200}
        prompt = _prompt_ids(srv, body)
        gen.scripts = ["Committed."]
        m = ant(srv.url).messages.create(model="any", **body)
        h = health(srv.url)["last"]
        new = len(prompt) - common_prefix(prompt, previous)
        assert h["source"] == "pion"
        # Full blocks alone would leave up to a block to prefill again; the stored
        # tail (the last, partial block) makes it exactly the new tokens.
        assert new <= h["prefilled_tokens"] <= new + BLOCK
        assert h["prefilled_tokens"] == new and health(srv.url)["prompt_cache"]["tail_hits"] == 1
        assert m.usage.cache_read_input_tokens == h["cached_tokens"] == len(prompt) - new
    finally:
        srv.stop()


@pytest.mark.parametrize("route", ["chat", "completions", "responses"])
def test_disconnect_cancels_generation(server, gen, route):
    gen.token_delay = 0.05
    # A scripted reply longer than max_tokens: the random model could end its reply
    # at any token (its end-of-turn token), and the job would then finish, not be
    # cancelled; this one runs for 20 s unless cancelled.
    gen.scripts = ["x" * 1000]
    try:
        before = health(server.url)["stats"]["cancelled"]
        c = oai(server.url)
        if route == "chat":
            stream = c.chat.completions.create(model="any", messages=[{"role": "user", "content": "go on forever"}],
                                               max_tokens=400, stream=True)
        elif route == "completions":
            stream = c.completions.create(model="any", prompt="Go on forever:", max_tokens=400, stream=True)
        else:
            stream = c.responses.create(model="any", input="go on forever", max_output_tokens=400, stream=True)
        # Four chunks or events in, the reply's text is streaming.
        for i, _ in enumerate(stream):
            if i == 3:
                break
        stream.close()
        deadline = time.time() + 15
        while time.time() < deadline:
            h = health(server.url)
            if h["stats"]["cancelled"] > before:
                break
            time.sleep(0.05)
        assert h["stats"]["cancelled"] == before + 1
        assert h["last"]["finish"] == "cancelled" and h["last"]["completion_tokens"] < 100
    finally:
        gen.token_delay = 0.0
        gen.scripts = []
    # The server goes on serving.
    assert c.chat.completions.create(model="any", messages=ASK, max_tokens=2).usage.completion_tokens <= 2


def test_non_streaming_disconnect_cancels_too(server, gen):
    gen.token_delay = 0.05
    gen.scripts = ["x" * 1000]  # as above: it runs for 20 s unless cancelled
    try:
        before = health(server.url)["stats"]["cancelled"]
        u = urllib.parse.urlsplit(server.url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        conn.request("POST", "/v1/messages", body=json.dumps({
            "model": "any", "max_tokens": 400, "messages": [{"role": "user", "content": "a long answer"}]}).encode(),
            headers={"content-type": "application/json"})
        time.sleep(0.5)
        conn.close()  # gone before the reply
        deadline = time.time() + 15
        while time.time() < deadline and health(server.url)["stats"]["cancelled"] == before:
            time.sleep(0.05)
        h = health(server.url)
        assert h["stats"]["cancelled"] == before + 1 and h["last"]["completion_tokens"] < 100
    finally:
        gen.token_delay = 0.0
        gen.scripts = []


def test_a_failing_generation_is_an_error_in_each_format(server, gen):
    gen.fail = "the model broke"
    try:
        with pytest.raises(anthropic.APIStatusError) as e:
            with ant(server.url).messages.stream(model="any", max_tokens=5, messages=ASK) as s:
                s.get_final_message()
        assert "the model broke" in str(e.value)
        with pytest.raises(anthropic.InternalServerError) as e:
            ant(server.url).messages.create(model="any", max_tokens=5, messages=ASK)
        assert e.value.body["error"]["type"] == "api_error"
        with pytest.raises(openai.APIError) as e:
            list(oai(server.url).chat.completions.create(model="any", messages=ASK, max_tokens=5, stream=True))
        assert "the model broke" in str(e.value)
        with pytest.raises(openai.InternalServerError):
            oai(server.url).chat.completions.create(model="any", messages=ASK, max_tokens=5)
        events = list(oai(server.url).responses.create(model="any", input="x", max_output_tokens=5, stream=True))
        assert events[-1].type == "response.failed" and "the model broke" in events[-1].response.error.message
    finally:
        gen.fail = None
    assert oai(server.url).chat.completions.create(model="any", messages=ASK, max_tokens=2).choices


def _timed_lines(url, body):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    conn.request("POST", u.path, body=json.dumps(body).encode(), headers={"content-type": "application/json"})
    r = conn.getresponse()
    out = []
    for line in r:
        line = line.decode().strip()
        if line:
            out.append((time.monotonic(), line))
    conn.close()
    return out


@pytest.mark.parametrize("path,body,keepalive", [
    ("/v1/messages", {"max_tokens": 2, "stream": True}, "event: ping"),
    ("/v1/responses", {"max_output_tokens": 2, "stream": True}, "event: response.in_progress"),
    ("/v1/chat/completions", {"max_tokens": 2, "stream": True}, ": keep-alive"),
    ("/v1/completions", {"max_tokens": 2, "stream": True}, ": keep-alive"),
])
def test_slow_prefill_is_kept_alive(server, gen, path, body, keepalive):
    gen.prefill_delay = 0.4
    server.service.keepalive = 0.1
    try:
        text = f"A long prompt for a slow prefill at {path}. " * 8  # several prefill chunks, never cached
        if path == "/v1/responses":
            body = dict(body, input=text)
        elif path == "/v1/completions":
            body = dict(body, prompt=text)
        else:
            body = dict(body, messages=[{"role": "user", "content": text}])
        t0 = time.monotonic()
        lines = _timed_lines(server.url + path, dict(body, model="any"))
    finally:
        gen.prefill_delay = 0.0
        server.service.keepalive = 5.0
    assert lines[-1][0] - t0 > 1.0  # the prefill took a while
    assert sum(1 for _, l in lines if l == keepalive) >= 4
    gaps = [b[0] - a[0] for a, b in zip([(t0, "")] + lines, lines)]
    assert max(gaps) < 0.45


THINK = {"type": "enabled", "budget_tokens": 1024}


def test_a_reply_the_template_cannot_render_keeps_the_prompt(tmp_path_factory, tmp_path, free_port):
    folder = model_folder(tmp_path_factory.mktemp("models"), template=REFUSES_FINAL_REPLY, tag="refuses")
    gen = Scripted()
    srv = start_server(folder, tmp_path / "refuses", free_port(), gen)
    system = "You are a coding agent working in a repository. " * 3
    try:
        first = [{"role": "user", "content": "Read main.py please."}]
        gen.scripts = ["It prints hello."]
        ant(srv.url).messages.create(model="any", system=system, messages=first, max_tokens=50)
        h = settled(srv.url)
        last = h["last"]
        assert "raise_exception" not in last["rerender_error"] and "generation prompt" in last["rerender_error"]
        # The prompt is kept, in memory and in Pion, though the reply is not.
        assert last["kept_tokens"] >= last["prompt_tokens"] > BLOCK and h["prompt_cache"]["stored_blocks"] > 0
        second = first + [{"role": "assistant", "content": "It prints hello."},
                          {"role": "user", "content": "Rename it."}]
        gen.scripts = ["Done."]
        m = ant(srv.url).messages.create(model="any", system=system, messages=second, max_tokens=50)
        h2 = settled(srv.url)["last"]
        assert h2["source"] == "memory" and m.usage.cache_read_input_tokens == last["prompt_tokens"]
        assert h2["prefilled_tokens"] == h2["prompt_tokens"] - last["prompt_tokens"]
    finally:
        srv.stop()


def test_a_rerender_that_drops_the_prompts_thinking_keeps_the_prompt(server, gen):
    """The generation prompt opens a thinking block; a reply without thinking
    re-renders without it, so the re-render differs inside the prompt."""
    body = {"system": "Think before you answer. " * 4, "max_tokens": 1100, "thinking": THINK,
            "messages": [{"role": "user", "content": "Which file holds main()?"}]}
    prompt = _prompt_ids(server, body)
    assert server.service.tokenizer.decode(prompt[-2:]) == "<think>\n"
    gen.scripts = ["</think>\n\nmain.py."]
    m = ant(server.url).messages.create(model="any", **body)
    assert [b.type for b in m.content] == ["text"]
    last = settled(server.url)["last"]
    assert last["prompt_tokens"] == len(prompt) and last["kept_tokens"] >= len(prompt)
    # The same request again starts from the whole prompt (but its last token).
    gen.scripts = ["</think>\n\nmain.py."]
    m = ant(server.url).messages.create(model="any", **body)
    assert m.usage.cache_read_input_tokens == len(prompt) - 1
    assert settled(server.url)["last"]["source"] == "memory"


def test_a_template_that_rewrites_earlier_turns(tmp_path_factory, tmp_path, free_port):
    """Qwen3-style: the previous reply's reasoning is gone from the next request, so
    the next turn reuses the longest common prefix of what the cache holds."""
    folder = model_folder(tmp_path_factory.mktemp("models"), template=QWEN3_STYLE, tag="qwen3-style")
    gen = Scripted()
    srv = start_server(folder, tmp_path / "rewrites", free_port(), gen)
    system = "You are a coding agent working in a repository. " * 3
    try:
        body = {"system": system, "max_tokens": 1100, "thinking": THINK,
                "messages": [{"role": "user", "content": "Read main.py please."}]}
        p1 = _prompt_ids(srv, body)
        gen.scripts = ["Look at it.</think>\n\nIt prints hello."]
        m = ant(srv.url).messages.create(model="any", **body)
        assert [b.type for b in m.content] == ["thinking", "text"]
        kept = settled(srv.url)["last"]["kept_tokens"]
        # The re-rendered reply keeps its reasoning (it is the last turn).
        assert kept > len(p1)
        body["messages"] = body["messages"] + [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in m.content]},
            {"role": "user", "content": "Rename it."}]
        p2 = _prompt_ids(srv, body)
        shared = common_prefix(p1, p2)
        assert "Look at it" not in srv.service.tokenizer.decode(p2) and shared < len(p1)
        gen.scripts = ["</think>\n\nDone."]
        m = ant(srv.url).messages.create(model="any", **body)
        last = settled(srv.url)["last"]
        # The session cache is trimmed back to where the two renderings part.
        assert last["source"] == "memory" and m.usage.cache_read_input_tokens == shared
        assert last["prefilled_tokens"] == len(p2) - shared
    finally:
        srv.stop()


def test_requests_queue_in_arrival_order(server, gen):
    """Three requests at once: each waits for the ones that came before it, and
    /health counts those waiting."""
    gen.token_delay = 0.06
    gen.scripts = ["first reply", "second reply", "third reply"]  # taken in the order the jobs run
    replies, finished, queued = {}, [], []
    lock = threading.Lock()

    def ask(i):
        r = oai(server.url).chat.completions.create(
            model="any", messages=[{"role": "user", "content": f"Question number {i}."}], max_tokens=50)
        with lock:
            replies[i] = r.choices[0].message.content
            finished.append(i)

    threads = []
    try:
        for i in range(3):
            threads.append(threading.Thread(target=ask, args=(i,)))
            threads[-1].start()
            # In before the next one is sent: the first running, the others waiting.
            deadline = time.time() + 10
            while True:
                h = health(server.url)
                if (h["busy"] and h["queued"] == i) or time.time() > deadline:
                    break
                time.sleep(0.01)
            queued.append(h["queued"])
        for t in threads:
            t.join(30)
    finally:
        gen.token_delay = 0.0
        gen.scripts = []
    assert queued == [0, 1, 2]
    assert finished == [0, 1, 2]
    assert replies == {0: "first reply", 1: "second reply", 2: "third reply"}


def test_disconnect_during_a_slow_prefill_cancels_it(server, gen):
    gen.prefill_delay = 0.3
    text = "A long prompt the client gives up on while it is prefilled. " * 10  # ten prefill chunks
    try:
        before = health(server.url)["stats"]["cancelled"]
        u = urllib.parse.urlsplit(server.url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        conn.request("POST", "/v1/messages", body=json.dumps({
            "model": "any", "max_tokens": 5, "stream": True,
            "messages": [{"role": "user", "content": text}]}).encode(), headers={"content-type": "application/json"})
        r = conn.getresponse()
        assert r.readline().decode().strip() == "event: message_start"  # the job has started
        conn.close()
        deadline = time.time() + 15
        while time.time() < deadline and health(server.url)["stats"]["cancelled"] == before:
            time.sleep(0.05)
        h = health(server.url)
    finally:
        gen.prefill_delay = 0.0
    last = h["last"]
    assert h["stats"]["cancelled"] == before + 1 and last["finish"] == "cancelled"
    # Stopped between two prefill chunks: nothing generated, most of the prompt not
    # prefilled.
    assert last["completion_tokens"] == 0 and last["prefilled_tokens"] < last["prompt_tokens"] // 2
