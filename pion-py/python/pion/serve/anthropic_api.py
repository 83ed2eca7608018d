"""Anthropic's Messages API (``/v1/messages``, ``/v1/messages/count_tokens``), in its
own JSON, events and errors — what Claude Code and the ``anthropic`` SDK speak.

``system`` (a string, or text blocks with or without ``cache_control``; Claude Code's
per-request billing line is removed, see :mod:`pion.serve.chat`) and ``messages``
(text, ``tool_use``, ``tool_result`` and ``thinking`` blocks) become a
:class:`pion.serve.chat.Conversation`. A stream is ``message_start``, then for each
content block ``content_block_start``/``content_block_delta``/``content_block_stop``
(``text_delta``, ``thinking_delta``, ``input_json_delta`` for a ``tool_use``),
``message_delta`` with ``stop_reason`` and the usage, and ``message_stop``, every
event under its ``event:`` line; ``ping`` keeps a stream alive through a long prefill.
Usage reports the cached prefix as ``cache_read_input_tokens`` and the rest as
``input_tokens``, as Anthropic counts them.
"""

from typing import Any, AsyncIterator, Dict, List, Optional

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .app import Service, SSEResponse, WatchedResponse, read_json, sse
from .chat import Conversation, RequestError, strip_volatile, text_of
from .openai_api import stops_from
from .output import Segment, new_id
from .worker import Sampling

__all__ = ["messages", "count_tokens", "conversation_from"]

_STOP = {"length": "max_tokens"}


def _system(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return strip_volatile(value)
    if not isinstance(value, list):
        raise RequestError("system: must be a string or a list of text blocks")
    parts = []
    for block in value:
        if not isinstance(block, dict) or block.get("type") != "text":
            raise RequestError("system: only text blocks are supported")
        text = strip_volatile(str(block.get("text", "")))
        if text:
            parts.append(text)
    return "\n".join(parts)


def _tool_result_text(block: Dict[str, Any], where: str) -> str:
    text = text_of(block.get("content"), f"{where}.content")
    if block.get("is_error"):
        text = "Error: " + text
    return text


def _messages(raw: Any) -> List[Dict[str, Any]]:
    if not isinstance(raw, list) or not raw:
        raise RequestError("messages: must be a non-empty list")
    out: List[Dict[str, Any]] = []
    for i, m in enumerate(raw):
        where = f"messages.{i}"
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise RequestError(f"{where}: role must be \"user\" or \"assistant\"")
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            raise RequestError(f"{where}.content: must be a string or a list of blocks")
        if m["role"] == "user":
            texts = []
            for j, b in enumerate(blocks):
                kind = b.get("type") if isinstance(b, dict) else None
                if kind == "text":
                    texts.append(str(b.get("text", "")))
                elif kind == "tool_result":
                    out.append({"role": "tool", "tool_call_id": b.get("tool_use_id"),
                                "content": _tool_result_text(b, f"{where}.content.{j}")})
                else:
                    raise RequestError(f"{where}.content.{j}: blocks of type {kind!r} are not supported by this "
                                       "server (text and tool_result only)")
            if texts or not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks):
                out.append({"role": "user", "content": "".join(texts)})
            continue
        msg: Dict[str, Any] = {"role": "assistant", "content": ""}
        texts, thinking, calls = [], [], []
        for j, b in enumerate(blocks):
            kind = b.get("type") if isinstance(b, dict) else None
            if kind == "text":
                texts.append(str(b.get("text", "")))
            elif kind == "thinking":
                thinking.append(str(b.get("thinking", "")))
            elif kind == "redacted_thinking":
                continue  # encrypted for another model; nothing a local model can read
            elif kind == "tool_use":
                args = b.get("input", {})
                if not isinstance(args, dict):
                    raise RequestError(f"{where}.content.{j}.input: must be an object")
                calls.append({"type": "function", "id": b.get("id"),
                              "function": {"name": str(b.get("name", "")), "arguments": args}})
            else:
                raise RequestError(f"{where}.content.{j}: blocks of type {kind!r} are not supported by this server")
        msg["content"] = "".join(texts)
        if calls:
            msg["tool_calls"] = calls
        if thinking:
            msg["reasoning_content"] = "".join(thinking)
        out.append(msg)
    return out


