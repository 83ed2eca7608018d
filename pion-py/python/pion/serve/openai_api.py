"""OpenAI's Chat Completions (``/v1/chat/completions``) and Completions
(``/v1/completions``) APIs, in their own JSON and server-sent events.

Chat messages (``system``/``developer``, ``user``, ``assistant`` with ``tool_calls``,
``tool``) become a :class:`pion.serve.chat.Conversation`; the reply's text, thinking
(``reasoning_content``) and tool calls go out as ``choices[0].message`` or as
``chat.completion.chunk`` deltas (a tool call as a ``tool_calls`` delta with its id
and name, then its arguments). ``usage.prompt_tokens_details.cached_tokens`` is the
part of the prompt the cache supplied; with ``stream_options.include_usage`` a last
chunk with empty ``choices`` carries the usage. Parameters this server cannot honour
(``n`` > 1, ``logprobs``, a forced ``tool_choice``, a JSON ``response_format`` …) are
refused with a 400, never ignored.
"""

import time
from typing import Any, AsyncIterator, Dict, List, Optional

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .app import Service, SSEResponse, WatchedResponse, read_json, sse
from .chat import Conversation, RequestError, parse_arguments, strip_volatile, text_of
from .output import new_id
from .worker import Job, Sampling

__all__ = ["chat_completions", "completions", "sampling_from", "usage"]


def _number(body: Dict[str, Any], name: str, default: float, lo: float, hi: float) -> float:
    v = body.get(name)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
        raise RequestError(f"{name} must be a number between {lo} and {hi}", param=name)
    return float(v)


def stops_from(value: Any, name: str = "stop") -> List[str]:
    """Stop sequences given as a string or a list of strings."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return [s for s in value if s]
    raise RequestError(f"{name} must be a string or a list of strings", param=name)


def sampling_from(service: Service, body: Dict[str, Any], max_name: str = "max_tokens") -> Sampling:
    """Sampling parameters of an OpenAI request (``temperature`` 0: greedy)."""
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise RequestError("seed must be an integer", param="seed")
    requested = body.get("max_completion_tokens", body.get(max_name))
    top_k = body.get("top_k", 0) or 0
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise RequestError("top_k must be a non-negative integer", param="top_k")
    return Sampling(
        temperature=_number(body, "temperature", 1.0, 0.0, 2.0),
        top_p=_number(body, "top_p", 1.0, 0.0, 1.0),
        top_k=top_k,
        min_p=_number(body, "min_p", 0.0, 0.0, 1.0),
        max_tokens=service.reply_limit(requested, max_name),
        stop=stops_from(body.get("stop")),
        seed=seed,
        presence_penalty=_number(body, "presence_penalty", 0.0, -2.0, 2.0),
        frequency_penalty=_number(body, "frequency_penalty", 0.0, -2.0, 2.0),
        repetition_penalty=_number(body, "repetition_penalty", 1.0, 0.0, 10.0),
    )


def refuse_unsupported(body: Dict[str, Any]) -> None:
    """400 for parameters whose meaning this server cannot give."""
    n = body.get("n", 1)
    if n not in (None, 1):
        raise RequestError("n must be 1 (one sequence at a time)", param="n")
    if body.get("logprobs") not in (None, False, 0):
        raise RequestError("logprobs are not supported by this server", param="logprobs")
    if body.get("logit_bias"):
        raise RequestError("logit_bias is not supported by this server", param="logit_bias")
    if body.get("best_of") not in (None, 1):
        raise RequestError("best_of must be 1", param="best_of")
    if body.get("suffix"):
        raise RequestError("suffix is not supported by this server", param="suffix")
    fmt = body.get("response_format")
    if fmt is not None and (not isinstance(fmt, dict) or fmt.get("type") != "text"):
        raise RequestError("response_format: only {\"type\": \"text\"} is supported", param="response_format")
    for name in ("audio", "prediction", "web_search_options"):
        if body.get(name):
            raise RequestError(f"{name} is not supported by this server", param=name)
    modalities = body.get("modalities")
    if modalities not in (None, ["text"]):
        raise RequestError("modalities: only [\"text\"] is supported", param="modalities")


def usage(prompt: int, cached: int, completion: int) -> Dict[str, Any]:
    """Chat/Completions ``usage``."""
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached}}


def tools_from(body: Dict[str, Any]) -> Optional[List[Dict[str, Any]]]:
    """The request's function tools in chat-template form (None: no tools, or
    ``tool_choice`` "none")."""
    tools = body.get("tools")
    choice = body.get("tool_choice")
    if choice not in (None, "auto", "none"):
        raise RequestError("tool_choice: only \"auto\" and \"none\" are supported (a local model cannot be forced "
                           "to call a tool)", param="tool_choice")
    if not tools or choice == "none":
        return None
    if not isinstance(tools, list):
        raise RequestError("tools must be a list", param="tools")
    out = []
    for t in tools:
        if not isinstance(t, dict) or t.get("type") != "function" or not isinstance(t.get("function"), dict):
            raise RequestError("tools: only {\"type\": \"function\", \"function\": {…}} tools are supported", param="tools")
        f = t["function"]
        if not isinstance(f.get("name"), str):
            raise RequestError("tools: a function needs a name", param="tools")
        fn = {"name": f["name"], "description": f.get("description", ""),
              "parameters": f.get("parameters", {"type": "object", "properties": {}})}
        out.append({"type": "function", "function": fn})
    return out


def thinking_kwargs(effort: Any, extra: Any = None) -> Dict[str, Any]:
    """Template switches: thinking on when a reasoning effort other than
    ``none``/``minimal`` is asked for; ``chat_template_kwargs`` added as given."""
    kw: Dict[str, Any] = {}
    if effort is not None:
        if not isinstance(effort, str):
            raise RequestError("reasoning effort must be a string", param="reasoning_effort")
        kw["enable_thinking"] = effort not in ("none", "minimal")
        kw["reasoning_effort"] = effort
    else:
        kw["enable_thinking"] = False
    if extra is not None:
        if not isinstance(extra, dict):
            raise RequestError("chat_template_kwargs must be an object", param="chat_template_kwargs")
        kw.update(extra)
    return kw


def conversation_from(body: Dict[str, Any]) -> Conversation:
    """Chat Completions ``messages`` as a conversation."""
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise RequestError("messages must be a non-empty list", param="messages")
    messages: List[Dict[str, Any]] = []
    for i, m in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise RequestError(f"{where} must be an object", param=where)
        role = m.get("role")
        if role in ("system", "developer"):
            messages.append({"role": "system", "content": strip_volatile(text_of(m.get("content"), where))})
        elif role == "user":
            messages.append({"role": "user", "content": text_of(m.get("content"), where)})
        elif role == "assistant":
            msg: Dict[str, Any] = {"role": "assistant",
                                   "content": text_of(m.get("content"), where, ("text", "refusal"))}
            calls = m.get("tool_calls") or []
            if calls:
                msg["tool_calls"] = []
                for c in calls:
                    f = (c or {}).get("function") or {}
                    msg["tool_calls"].append({"type": "function", "id": c.get("id"), "function": {
                        "name": f.get("name", ""), "arguments": parse_arguments(f.get("arguments"), where)}})
            reasoning = m.get("reasoning_content", m.get("reasoning"))
            if reasoning:
                msg["reasoning_content"] = str(reasoning)
            messages.append(msg)
        elif role == "tool":
            messages.append({"role": "tool", "content": text_of(m.get("content"), where),
                             "tool_call_id": m.get("tool_call_id")})
        else:
            raise RequestError(f"{where}: role {role!r} is not supported", param=where)
    kw = thinking_kwargs(body.get("reasoning_effort"), body.get("chat_template_kwargs"))
    return Conversation(messages, tools_from(body), kw)


# ---- /v1/chat/completions ------------------------------------------------------------


async def chat_completions(service: Service, request: Request) -> Response:
    """``POST /v1/chat/completions``."""
    body = await read_json(request)
    refuse_unsupported(body)
    conv = conversation_from(body)
    sampling = sampling_from(service, body)
    job, prompt_text = await service.chat_job(conv, sampling)
    tok = service.tokenizer
    cid, created, model = new_id("chatcmpl-"), int(time.time()), body.get("model") or service.model_id
    single_call = body.get("parallel_tool_calls") is False

    if not body.get("stream"):

        async def make() -> Response:
            out = await service.run(job)
            parser = conv.parser(tok, prompt_text)
            segs = parser.feed(out["text"]) + parser.close()
            calls = [s for s in segs if s.kind == "tool_call"][: 1 if single_call else None]
            text = "".join(s.text for s in segs if s.kind == "text")
            thinking = "".join(s.text for s in segs if s.kind == "thinking")
            msg: Dict[str, Any] = {"role": "assistant", "content": text if (text or not calls) else None,
                                   "refusal": None}
            if thinking:
                msg["reasoning_content"] = thinking
            if calls:
                msg["tool_calls"] = [{"id": new_id("call_"), "type": "function",
                                      "function": {"name": c.name, "arguments": c.arguments}} for c in calls]
            done = out["done"]
            finish = "tool_calls" if calls else {"length": "length"}.get(done.reason, "stop")
            return JSONResponse({
                "id": cid, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": finish}],
                "usage": usage(len(job.prompt), out["started"].cached, done.completion_tokens),
                "system_fingerprint": None,
            })

        return WatchedResponse(make, job.cancelled.set)

    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(delta: Dict[str, Any], finish: Optional[str] = None) -> bytes:
        data: Dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                                "system_fingerprint": None,
                                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        if include_usage:
            data["usage"] = None
        return sse(data)

    async def stream() -> AsyncIterator[bytes]:
        parser = conv.parser(tok, prompt_text)
        ncalls, cached = 0, 0
        yield chunk({"role": "assistant", "content": ""})
        async for ev in service.events(job):
            if ev is None:
                yield b": keep-alive\n\n"
                continue
            if ev.kind == "started":
                cached = ev.cached
                continue
            if ev.kind == "error":
                yield sse({"error": {"message": f"generation failed: {ev.message}", "type": "server_error",
                                     "param": None, "code": None}})
                return
            segs = parser.feed(ev.text) if ev.kind == "text" else parser.close()
            for s in segs:
                if s.kind == "text":
                    yield chunk({"content": s.text})
                elif s.kind == "thinking":
                    yield chunk({"reasoning_content": s.text})
                elif not (single_call and ncalls):
                    head = {"index": ncalls, "id": new_id("call_"), "type": "function",
                            "function": {"name": s.name, "arguments": ""}}
                    yield chunk({"tool_calls": [head]})
                    yield chunk({"tool_calls": [{"index": ncalls, "function": {"arguments": s.arguments}}]})
                    ncalls += 1
            if ev.kind == "done":
                finish = "tool_calls" if ncalls else ("length" if ev.reason == "length" else "stop")
                yield chunk({}, finish)
                if include_usage:
                    yield sse({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                               "system_fingerprint": None, "choices": [],
                               "usage": usage(len(job.prompt), cached, ev.completion_tokens)})
                yield b"data: [DONE]\n\n"
                return

    return SSEResponse(stream(), job.cancelled.set)


# ---- /v1/completions -----------------------------------------------------------------


def _prompt_tokens(tok: Any, prompt: Any) -> "tuple[str, List[int]]":
    if isinstance(prompt, list) and len(prompt) == 1:
        prompt = prompt[0]
    if isinstance(prompt, str):
        return prompt, tok.encode(prompt, add_special_tokens=True)
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
        if any(t < 0 or t >= len(tok) for t in prompt):
            raise RequestError("prompt: a token id is outside the vocabulary", param="prompt")
        return tok.decode(prompt), list(prompt)
    raise RequestError("prompt must be a string, one string in a list, or a list of token ids", param="prompt")


async def completions(service: Service, request: Request) -> Response:
    """``POST /v1/completions``: the prompt as given (no chat template)."""
    body = await read_json(request)
    refuse_unsupported(body)
    tok = service.tokenizer
    text, prompt = await service.render(lambda: _prompt_tokens(tok, body.get("prompt")))
    if not prompt:
        raise RequestError("prompt is empty", param="prompt")
    sampling = sampling_from(service, body)
    echo = bool(body.get("echo"))

    def rerender(reply: str) -> List[int]:
        return tok.encode(text + reply, add_special_tokens=True)

    job = Job(prompt, sampling, emit=lambda ev: None, rerender=rerender)
    cid, created, model = new_id("cmpl-"), int(time.time()), body.get("model") or service.model_id

    def choice(t: str, finish: Optional[str]) -> Dict[str, Any]:
        return {"text": t, "index": 0, "logprobs": None, "finish_reason": finish}

    if not body.get("stream"):

        async def make() -> Response:
            out = await service.run(job)
            done = out["done"]
            reply = (text if echo else "") + out["text"]
            return JSONResponse({
                "id": cid, "object": "text_completion", "created": created, "model": model,
                "choices": [choice(reply, "length" if done.reason == "length" else "stop")],
                "usage": usage(len(prompt), out["started"].cached, done.completion_tokens),
                "system_fingerprint": None,
            })

        return WatchedResponse(make, job.cancelled.set)

    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(t: str, finish: Optional[str] = None) -> bytes:
        data = {"id": cid, "object": "text_completion", "created": created, "model": model,
                "choices": [choice(t, finish)], "system_fingerprint": None}
        if include_usage:
            data["usage"] = None
        return sse(data)

    async def stream() -> AsyncIterator[bytes]:
        cached = 0
        if echo:
            yield chunk(text)
        async for ev in service.events(job):
            if ev is None:
                yield b": keep-alive\n\n"
            elif ev.kind == "started":
                cached = ev.cached
            elif ev.kind == "text":
                yield chunk(ev.text)
            elif ev.kind == "error":
                yield sse({"error": {"message": f"generation failed: {ev.message}", "type": "server_error",
                                     "param": None, "code": None}})
                return
            elif ev.kind == "done":
                yield chunk("", "length" if ev.reason == "length" else "stop")
                if include_usage:
                    yield sse({"id": cid, "object": "text_completion", "created": created, "model": model,
                               "choices": [], "usage": usage(len(prompt), cached, ev.completion_tokens)})
                yield b"data: [DONE]\n\n"
                return

    return SSEResponse(stream(), job.cancelled.set)