def _tools(body: Dict[str, Any]) -> "tuple[Optional[List[Dict[str, Any]]], bool]":
    choice = body.get("tool_choice") or {"type": "auto"}
    if not isinstance(choice, dict) or choice.get("type") not in ("auto", "none"):
        raise RequestError("tool_choice: only {\"type\": \"auto\"} and {\"type\": \"none\"} are supported (a local "
                           "model cannot be forced to call a tool)")
    single = bool(choice.get("disable_parallel_tool_use"))
    tools = body.get("tools")
    if not tools or choice["type"] == "none":
        return None, single
    if not isinstance(tools, list):
        raise RequestError("tools: must be a list")
    out = []
    for i, t in enumerate(tools):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str) or t.get("type") not in (None, "custom"):
            raise RequestError(f"tools.{i}: only client tools (name, description, input_schema) are supported")
        out.append({"type": "function", "function": {
            "name": t["name"], "description": t.get("description", ""),
            "parameters": t.get("input_schema", {"type": "object", "properties": {}})}})
    return out, single


def conversation_from(body: Dict[str, Any]) -> "tuple[Conversation, bool]":
    """A Messages request as a conversation, and whether one tool call at most is
    allowed (``disable_parallel_tool_use``)."""
    messages = _messages(body.get("messages"))
    system = _system(body.get("system"))
    if system:
        messages.insert(0, {"role": "system", "content": system})
    tools, single = _tools(body)
    thinking = body.get("thinking")
    kind = (thinking or {}).get("type") if isinstance(thinking, dict) else None
    if thinking is not None and kind not in ("enabled", "disabled", "adaptive"):
        raise RequestError("thinking.type: must be \"enabled\", \"adaptive\" or \"disabled\"")
    return Conversation(messages, tools, {"enable_thinking": kind in ("enabled", "adaptive")}), single


def _sampling(service: Service, body: Dict[str, Any]) -> Sampling:
    if "max_tokens" not in body:
        raise RequestError("max_tokens: Field required")
    s = Sampling(max_tokens=service.reply_limit(body.get("max_tokens"), "max_tokens"),
                 stop=stops_from(body.get("stop_sequences"), "stop_sequences"))
    for name, lo, hi in (("temperature", 0.0, 1.0), ("top_p", 0.0, 1.0)):
        v = body.get(name)
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
                raise RequestError(f"{name}: must be between {lo} and {hi}")
            setattr(s, name, float(v))
    top_k = body.get("top_k")
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
            raise RequestError("top_k: must be a non-negative integer")
        s.top_k = top_k
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if isinstance(budget, bool) or not isinstance(budget, int):
            raise RequestError("thinking.enabled.budget_tokens: Field required")
        if budget < 1024:
            raise RequestError("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
        if body["max_tokens"] <= budget:
            # As the API checks it: against the request's limit, not the server's cap.
            raise RequestError("`max_tokens` must be greater than `thinking.budget_tokens`")
        s.thinking_budget = budget
    return s


def _usage(prompt: int, cached: int, output: int) -> Dict[str, Any]:
    return {"input_tokens": prompt - cached, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": cached, "output_tokens": output}


def _stop_reason(done: Any, calls: int) -> str:
    if calls:
        return "tool_use"
    if done.stop_sequence is not None:
        return "stop_sequence"
    return _STOP.get(done.reason, "end_turn")


def _block(seg: Segment) -> Dict[str, Any]:
    if seg.kind == "text":
        return {"type": "text", "text": seg.text}
    if seg.kind == "thinking":
        return {"type": "thinking", "thinking": seg.text, "signature": ""}
    import json

    return {"type": "tool_use", "id": new_id("toolu_"), "name": seg.name, "input": json.loads(seg.arguments)}


async def messages(service: Service, request: Request) -> Response:
    """``POST /v1/messages``."""
    body = await read_json(request)
    conv, single = conversation_from(body)
    sampling = _sampling(service, body)
    job, prompt_text = await service.chat_job(conv, sampling)
    tok = service.tokenizer
    mid, model = new_id("msg_"), body.get("model") or service.model_id

    if not body.get("stream"):

        async def make() -> Response:
            out = await service.run(job)
            parser = conv.parser(tok, prompt_text)
            segs = parser.feed(out["text"]) + parser.close()
            content, calls = [], 0
            for s in segs:
                if s.kind == "tool_call":
                    if single and calls:
                        continue
                    calls += 1
                content.append(_block(s))
            done = out["done"]
            return JSONResponse({
                "id": mid, "type": "message", "role": "assistant", "model": model, "content": content,
                "stop_reason": _stop_reason(done, calls), "stop_sequence": done.stop_sequence,
                "usage": _usage(len(job.prompt), out["started"].cached, done.completion_tokens),
            })

        return WatchedResponse(make, job.cancelled.set)

    async def stream() -> AsyncIterator[bytes]:
        parser = conv.parser(tok, prompt_text)
        started, cached, index, calls = False, 0, -1, 0
        open_kind: Optional[str] = None

        def start_message() -> bytes:
            msg = {"id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
                   "stop_reason": None, "stop_sequence": None, "usage": _usage(len(job.prompt), cached, 0)}
            return sse({"type": "message_start", "message": msg}, "message_start")

        def close_block() -> List[bytes]:
            nonlocal open_kind
            if open_kind is None:
                return []
            open_kind = None
            return [sse({"type": "content_block_stop", "index": index}, "content_block_stop")]

        async for ev in service.events(job):
            if ev is None or ev.kind == "started":
                if ev is not None:
                    cached = ev.cached
                if not started:
                    started = True
                    yield start_message()
                if ev is None:
                    yield sse({"type": "ping"}, "ping")
                continue
            if ev.kind == "error":
                if not started:
                    yield start_message()
                yield sse({"type": "error", "error": {"type": "api_error", "message": f"generation failed: {ev.message}"}},
                          "error")
                return
            segs = parser.feed(ev.text) if ev.kind == "text" else parser.close()
            for s in segs:
                if s.kind == "tool_call" and single and calls:
                    continue
                if s.kind != open_kind or s.kind == "tool_call":
                    for b in close_block():
                        yield b
                    index += 1
                    block = _block(s)
                    if s.kind == "text":
                        block["text"] = ""
                    elif s.kind == "thinking":
                        block["thinking"] = ""
                    else:
                        block["input"] = {}
                        calls += 1
                    yield sse({"type": "content_block_start", "index": index, "content_block": block},
                              "content_block_start")
                    open_kind = s.kind
                if s.kind == "text":
                    delta = {"type": "text_delta", "text": s.text}
                elif s.kind == "thinking":
                    delta = {"type": "thinking_delta", "thinking": s.text}
                else:
                    delta = {"type": "input_json_delta", "partial_json": s.arguments}
                yield sse({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta")
            if ev.kind == "done":
                for b in close_block():
                    yield b
                yield sse({"type": "message_delta",
                           "delta": {"stop_reason": _stop_reason(ev, calls), "stop_sequence": ev.stop_sequence},
                           "usage": _usage(len(job.prompt), cached, ev.completion_tokens)}, "message_delta")
                yield sse({"type": "message_stop"}, "message_stop")
                return

    return SSEResponse(stream(), job.cancelled.set)


async def count_tokens(service: Service, request: Request) -> Response:
    """``POST /v1/messages/count_tokens``: the prompt's length in tokens, rendered as
    ``/v1/messages`` would render it."""
    body = await read_json(request)
    conv, _ = conversation_from(body)
    tok = service.tokenizer
    n = await service.render(lambda: len(conv.render(tok)))
    return JSONResponse({"input_tokens": n})
